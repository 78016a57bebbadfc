//! The checked-in C header, `include/ubt.h`, is what cbindgen makes from
//! the crate's sources with `cbindgen.toml`. Regenerated in memory; with
//! `UBT_BLESS=1` the test writes it instead of comparing.

// Test code: a failed unwrap is a failed test, and casts narrow test data.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::cast_possible_truncation
)]

use std::path::Path;

/// The header cbindgen makes now.
fn generate() -> Vec<u8> {
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let config = cbindgen::Config::from_file(crate_dir.join("cbindgen.toml")).unwrap();
    let bindings = cbindgen::Builder::new()
        .with_config(config)
        .with_src(crate_dir.join("src/lib.rs"))
        .generate()
        .expect("cbindgen fails on the crate's sources");
    let mut header = Vec::new();
    bindings.write(&mut header);
    header
}

#[test]
fn the_checked_in_header_is_up_to_date() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("include/ubt.h");
    let generated = generate();
    if std::env::var_os("UBT_BLESS").is_some_and(|v| v == "1") {
        std::fs::write(&path, &generated).unwrap();
        eprintln!("wrote {}", path.display());
        return;
    }
    let checked_in = std::fs::read(&path).unwrap_or_default();
    if checked_in != generated {
        let first_difference = checked_in
            .split(|&b| b == b'\n')
            .zip(generated.split(|&b| b == b'\n'))
            .position(|(old, new)| old != new)
            .map_or_else(
                || "at the end".to_owned(),
                |line| format!("at line {}", line + 1),
            );
        panic!(
            "{} is out of date (first difference {first_difference}); regenerate it with\n    \
             UBT_BLESS=1 cargo test -p ubt-ffi --test header",
            path.display()
        );
    }
}

#[test]
fn the_header_declares_every_entry_point() {
    let header = String::from_utf8(generate()).unwrap();
    for function in [
        "ubt_abi_version",
        "ubt_status_name",
        "ubt_last_error_message",
        "ubt_options_default",
        "ubt_bytes_free",
        "ubt_db_open",
        "ubt_db_open_read_only",
        "ubt_db_close",
        "ubt_db_apply",
        "ubt_db_apply_accounts",
        "ubt_db_persist",
        "ubt_db_commit",
        "ubt_db_revert",
        "ubt_db_checkpoint",
        "ubt_db_root",
        "ubt_db_committed_root",
        "ubt_db_stats",
        "ubt_db_get",
        "ubt_db_get_many",
        "ubt_db_account",
        "ubt_db_storage",
        "ubt_db_code",
        "ubt_db_prove",
        "ubt_db_reader",
        "ubt_reader_close",
        "ubt_reader_root",
        "ubt_reader_get",
        "ubt_reader_get_many",
        "ubt_reader_account",
        "ubt_reader_storage",
        "ubt_reader_code",
        "ubt_reader_prove",
        "ubt_verify_proof",
    ] {
        assert!(
            header.contains(&format!(" {function}(")) || header.contains(&format!("*{function}(")),
            "{function} is not declared"
        );
    }
    for constant in ["UBT_OK 0", "UBT_ERR_INTERNAL 22", "UBT_OP_DELETE_ACCOUNT 5"] {
        assert!(
            header.contains(&format!("#define {constant}")),
            "{constant}"
        );
    }
}
