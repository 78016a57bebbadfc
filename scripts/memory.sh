#!/usr/bin/env bash
# Peak memory (RSS) of the CLI on the shapes the adversarial review
# measured: `ubt get` (and `root --db`) after eight 1M-write loads, a
# 4M-write load into an existing database, `ubt root --input` of 5M
# entries. Prints one Markdown table row per measurement.
#
#   scripts/memory.sh [UBT_BINARY] [WORK_DIR]
#
# Needs GNU time (/usr/bin/time) and python3; writes ~1.5 GB of input and
# databases into WORK_DIR (default: a temporary directory, removed after).
set -euo pipefail
ubt="${1:-target/bench/ubt}"
work="${2:-$(mktemp -d)}"
cleanup() { [ -z "${2:-}" ] && rm -rf "$work"; }
trap cleanup EXIT
mkdir -p "$work"

# N random key/value JSON lines, deterministic per seed.
gen() {
  python3 - "$1" "$2" <<'EOF'
import random, sys
n, seed = int(sys.argv[1]), int(sys.argv[2])
rng = random.Random(seed)
out = sys.stdout
for _ in range(n):
    out.write('{"key":"0x%064x","value":"0x%064x"}\n' % (rng.getrandbits(256), rng.getrandbits(256)))
EOF
}

# Runs a command under GNU time; prints "peak_rss_mib elapsed_s".
measure() {
  /usr/bin/time -f "%M %e" -o "$work/time.txt" "$@" > /dev/null
  awk '{ printf "%.0f %.2f\n", $1 / 1024, $2 }' "$work/time.txt"
}

row() { printf '| %s | %s | %s MiB | %s s |\n' "$1" "$2" "${3%% *}" "${3##* }"; }

echo "| what | command | peak RSS | time |"
echo "|---|---|---:|---:|"
for i in 1 2 3 4 5 6 7 8; do
  gen 1000000 "$i" > "$work/load.jsonl"
  r=$(measure "$ubt" load --db "$work/db" --input "$work/load.jsonl")
  row "load $i of 8 (1M writes each)" "ubt load --db D --input 1M.jsonl" "$r"
done
key=$(head -c 75 "$work/load.jsonl" | sed 's/.*"key":"\(0x[0-9a-f]*\)".*/\1/')
row "get after eight 1M-write loads" "ubt get --db D KEY" "$(measure "$ubt" get --db "$work/db" "$key")"
row "root of the database after them" "ubt root --db D" "$(measure "$ubt" root --db "$work/db")"
row "verify after them" "ubt verify --db D" "$(measure "$ubt" verify --db "$work/db")"
gen 4000000 9 > "$work/load4m.jsonl"
row "4M-write load into the 8M database" "ubt load --db D --input 4M.jsonl" \
  "$(measure "$ubt" load --db "$work/db" --input "$work/load4m.jsonl")"
rm -f "$work/load4m.jsonl" "$work/load.jsonl"
gen 5000000 10 > "$work/root5m.jsonl"
row "root of 5M entries" "ubt root --input 5M.jsonl" "$(measure "$ubt" root --input "$work/root5m.jsonl")"
