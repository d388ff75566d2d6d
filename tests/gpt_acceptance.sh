#!/usr/bin/env bash
# The GPT's acceptance runs (issue 13): a 2-layer GPT for 300 steps on the Shakespeare corpus,
# in fp16 on --data shakespeare and in fp32 on --data text: of the same file; each checkpoint is
# then evaluated by a nanoGPT-style PyTorch model (scripts/gpt_reference.py) on the same 2048
# validation windows. Must hold: PyTorch's validation loss below 2.6 for both; fp16 within 2% of
# fp32; halftape's own val_loss within 3% of PyTorch's evaluation.
#   tests/gpt_acceptance.sh HALFTAPE_BINARY SCRIPTS_DIR
set -uo pipefail
bin=$1 scripts=$2
source "$(dirname "$0")/audit/lib.sh"
text=/usr/share/datasets/shakespeare/shakespeare.txt
recipe=(--model gpt --device cpu --n-layer 2 --n-head 4 --n-embd 64 --block-size 64 --batch-size 16 --steps 300 --lr 3e-3
        --warmup-steps 30 --log-every 50 --no-progress)
expect "fp16 on --data shakespeare" 900 0 "done: 300 steps" "$bin" train "${recipe[@]}" --data shakespeare --precision fp16 \
  --save "$work/fp16" --metrics "$work/fp16.jsonl"
expect "fp32 on --data text: of the same file" 900 0 "done: 300 steps" "$bin" train "${recipe[@]}" --data "text:$text" \
  --precision fp32 --save "$work/fp32" --metrics "$work/fp32.jsonl"
for p in fp16 fp32; do
  /usr/bin/python3 "$scripts/gpt_reference.py" eval --checkpoint "$work/$p" --data "$text" >"$work/$p.eval" || {
    echo "FAIL PyTorch's evaluation of the $p checkpoint"; failures=$((failures + 1)); }
done
/usr/bin/python3 - "$work" <<'PY' || failures=$((failures + 1))
import json, sys
work = sys.argv[1]
torch_loss = {p: json.load(open(f"{work}/{p}.eval"))["val_loss"] for p in ("fp16", "fp32")}
own = {p: [json.loads(l) for l in open(f"{work}/{p}.jsonl") if '"val_loss"' in l][-1]["val_loss"] for p in ("fp16", "fp32")}
ok = True
for p in ("fp16", "fp32"):
    agree = abs(own[p] - torch_loss[p]) / torch_loss[p]
    print(f"{p}: PyTorch evaluates the checkpoint at {torch_loss[p]:.4f} (< 2.6: {torch_loss[p] < 2.6}); halftape's val_loss "
          f"{own[p]:.4f}, {100 * agree:.3f}% apart (<= 3%: {agree <= 0.03})")
    ok = ok and torch_loss[p] < 2.6 and agree <= 0.03
gap = abs(torch_loss["fp16"] - torch_loss["fp32"]) / torch_loss["fp32"]
print(f"fp16 vs fp32: {100 * gap:.3f}% apart (<= 2%: {gap <= 0.02})")
sys.exit(0 if ok and gap <= 0.02 else 1)
PY
finish
