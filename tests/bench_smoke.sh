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
grep -q "^attention fwd" "$out/table.txt" || { echo "bench all ran no transformer benchmark"; exit 1; }

# PyTorch beside halftape (CPU only: the CPU baseline is what every machine can run).
if [[ $device == cpu ]]; then
  "$binary" bench train --device cpu --quick --repeats 3 --warmup 1 --json "$out/side.json" \
    --pytorch "/usr/bin/python3 $(dirname "$0")/../scripts/pytorch_baseline.py --threads 1" >"$out/side.txt"
  /usr/bin/python3 "$(dirname "$0")/../scripts/bench_report.py" --validate "$out/side.json"
  rows=$(grep -c "^train step .* fp32 .*x$" "$out/side.txt" || true)
  [[ $rows -ge 2 ]] || { echo "side-by-side table has $rows rows, expected both models"; cat "$out/side.txt"; exit 1; }
fi
