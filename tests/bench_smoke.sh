#!/usr/bin/env bash
# Every benchmark at tiny sizes on one device; its JSON must validate against bench/schema.json.
#   tests/bench_smoke.sh HALFTAPE_BINARY DEVICE
set -euo pipefail
binary=$1 device=$2
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
"$binary" bench all --device "$device" --quick --repeats 3 --warmup 1 --json "$out/bench.json" >"$out/table.txt"
/usr/bin/python3 "$(dirname "$0")/../scripts/bench_report.py" --validate "$out/bench.json"
/usr/bin/python3 "$(dirname "$0")/../scripts/bench_report.py" "$out/bench.json" --markdown "$out/report.md" --plots "$out"
test -s "$out/report.md"
