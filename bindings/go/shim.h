/*
 * The C side of package ubt: one wrapper per status-returning function of
 * ubt.h. Each wrapper calls the function and, when it fails, copies the
 * calling thread's last error message into a malloc'd buffer in the same
 * call, so the message read is the one of this call whatever OS thread
 * the goroutine runs on next. The Go side frees the buffer.
 */
#ifndef UBTGO_SHIM_H
#define UBTGO_SHIM_H

#include <stddef.h>
#include <stdint.h>

#include "ubt.h"

/* A status and, when it is not UBT_OK, the library's message (malloc'd,
 * msg_len bytes plus a NUL; msg is NULL if the copy could not be made). */
typedef struct ubtgo_status {
    int32_t code;
    char *msg;
    size_t msg_len;
} ubtgo_status;

ubtgo_status ubtgo_options_default(UbtOptions *out);
ubtgo_status ubtgo_db_open(const char *path, const UbtOptions *options, uint64_t *db_out);
ubtgo_status ubtgo_db_open_read_only(const char *path, const UbtOptions *options, uint64_t *db_out);
ubtgo_status ubtgo_db_close(uint64_t db);
ubtgo_status ubtgo_db_apply(uint64_t db, const UbtWrite *writes, size_t n, UbtBytes32 *root_out);
ubtgo_status ubtgo_db_apply_accounts(uint64_t db, const UbtAccountOp *ops, size_t n,
                                     const uint8_t *code, size_t code_len, UbtBytes32 *root_out);
ubtgo_status ubtgo_db_persist(uint64_t db, const UbtBytes32 *root);
ubtgo_status ubtgo_db_commit(uint64_t db, UbtBytes32 *root_out);
ubtgo_status ubtgo_db_revert(uint64_t db, const UbtBytes32 *root);
ubtgo_status ubtgo_db_checkpoint(uint64_t db);
ubtgo_status ubtgo_db_root(uint64_t db, UbtBytes32 *root_out);
ubtgo_status ubtgo_db_committed_root(uint64_t db, UbtBytes32 *root_out);
ubtgo_status ubtgo_db_stats(uint64_t db, UbtStats *out);
ubtgo_status ubtgo_db_reader(uint64_t db, const UbtBytes32 *root, uint64_t *reader_out);

/* Reads: is_reader 0 calls the ubt_db_* function, 1 the ubt_reader_* one. */
ubtgo_status ubtgo_get(int is_reader, uint64_t h, const UbtBytes32 *key, UbtBytes32 *value,
                       uint8_t *found);
ubtgo_status ubtgo_get_many(int is_reader, uint64_t h, const UbtBytes32 *keys, size_t n,
                            UbtBytes32 *values, uint8_t *found);
ubtgo_status ubtgo_account(int is_reader, uint64_t h, const UbtAddress *address,
                           UbtAccount *account, uint8_t *found);
ubtgo_status ubtgo_storage(int is_reader, uint64_t h, const UbtAddress *address,
                           const UbtBytes32 *slot, UbtBytes32 *value, uint8_t *found);
ubtgo_status ubtgo_code(int is_reader, uint64_t h, const UbtAddress *address, UbtBytes *code,
                        uint8_t *found);
ubtgo_status ubtgo_prove(int is_reader, uint64_t h, const UbtBytes32 *keys, size_t n,
                         UbtBytes *proof);

ubtgo_status ubtgo_reader_close(uint64_t reader);
ubtgo_status ubtgo_reader_root(uint64_t reader, UbtBytes32 *root_out);
ubtgo_status ubtgo_verify_proof(const uint8_t *proof, size_t proof_len, const UbtBytes32 *root,
                                const UbtBytes32 *keys, size_t n, UbtBytes32 *values,
                                uint8_t *found);
ubtgo_status ubtgo_bytes_free(UbtBytes *bytes);

#endif
