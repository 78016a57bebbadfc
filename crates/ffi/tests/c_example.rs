//! The C example (`examples/c/example.c`) compiles against the checked-in
//! header and the library cargo built with this test (the static library
//! next to the test executable, else the shared one), with warnings as
//! errors, and runs to "ok": it opens a database, applies blocks, reads
//! back, reads a snapshot, proves and verifies, meets errors and closes,
//! checking each result itself. Without a C compiler (`cc`, or `$CC`) the
//! test prints SKIP and passes.

// Test code: a failed unwrap is a failed test, and casts narrow test data.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::cast_possible_truncation
)]

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::TempDir;

/// The C compiler: `$CC`, else `cc`; `None` if it does not run.
fn compiler() -> Option<String> {
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".to_owned());
    let runs = Command::new(&cc)
        .arg("--version")
        .output()
        .is_ok_and(|output| output.status.success());
    runs.then_some(cc)
}

/// The library to link: `libubt_ffi.a` (else `.so`) next to this test
/// executable (`target/<profile>/deps`, where `cargo test` builds it), else
/// in the profile directory above (where `cargo build` puts it).
fn library() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let deps = exe.parent().unwrap();
    let profile = deps.parent().unwrap();
    for name in ["libubt_ffi.a", "libubt_ffi.so"] {
        for dir in [deps, profile] {
            let path = dir.join(name);
            if path.is_file() {
                return path;
            }
        }
    }
    panic!(
        "no libubt_ffi.a or libubt_ffi.so in {} or {}: cargo builds them with the tests \
         (crate-type staticlib and cdylib)",
        profile.display(),
        deps.display()
    );
}

/// Compiles the example into `out`, linked against `library`.
fn compile(cc: &str, library: &Path, out: &Path) {
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut command = Command::new(cc);
    command
        .args(["-std=c11", "-Wall", "-Wextra", "-Werror", "-pedantic"])
        .arg("-I")
        .arg(crate_dir.join("include"))
        .arg(crate_dir.join("examples/c/example.c"))
        .arg(library);
    if library.extension().is_some_and(|ext| ext == "so") {
        let dir = library.parent().unwrap();
        command.arg(format!("-Wl,-rpath,{}", dir.display()));
    } else {
        // What Rust's standard library needs from the system (rustc
        // --print native-static-libs, for Linux with glibc).
        command.args([
            "-lgcc_s",
            "-lutil",
            "-lrt",
            "-lpthread",
            "-lm",
            "-ldl",
            "-lc",
        ]);
    }
    let output = command.arg("-o").arg(out).output().unwrap();
    assert!(
        output.status.success(),
        "compiling the C example failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

#[test]
fn the_c_example_builds_and_runs() {
    let Some(cc) = compiler() else {
        println!("SKIP the_c_example_builds_and_runs: no C compiler (cc or $CC) found");
        return;
    };
    let work = TempDir::new("c-example");
    let exe = work.0.join("example");
    let library = library();
    println!("linking {} with {cc}", library.display());
    compile(&cc, &library, &exe);
    let db_dir = work.0.join("db");
    let output = Command::new(&exe).arg(&db_dir).output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "the C example failed ({}):\nstdout:\n{stdout}\nstderr:\n{stderr}",
        output.status
    );
    assert_eq!(stdout.lines().last(), Some("ok"), "stdout:\n{stdout}");
    // The expected errors were reported with their codes and messages.
    assert!(
        stderr.contains("UBT_ERR_PROOF_REJECTED (19): proof rejected"),
        "{stderr}"
    );
    assert!(
        stderr.contains("UBT_ERR_UNKNOWN_ROOT (14): no block with root"),
        "{stderr}"
    );
    // And the database it made is on disk.
    assert!(db_dir.join(ubt_engine::META_FILE).is_file());
}
