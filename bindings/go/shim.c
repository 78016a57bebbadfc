#include <stdlib.h>

#include "shim.h"

/* The status of a call just made on this thread, with its message. */
static ubtgo_status status_of(int32_t code) {
    ubtgo_status s = {code, NULL, 0};
    if (code == UBT_OK) {
        return s;
    }
    size_t len = 0;
    ubt_last_error_message(NULL, 0, &len);
    char *buf = malloc(len + 1);
    if (buf == NULL) {
        return s;
    }
    size_t full = 0;
    ubt_last_error_message(buf, len + 1, &full);
    s.msg = buf;
    s.msg_len = full < len ? full : len;
    return s;
}

ubtgo_status ubtgo_options_default(UbtOptions *out) {
    return status_of(ubt_options_default(out));
}

ubtgo_status ubtgo_db_open(const char *path, const UbtOptions *options, uint64_t *db_out) {
    return status_of(ubt_db_open(path, options, db_out));
}

ubtgo_status ubtgo_db_open_read_only(const char *path, const UbtOptions *options,
                                     uint64_t *db_out) {
    return status_of(ubt_db_open_read_only(path, options, db_out));
}

ubtgo_status ubtgo_db_close(uint64_t db) { return status_of(ubt_db_close(db)); }

ubtgo_status ubtgo_db_apply(uint64_t db, const UbtWrite *writes, size_t n, UbtBytes32 *root_out) {
    return status_of(ubt_db_apply(db, writes, n, root_out));
}

ubtgo_status ubtgo_db_apply_accounts(uint64_t db, const UbtAccountOp *ops, size_t n,
                                     const uint8_t *code, size_t code_len, UbtBytes32 *root_out) {
    return status_of(ubt_db_apply_accounts(db, ops, n, code, code_len, root_out));
}

ubtgo_status ubtgo_db_persist(uint64_t db, const UbtBytes32 *root) {
    return status_of(ubt_db_persist(db, root));
}

ubtgo_status ubtgo_db_commit(uint64_t db, UbtBytes32 *root_out) {
    return status_of(ubt_db_commit(db, root_out));
}

ubtgo_status ubtgo_db_revert(uint64_t db, const UbtBytes32 *root) {
    return status_of(ubt_db_revert(db, root));
}

ubtgo_status ubtgo_db_checkpoint(uint64_t db) { return status_of(ubt_db_checkpoint(db)); }

ubtgo_status ubtgo_db_root(uint64_t db, UbtBytes32 *root_out) {
    return status_of(ubt_db_root(db, root_out));
}

ubtgo_status ubtgo_db_committed_root(uint64_t db, UbtBytes32 *root_out) {
    return status_of(ubt_db_committed_root(db, root_out));
}

ubtgo_status ubtgo_db_stats(uint64_t db, UbtStats *out) { return status_of(ubt_db_stats(db, out)); }

ubtgo_status ubtgo_db_reader(uint64_t db, const UbtBytes32 *root, uint64_t *reader_out) {
    return status_of(ubt_db_reader(db, root, reader_out));
}

ubtgo_status ubtgo_get(int is_reader, uint64_t h, const UbtBytes32 *key, UbtBytes32 *value,
                       uint8_t *found) {
    return status_of(is_reader ? ubt_reader_get(h, key, value, found)
                               : ubt_db_get(h, key, value, found));
}

ubtgo_status ubtgo_get_many(int is_reader, uint64_t h, const UbtBytes32 *keys, size_t n,
                            UbtBytes32 *values, uint8_t *found) {
    return status_of(is_reader ? ubt_reader_get_many(h, keys, n, values, found)
                               : ubt_db_get_many(h, keys, n, values, found));
}

ubtgo_status ubtgo_account(int is_reader, uint64_t h, const UbtAddress *address,
                           UbtAccount *account, uint8_t *found) {
    return status_of(is_reader ? ubt_reader_account(h, address, account, found)
                               : ubt_db_account(h, address, account, found));
}

ubtgo_status ubtgo_storage(int is_reader, uint64_t h, const UbtAddress *address,
                           const UbtBytes32 *slot, UbtBytes32 *value, uint8_t *found) {
    return status_of(is_reader ? ubt_reader_storage(h, address, slot, value, found)
                               : ubt_db_storage(h, address, slot, value, found));
}

ubtgo_status ubtgo_code(int is_reader, uint64_t h, const UbtAddress *address, UbtBytes *code,
                        uint8_t *found) {
    return status_of(is_reader ? ubt_reader_code(h, address, code, found)
                               : ubt_db_code(h, address, code, found));
}

ubtgo_status ubtgo_prove(int is_reader, uint64_t h, const UbtBytes32 *keys, size_t n,
                         UbtBytes *proof) {
    return status_of(is_reader ? ubt_reader_prove(h, keys, n, proof)
                               : ubt_db_prove(h, keys, n, proof));
}

ubtgo_status ubtgo_reader_close(uint64_t reader) { return status_of(ubt_reader_close(reader)); }

ubtgo_status ubtgo_reader_root(uint64_t reader, UbtBytes32 *root_out) {
    return status_of(ubt_reader_root(reader, root_out));
}

ubtgo_status ubtgo_verify_proof(const uint8_t *proof, size_t proof_len, const UbtBytes32 *root,
                                const UbtBytes32 *keys, size_t n, UbtBytes32 *values,
                                uint8_t *found) {
    return status_of(ubt_verify_proof(proof, proof_len, root, keys, n, values, found));
}

ubtgo_status ubtgo_bytes_free(UbtBytes *bytes) { return status_of(ubt_bytes_free(bytes)); }
