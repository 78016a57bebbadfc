#!/bin/sh
# Builds the Rust library this Go module links: the static library of the
# crate ubt-ffi (cargo build --release), copied to lib/libubt_ffi.a in
# this folder, where the module's cgo directives look for it.
#
# Usage: ./build.sh   (from any directory)
set -eu

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)

if [ ! -f "$root/Cargo.toml" ] || [ ! -f "$root/crates/ffi/include/ubt.h" ]; then
    echo "build.sh: $root does not look like the repository root" >&2
    exit 1
fi

echo "building ubt-ffi (release) in $root"
(cd "$root" && cargo build --release -p ubt-ffi)

lib="$root/target/release/libubt_ffi.a"
if [ ! -f "$lib" ]; then
    echo "build.sh: cargo did not produce $lib" >&2
    exit 1
fi
mkdir -p "$here/lib"
cp "$lib" "$here/lib/libubt_ffi.a.tmp"
mv "$here/lib/libubt_ffi.a.tmp" "$here/lib/libubt_ffi.a"
echo "built:"
ls -l "$here/lib/libubt_ffi.a"
echo "header: $root/crates/ffi/include/ubt.h"
