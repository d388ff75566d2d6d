#!/usr/bin/env bash
# Resuming on another number of ranks (issue 21): a GPT saved at step 5 of 10 by 2 ranks with
# --zero 1 (batch 8 each) resumes on 1 rank (batch 16) and on 4 ranks with --zero 1 and with
# --zero 2 (batch 4 each) - the same global batch of 16 - and ends within 1e-6 (relative, fp32)
# of the run that went straight on with 2 ranks and --zero 0; one saved with --zero 2 resumes on
# 4 ranks with --zero 1 alike; a resume with another global batch is refused in one line.
#   tests/zero_reshard.sh MPIEXEC HALFTAPE_BINARY SCRIPTS_DIR
set -uo pipefail
mpiexec=$1 bin=$2 scripts=$3
source "$(dirname "$0")/audit/lib.sh"
ranks() { local n=$1; shift; timeout 240 "$mpiexec" -n "$n" --oversubscribe --bind-to none "$bin" "$@"; }
common=(train --model gpt --device cpu --n-layer 2 --n-embd 32 --n-head 2 --block-size 32 --steps 10 --log-every 10
        --no-progress --eval-windows 8 --precision fp32 --clip-grad-norm 1.0)
expect "2 ranks straight through 10 steps" 240 0 "done: 10 steps" ranks 2 "${common[@]}" --batch-size 8 --save "$work/straight"
expect "2 ranks with --zero 1 stop after step 5" 240 0 "done: 5 steps" ranks 2 "${common[@]}" --batch-size 8 --zero 1 \
  --stop-after 5 --save "$work/half"
expect "resumed on 1 rank (batch 16)" 240 0 "done: 5 steps" "$bin" "${common[@]}" --batch-size 16 --resume "$work/half" \
  --save "$work/one"
expect "resumed on 4 ranks with --zero 1 (batch 4 each)" 240 0 "done: 5 steps" ranks 4 "${common[@]}" --batch-size 4 --zero 1 \
  --resume "$work/half" --save "$work/four"
expect "resumed on 4 ranks with --zero 2 (batch 4 each)" 240 0 "done: 5 steps" ranks 4 "${common[@]}" --batch-size 4 --zero 2 \
  --resume "$work/half" --save "$work/four-zero2"
expect "2 ranks with --zero 2 stop after step 5" 240 0 "done: 5 steps" ranks 2 "${common[@]}" --batch-size 8 --zero 2 \
  --stop-after 5 --save "$work/half-zero2"
expect "saved with --zero 2, resumed on 4 ranks with --zero 1" 240 0 "done: 5 steps" ranks 4 "${common[@]}" --batch-size 4 \
  --zero 1 --resume "$work/half-zero2" --save "$work/four-from-zero2"
expect "another global batch is refused" 60 nonzero "the checkpoint's global batch is 16 .*this run's 8" "$bin" "${common[@]}" \
  --batch-size 8 --resume "$work/half"
/usr/bin/python3 - "$scripts" "$work" <<'PY' || failures=$((failures + 1))
import sys
sys.path.insert(0, sys.argv[1])
from nanogpt import read_safetensors
work = sys.argv[2]
want, _ = read_safetensors(f"{work}/straight/step-00000010/model.safetensors")
scale = max(float(t.abs().max()) for t in want.values())
ok = True
for run in ("one", "four", "four-zero2", "four-from-zero2"):
    got, _ = read_safetensors(f"{work}/{run}/step-00000010/model.safetensors")
    apart = max(float((got[k] - want[k]).abs().max()) for k in want) / scale
    print(f"resumed on {run} rank(s): weights {apart:.2e} (relative) from the straight run (<= 1e-6: {apart <= 1e-6})")
    ok = ok and apart <= 1e-6
sys.exit(0 if ok else 1)
PY
finish
