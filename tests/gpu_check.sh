#!/usr/bin/env bash
# scripts/gpu-check.sh on a machine without a GPU (as CI is): it must end inside its budget and
# leave a report that lists the failed start, the GPU steps not run and the modelled profile; and
# with a step that hangs (the script's test hook), the report still lists every step that finished
# before the deadline, the hung one as stopped, and the rest as not run.
#   tests/gpu_check.sh BUILD_DIR
set -euo pipefail
if nvidia-smi -L >/dev/null 2>&1; then
  echo "gpu_check.sh: skipped: this machine has a GPU (the test is of the path without one)"
  exit 0
fi
build=$(cd "$1" && pwd)
cd "$(dirname "$0")/.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "gpu_check.sh: $*"; echo "--- the report:"; cat "$report" 2>/dev/null; exit 1; }

# 1. No GPU: the start fails, the GPU steps are listed as not run, the model's figures are there.
budget=90
t0=$SECONDS
rc=0
OUT=$work/a scripts/gpu-check.sh --budget $budget --build "$build" >"$work/a.out" 2>&1 || rc=$?
took=$((SECONDS - t0))
report=$work/a/gpu-report.md
((rc != 0)) || fail "exit 0 without a GPU"
((took <= budget + 15)) || fail "took $took s on a budget of $budget s"
[[ -s $report ]] || fail "no report"
grep -q '^| halftape starts on the GPU (and the wgmma self-check passes) | FAIL (exit [0-9]*) |' "$report" ||
  fail "the failed start is not listed"
grep -q '^| halftape bench all --device cuda | not run (halftape cannot use the GPU) | 0 |' "$report" ||
  fail "the benchmark is not listed as not run"
grep -q '^| unit and kernel tests (cuda vs the CPU reference) | not run (halftape cannot use the GPU) |' "$report" ||
  fail "the last step is not listed"
grep -q '^| one training step: every launch MEASURED (CUDA events) beside MODELLED | not run (halftape cannot use the GPU) |' "$report" ||
  fail "the measured step is not listed as not run"
grep -q '^| kernels one at a time: MEASURED (CUDA events) beside MODELLED | not run (halftape cannot use the GPU) |' "$report" ||
  fail "the one-kernel measurements are not listed as not run"
grep -q '^## The performance model (MODELLED), and kernels measured beside it' "$report" || fail "no modelled profile in the report"
grep -q 'one fp16 training step MODELLED at [0-9.]* ms' "$report" || fail "the modelled step time is missing"
grep -q '^| gemm_' "$report" || fail "the modelled kernels' table is missing"

# 2. A step that hangs: stopped at the deadline; what finished before it is listed, and the rest as not run.
budget=20
t0=$SECONDS
rc=0
GPU_CHECK_FAKE_GPU=1 GPU_CHECK_SLOW="halftape profile --gpu h100 (MODELLED, on the emulator)" \
  OUT=$work/b scripts/gpu-check.sh --budget $budget --build "$build" >"$work/b.out" 2>&1 || rc=$?
took=$((SECONDS - t0))
report=$work/b/gpu-report.md
((rc != 0)) || fail "exit 0 with a step stopped"
((took <= budget + 15)) || fail "took $took s on a budget of $budget s"
grep -q '^| every library resolves | ok |' "$report" || fail "the step before the slow one is not listed"
grep -q '^| halftape starts on the GPU (and the wgmma self-check passes) | FAIL' "$report" || fail "the start is not listed"
grep -q '^| halftape profile --gpu h100 (MODELLED, on the emulator) | TIMEOUT (stopped at [0-9]* s) |' "$report" ||
  fail "the slow step is not listed as stopped"
grep -q '^| halftape bench all --device cuda | not run (budget spent) | 0 |' "$report" ||
  fail "a step after the deadline is not listed as not run"
grep -q 'GPU_CHECK_FAKE_GPU=1' "$report" || fail "the report does not say the GPU steps ran without a GPU"
echo "gpu_check.sh: without a GPU: exit $rc, report complete; a hung step stopped at the deadline ($took s on a budget of $budget s)"
