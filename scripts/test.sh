#!/usr/bin/env bash
# Installs the dependencies, builds, and runs every test: unit, kernel (on the SIMT emulator),
# CLI and mpiexec tests; then the same CPU and emulator tests once more in an ASan + UBSan
# build (without nvcc: the emulator runs the same kernel source; the long accuracy runs, label
# "slow", the extra emulator schedules, the 4-rank run, the mismatched-ranks audit, the wide wgmma shapes and the
# emulator's benchmark smoke test run in the first pass only); then the kernel tests under
# ThreadSanitizer (the racecheck, docs/emulator.md); then the libFuzzer targets (IDX,
# safetensors, checkpoints, the command line) for 15 s each. Each stage prints its time.
#   HALFTAPE_JOBS=N          parallelism (default: all cores)
#   HALFTAPE_NO_SANITIZE=1   skip the sanitizer pass and the fuzzers (quicker local runs)
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=${HALFTAPE_JOBS:-$(nproc)}

# Runs one stage and prints how long it took (CI must stay under 30 minutes on 2 cores).
start=$SECONDS
stage() {
  local name=$1 t0=$SECONDS
  shift
  "$@"
  echo "test.sh: stage '$name' took $((SECONDS - t0)) s (total $((SECONDS - start)) s)"
}

quiet() { "$@" >/dev/null; }  # a stage whose output says nothing new (its time still prints)
stage setup scripts/setup.sh

# The compiler cache's hits and misses during this run (cmake/ccache.cmake): a warm cache makes
# the three builds below mostly hits.
ccache_counts() {
  ccache --print-stats 2>/dev/null | awk '$1 ~ /^(direct|preprocessed)_cache_hit$/ {h += $2}
                                          $1 == "cache_miss" {m += $2} END {print h + 0, m + 0}'
}
read -r hits0 misses0 < <(ccache_counts)
report_ccache() {
  local hits misses
  read -r hits misses < <(ccache_counts)
  hits=$((hits - hits0)) misses=$((misses - misses0))
  echo "test.sh: compiler cache: $hits hits, $misses misses ($(( (hits + misses) ? 100 * hits / (hits + misses) : 0 ))% hit rate)"
}
stage build scripts/build.sh
stage tests ctest --test-dir build --output-on-failure -j "$jobs"

if [[ -z "${HALFTAPE_NO_SANITIZE:-}" ]]; then
  # -O1 and line tables only: the sanitizer build compiles everything once more, so keep it quick.
  stage sanitize-configure quiet cmake -S . -B build-sanitize -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
        "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1" -DHALFTAPE_SANITIZE=ON
  stage sanitize-build ninja -C build-sanitize -j "$jobs"
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    stage sanitize-tests ctest --test-dir build-sanitize --output-on-failure -j "$jobs" -LE slow \
          -E "simt schedule|mpi 4 ranks|bench smoke: simt|audit: ranks|hopper: training|hopper wide|train --comm nccl over"  # siblings run the same code here
  # The racecheck: the kernel tests again under ThreadSanitizer, every GPU thread a fiber
  # (simt/racecheck.h); only the kernel test binary is built.
  stage racecheck-configure quiet cmake -S . -B build-racecheck -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
        "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1" -DHALFTAPE_RACECHECK=ON
  stage racecheck-build ninja -C build-racecheck -j "$jobs" tests/halftape_racecheck_tests
  stage racecheck-tests ctest --test-dir build-racecheck --output-on-failure -j "$jobs"
  stage fuzz tests/fuzz/run.sh 15
fi
report_ccache
echo "test.sh: all tests passed in $((SECONDS - start)) s"
