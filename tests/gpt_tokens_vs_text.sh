#!/usr/bin/env bash
# Token files against the text loader (issue 20): the Shakespeare text (ASCII, so a byte is a
# character) written as byte tokens in nanoGPT's uint16 format, vocabulary 257 padded to 320,
# trains the same GPT recipe to the validation loss the text loader reaches on the same bytes
# (84 characters), within 1% after 1000 steps (fp32). The two models differ only in the size of
# their token table and the order of their initial draws.
#   tests/gpt_tokens_vs_text.sh HALFTAPE_BINARY
set -uo pipefail
bin=$1
source "$(dirname "$0")/audit/lib.sh"
text=/usr/share/datasets/shakespeare/shakespeare.txt
/usr/bin/python3 - "$text" "$work" <<'PY' || { echo "FAIL writing the byte tokens"; exit 1; }
import array, sys
data = open(sys.argv[1], "rb").read()
cut = len(data) * 9 // 10  # the text loader's split: the first 90% train
array.array("H", list(data[:cut])).tofile(open(f"{sys.argv[2]}/train.bin", "wb"))
array.array("H", list(data[cut:])).tofile(open(f"{sys.argv[2]}/val.bin", "wb"))
PY
recipe=(train --model gpt --device cpu --n-layer 2 --n-head 4 --n-embd 64 --block-size 64 --batch-size 16 --steps 1000 --lr 3e-3
        --warmup-steps 30 --log-every 500 --no-progress --precision fp32)
expect "the text loader (--data shakespeare)" 600 0 "done: 1000 steps" "$bin" "${recipe[@]}" --data shakespeare \
  --metrics "$work/text.jsonl"
expect "byte tokens, vocabulary 257 padded to 320" 600 0 "done: 1000 steps" "$bin" "${recipe[@]}" --data "tokens:$work" \
  --vocab-size 257 --pad-vocab-to 64 --metrics "$work/tokens.jsonl"
/usr/bin/python3 - "$work" <<'PY' || failures=$((failures + 1))
import json, sys
val = {k: [json.loads(l) for l in open(f"{sys.argv[1]}/{k}.jsonl") if '"val_loss"' in l][-1]["val_loss"] for k in ("text", "tokens")}
apart = abs(val["tokens"] - val["text"]) / val["text"]
print(f"validation loss: text loader {val['text']:.4f}, byte tokens {val['tokens']:.4f}: {100 * apart:.2f}% apart (<= 1%: {apart <= 0.01})")
sys.exit(0 if apart <= 0.01 else 1)
PY
finish
