#!/usr/bin/env bash
# Builds the libFuzzer targets (clang, ASan, UBSan) and runs each for a bounded time on the
# corpus kept here (copied, so the run does not change the repository). Any crash, leak,
# sanitizer report or hang (over 10 s on one input) fails.
#   tests/fuzz/run.sh [SECONDS_PER_TARGET]   (default 45)
set -euo pipefail
cd "$(dirname "$0")"
seconds=${1:-45}
here=$PWD
build=${HALFTAPE_FUZZ_BUILD:-$here/../../build-fuzz}
# Quiet unless the build fails; then its output says why.
if ! out=$(CC=clang CXX=clang++ cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo 2>&1 &&
           ninja -C "$build" 2>&1); then
  echo "$out" | tail -40
  echo "FAIL fuzz: the fuzz targets do not build"
  exit 1
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
jobs=${HALFTAPE_JOBS:-$(nproc)}
run_one() {
  local target=$1 corpus=$2
  mkdir -p "$work/$target"
  cp -r "$here/corpus/$corpus/." "$work/$target/"
  if "$build/$target" "$work/$target" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
       -artifact_prefix="$work/$target-" >"$work/$target.log" 2>&1; then
    echo "ok   $target: $(grep -Eo 'stat::number_of_executed_units: [0-9]+|#[0-9]+.*DONE.*' "$work/$target.log" | tail -1)"
  else
    echo "FAIL $target"; tail -40 "$work/$target.log"; return 1
  fi
}
status=0
pids=()
for pair in fuzz_idx:idx fuzz_safetensors:safetensors fuzz_checkpoint:checkpoint fuzz_cli:cli; do
  run_one "${pair%%:*}" "${pair##*:}" &
  pids+=($!)
  if (( ${#pids[@]} >= jobs )); then wait "${pids[0]}" || status=1; pids=("${pids[@]:1}"); fi
done
for p in "${pids[@]}"; do wait "$p" || status=1; done
exit $status
