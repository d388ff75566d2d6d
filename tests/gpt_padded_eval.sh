#!/usr/bin/env bash
# A padded vocabulary in PyTorch (issue 20): a GPT trained with --pad-vocab-to 64 (its table 84
# rows padded to 128) is loaded by the nanoGPT-style model of scripts/nanogpt.py with nanoGPT's
# shapes (GPTConfig(vocab_size=padded_vocab_size)), its logits cut to the real vocabulary as llm.c
# does, and evaluated on the same validation windows: PyTorch's loss must equal halftape's own
# val_loss within 0.1% (fp32).
#   tests/gpt_padded_eval.sh HALFTAPE_BINARY SCRIPTS_DIR
set -uo pipefail
bin=$1 scripts=$2
source "$(dirname "$0")/audit/lib.sh"
text=/usr/share/datasets/shakespeare/shakespeare.txt
expect "a GPT with its vocabulary padded to 64 trains (fp32)" 300 0 "padded to 128" "$bin" train --model gpt --device cpu \
  --n-layer 2 --n-head 2 --n-embd 32 --block-size 32 --batch-size 8 --steps 40 --lr 3e-3 --warmup-steps 5 --log-every 20 \
  --no-progress --precision fp32 --pad-vocab-to 64 --data "text:$text" --save "$work/padded" --metrics "$work/padded.jsonl"
/usr/bin/python3 "$scripts/gpt_reference.py" eval --checkpoint "$work/padded" --data "$text" >"$work/padded.eval" || {
  echo "FAIL PyTorch's evaluation of the padded checkpoint"; failures=$((failures + 1)); }
/usr/bin/python3 - "$work" <<'PY' || failures=$((failures + 1))
import json, sys
work = sys.argv[1]
torch_loss = json.load(open(f"{work}/padded.eval"))["val_loss"]
own = [json.loads(l) for l in open(f"{work}/padded.jsonl") if '"val_loss"' in l][-1]["val_loss"]
apart = abs(own - torch_loss) / torch_loss
print(f"padded vocabulary: PyTorch evaluates the checkpoint at {torch_loss:.5f}, halftape's val_loss {own:.5f}: "
      f"{100 * apart:.4f}% apart (<= 0.1%: {apart <= 0.001})")
sys.exit(0 if apart <= 0.001 else 1)
PY
finish
