/*
 * A tour of the ubt C ABI: open a database in the directory given as the
 * first argument, apply blocks (tree-key and account-level writes), read
 * them back, read a snapshot, prove and verify keys, meet an error or two,
 * close, reopen read-only. Prints "ok" and exits 0 when every check holds.
 *
 * Build (from crates/ffi, after `cargo build -p ubt-ffi`):
 *   cc -std=c11 -I include examples/c/example.c ../../target/debug/libubt_ffi.a \
 *      -lgcc_s -lutil -lrt -lpthread -lm -ldl -lc -o example
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ubt.h"

/* Prints what failed, with the status name and the last error message. */
static void report(const char *what, int32_t status) {
    char message[512];
    size_t len = 0;
    ubt_last_error_message(message, sizeof message, &len);
    fprintf(stderr, "%s: %s (%d): %s\n", what, ubt_status_name(status), (int)status, message);
}

/* Runs a call that must succeed; returns 1 from main if it does not. */
#define CHECK(call)                                                                                \
    do {                                                                                           \
        int32_t status_ = (call);                                                                  \
        if (status_ != UBT_OK) {                                                                   \
            report(#call, status_);                                                                \
            return 1;                                                                              \
        }                                                                                          \
    } while (0)

/* Returns 1 from main with a message unless `condition` holds. */
#define EXPECT(condition)                                                                          \
    do {                                                                                           \
        if (!(condition)) {                                                                        \
            fprintf(stderr, "%s:%d: expected %s\n", __FILE__, __LINE__, #condition);               \
            return 1;                                                                              \
        }                                                                                          \
    } while (0)

/* 32 bytes of `fill`. */
static UbtBytes32 word(uint8_t fill) {
    UbtBytes32 w;
    memset(w.bytes, fill, sizeof w.bytes);
    return w;
}

static int same(const UbtBytes32 *a, const UbtBytes32 *b) {
    return memcmp(a->bytes, b->bytes, sizeof a->bytes) == 0;
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s DIRECTORY\n", argv[0]);
        return 2;
    }
    const char *path = argv[1];
    EXPECT(ubt_abi_version() == UBT_ABI_VERSION);

    UbtOptions options;
    CHECK(ubt_options_default(&options));
    options.memory_budget_bytes = 16u << 20;
    options.sync_mode = UBT_SYNC_NEVER;
    uint64_t db = 0;
    CHECK(ubt_db_open(path, &options, &db));

    /* Block 1 writes two keys; block 2 overwrites one. Only block 1 is
     * made durable. */
    UbtWrite block1[2] = {{word(0x11), word(0xaa)}, {word(0x22), word(0xbb)}};
    UbtWrite block2[1] = {{word(0x11), word(0xcc)}};
    UbtBytes32 root1, root2;
    CHECK(ubt_db_apply(db, block1, 2, &root1));
    CHECK(ubt_db_apply(db, block2, 1, &root2));
    EXPECT(!same(&root1, &root2));
    CHECK(ubt_db_persist(db, &root1));
    UbtBytes32 committed;
    CHECK(ubt_db_committed_root(db, &committed));
    EXPECT(same(&committed, &root1));

    /* Read back at the tip: two present keys, one absent. */
    UbtBytes32 keys[3] = {word(0x11), word(0x22), word(0x33)};
    UbtBytes32 values[3];
    uint8_t found[3];
    CHECK(ubt_db_get_many(db, keys, 3, values, found));
    UbtBytes32 cc = word(0xcc), bb = word(0xbb), aa = word(0xaa);
    EXPECT(found[0] == 1 && same(&values[0], &cc));
    EXPECT(found[1] == 1 && same(&values[1], &bb));
    EXPECT(found[2] == 0);

    /* A snapshot at block 1 still sees the old value. */
    uint64_t reader = 0;
    CHECK(ubt_db_reader(db, &root1, &reader));
    UbtBytes32 value;
    uint8_t present = 0;
    CHECK(ubt_reader_get(reader, &keys[0], &value, &present));
    EXPECT(present == 1 && same(&value, &aa));

    /* Block 3: an account with code, at the account level. */
    static const uint8_t code[40] = {0x60, 0x01, 0x60, 0x02, 0x01, 0x5b, 0x00};
    UbtAccountOp ops[2];
    memset(ops, 0, sizeof ops);
    ops[0].kind = UBT_OP_SET_ACCOUNT;
    memset(ops[0].address.bytes, 0x42, sizeof ops[0].address.bytes);
    ops[0].account.nonce = 7;
    ops[0].account.balance.bytes[31] = 100;
    ops[0].account.code_size = sizeof code;
    ops[0].account.code_hash = word(0x99);
    ops[1].kind = UBT_OP_SET_CODE;
    ops[1].address = ops[0].address;
    ops[1].code_offset = 0; /* the code is a range of the code buffer */
    ops[1].code_len = sizeof code;
    UbtBytes32 root3;
    CHECK(ubt_db_apply_accounts(db, ops, 2, code, sizeof code, &root3));

    UbtAccount account;
    CHECK(ubt_db_account(db, &ops[0].address, &account, &present));
    EXPECT(present == 1 && account.nonce == 7 && account.balance.bytes[31] == 100);
    EXPECT(account.code_size == sizeof code);
    UbtBytes code_read;
    CHECK(ubt_db_code(db, &ops[0].address, &code_read, &present));
    EXPECT(present == 1 && code_read.len == sizeof code);
    EXPECT(memcmp(code_read.data, code, sizeof code) == 0);
    CHECK(ubt_bytes_free(&code_read));
    EXPECT(code_read.data == NULL && code_read.len == 0);

    /* Prove the three keys at the snapshot's root; verify the proof. */
    UbtBytes proof;
    CHECK(ubt_reader_prove(reader, keys, 3, &proof));
    CHECK(ubt_verify_proof(proof.data, proof.len, &root1, keys, 3, values, found));
    EXPECT(found[0] == 1 && same(&values[0], &aa));
    EXPECT(found[1] == 1 && same(&values[1], &bb));
    EXPECT(found[2] == 0);

    /* Error paths: a tampered proof, a root that never was, a null
     * pointer. Each gives its code and a message. */
    uint8_t *tampered = malloc(proof.len);
    EXPECT(tampered != NULL);
    memcpy(tampered, proof.data, proof.len);
    tampered[proof.len - 1] ^= 0x01; /* the last byte of the last value */
    int32_t status = ubt_verify_proof(tampered, proof.len, &root1, keys, 3, values, found);
    EXPECT(status == UBT_ERR_PROOF_REJECTED);
    report("a tampered proof (expected)", status);
    free(tampered);
    CHECK(ubt_bytes_free(&proof));

    UbtBytes32 nowhere = word(0x77);
    status = ubt_db_revert(db, &nowhere);
    EXPECT(status == UBT_ERR_UNKNOWN_ROOT);
    report("revert to an unknown root (expected)", status);
    EXPECT(ubt_db_get(db, NULL, &value, &present) == UBT_ERR_NULL_POINTER);

    /* Commit everything; the statistics agree. */
    CHECK(ubt_db_commit(db, &committed));
    EXPECT(same(&committed, &root3));
    UbtStats stats;
    CHECK(ubt_db_stats(db, &stats));
    EXPECT(same(&stats.root, &root3));
    printf("%llu values in %llu stems, read backend %s\n", (unsigned long long)stats.leaf_count,
           (unsigned long long)stats.stem_count, stats.read_backend);

    CHECK(ubt_reader_close(reader));
    CHECK(ubt_db_close(db));
    /* The handle is gone: closing it again is an error, not a crash. */
    EXPECT(ubt_db_close(db) == UBT_ERR_BAD_HANDLE);

    /* Reopen read-only: the state is there; writes are refused. */
    CHECK(ubt_db_open_read_only(path, NULL, &db));
    UbtBytes32 reopened;
    CHECK(ubt_db_root(db, &reopened));
    EXPECT(same(&reopened, &root3));
    EXPECT(ubt_db_apply(db, block2, 1, &root2) == UBT_ERR_READ_ONLY);
    CHECK(ubt_db_close(db));

    printf("ok\n");
    return 0;
}
