//! The Go bindings' tests (`bindings/go`: package `ubt` and the
//! go-ethereum adapter `gethstate`), and the go-ethereum peer's with its
//! `geth-ubt` engine (`peers/geth`, `go test -tags ubt ./...`), run
//! against the static library cargo built with this test, copied to
//! `bindings/go/lib/libubt_ffi.a` where the module's cgo directives look
//! for it (`bindings/go/build.sh` puts a release build there; this test
//! replaces it with the library of the current sources). Without Go on the
//! PATH the test prints SKIP and passes: the Go tests need Go 1.25 or later
//! and go-ethereum v1.17.10 in the module cache (or network access).

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::Command;

/// `go version`'s output, or `None` when Go does not run.
fn go_version() -> Option<String> {
    let output = Command::new("go").arg("version").output().ok()?;
    output
        .status
        .success()
        .then(|| String::from_utf8_lossy(&output.stdout).trim().to_owned())
}

/// The static library cargo built with the tests: next to this test
/// executable (`target/<profile>/deps`) or in the profile directory.
fn static_library() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let deps = exe.parent().unwrap();
    let profile = deps.parent().unwrap();
    [deps, profile]
        .iter()
        .map(|dir| dir.join("libubt_ffi.a"))
        .find(|path| path.is_file())
        .unwrap_or_else(|| {
            panic!(
                "no libubt_ffi.a in {} or {}: cargo builds it with the tests (crate-type staticlib)",
                deps.display(),
                profile.display()
            )
        })
}

/// Copies `library` to `module/lib/libubt_ffi.a` through a temporary file
/// named after the test (`caller`), so a concurrent `go build` never links
/// a half-written archive and two tests never share a temporary file.
fn install_library(library: &Path, module: &Path, caller: &str) {
    let lib_dir = module.join("lib");
    std::fs::create_dir_all(&lib_dir).unwrap();
    let partial = lib_dir.join(format!("libubt_ffi.a.{}.{caller}", std::process::id()));
    std::fs::copy(library, &partial).unwrap();
    std::fs::rename(&partial, lib_dir.join("libubt_ffi.a")).unwrap();
}

/// Runs `go test -count=1 <extra args> ./...` in `dir` (relative to the
/// repository) against the library of this build; SKIP without Go.
fn go_test(name: &str, dir: &str, extra: &[&str]) {
    let Some(version) = go_version() else {
        eprintln!(
            "SKIP {name}: `go` is not on the PATH, so the Go tests in {dir} did not run; install \
             Go 1.25+ and run `cargo test -p ubt-ffi --test go_bindings`, or \
             `cd bindings/go && ./build.sh && go test ./...`"
        );
        return;
    };
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    install_library(&static_library(), &root.join("bindings/go"), name);
    let module = root.join(dir);
    let output = Command::new("go")
        .args(["test", "-count=1"])
        .args(extra)
        .arg("./...")
        .current_dir(&module)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "go test {extra:?} ./... in {} failed ({version}):\n{stdout}\n{stderr}",
        module.display()
    );
    eprintln!("{version}: go test {extra:?} ./... in {dir}:\n{stdout}");
}

#[test]
fn go_bindings_tests_pass() {
    go_test("go_bindings_tests_pass", "bindings/go", &[]);
}

#[test]
fn geth_peer_tests_pass_with_ubt() {
    go_test(
        "geth_peer_tests_pass_with_ubt",
        "peers/geth",
        &["-tags", "ubt"],
    );
}
