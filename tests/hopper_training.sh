#!/usr/bin/env bash
# Training with the Hopper GEMM on the emulator: `halftape train --device simt --gemm native` on
# an emulated sm_90 must name the wgmma kernel in its banner and follow the mma.sync run of the
# default sm_80 within 1e-3 (relative) in every step's loss: the MLP in fp16 and bf16, the GPT in
# fp16. (The emulator forms both kernels' sums alike - exact products, one rounding per k16
# step - so here they agree to the bit; on a GPU the bound is what is checked.)
#   usage: hopper_training.sh HALFTAPE_BINARY
set -euo pipefail
halftape=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export HALFTAPE_SIMT_THREADS=${HALFTAPE_SIMT_THREADS:-2} OPENBLAS_NUM_THREADS=1

run() {  # run NAME ARCH ARGS...: the banner into NAME.log, the metrics into NAME.jsonl
  local name=$1 arch=$2
  shift 2
  HALFTAPE_SIMT_ARCH=$arch "$halftape" train --device simt --gemm native --steps 5 --metrics "$work/$name.jsonl" "$@" \
    >"$work/$name.log" 2>&1 || { cat "$work/$name.log"; echo "FAIL: $name exited with an error"; exit 1; }
}

for precision in fp16 bf16; do
  for model in mlp gpt; do
    [[ $model == gpt && $precision == bf16 ]] && continue
    if [[ $model == mlp ]]; then
      args=(--model mlp --data synthetic --synthetic-samples 640 --batch-size 128 --hidden 256,256 --synthetic-features 200)
    else
      args=(--model gpt --data shakespeare --batch-size 4 --n-layer 2 --n-embd 128 --n-head 4 --block-size 64 --eval-windows 16)
    fi
    run "$model-$precision-sm80" sm_80 "${args[@]}" --precision "$precision"
    run "$model-$precision-sm90" sm_90 "${args[@]}" --precision "$precision"
    grep -q "GEMM mma.sync" "$work/$model-$precision-sm80.log" || { head -1 "$work/$model-$precision-sm80.log"; echo "FAIL: sm_80 banner"; exit 1; }
    grep -q "GEMM wgmma" "$work/$model-$precision-sm90.log" || { head -1 "$work/$model-$precision-sm90.log"; echo "FAIL: sm_90 banner does not name wgmma"; exit 1; }
    /usr/bin/python3 - "$work/$model-$precision-sm80.jsonl" "$work/$model-$precision-sm90.jsonl" "$model $precision" <<'PY'
import json, sys
def losses(path):
    return {r["step"]: r["loss"] for r in map(json.loads, open(path)) if r.get("event", "step") == "step" and "loss" in r}
a, b = losses(sys.argv[1]), losses(sys.argv[2])
if sorted(a) != sorted(b) or len(a) < 5:
    sys.exit(f"FAIL: {sys.argv[3]}: steps differ: {sorted(a)} vs {sorted(b)}")
worst = max(abs(a[s] - b[s]) / abs(a[s]) for s in a)
print(f"{sys.argv[3]}: 5 steps, wgmma vs mma.sync losses {[round(b[s], 6) for s in sorted(b)]}, worst relative difference {worst:.2e}")
if worst > 1e-3:
    sys.exit(f"FAIL: {sys.argv[3]}: relative loss difference {worst:.2e} > 1e-3")
PY
  done
done
echo "ok: the wgmma GEMM trains as mma.sync does"
