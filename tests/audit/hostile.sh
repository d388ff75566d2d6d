#!/usr/bin/env bash
# A hostile user on the token files, checkpoints and `profile` (issue 38): a token file truncated
# or overwritten with out-of-range ids under a running job ends it with one line naming the file
# (never SIGBUS or SIGSEGV) and the last checkpoint stays whole; an llm.c file cut inside its
# header, splits that share a file and malformed file lists are refused by name; a fresh run
# never rotates away another run's checkpoints; `profile` refuses the train flags it cannot honour.
#   tests/audit/hostile.sh HALFTAPE_BINARY
set -uo pipefail
bin=$1
source "$(dirname "$0")/lib.sh"
gpt=("$bin" train --model gpt --n-layer 1 --n-head 2 --n-embd 32 --block-size 16 --batch-size 4 --device cpu --no-progress)
tokens() {  # DIR: nanoGPT train.bin and val.bin of byte ids
  mkdir -p "$1"
  head -c 200000 /usr/share/datasets/shakespeare/shakespeare.txt | /usr/bin/python3 -c "
import array, sys
d = sys.stdin.buffer.read(); cut = len(d) * 9 // 10
array.array('H', list(d[:cut])).tofile(open('$1/train.bin', 'wb')); array.array('H', list(d[cut:])).tofile(open('$1/val.bin', 'wb'))"
}
# waits until FILE has a line matching PATTERN (at most 60 s)
wait_for() { for _ in $(seq 600); do grep -Eq -- "$2" "$1" 2>/dev/null && return 0; sleep 0.1; done; return 1; }

# 1. Truncated under a running job.
tokens "$work/t1"
under_job() {  # DIR CHANGE...: starts a long run on DIR, applies CHANGE once it has saved, waits for it
  local dir=$1; shift
  "${gpt[@]}" --data "tokens:$dir" --vocab-size 257 --steps 1000000 --log-every 20 --save "$dir/ck" --save-every 20 &
  local pid=$!
  wait_for "$dir/ck/latest" . || { kill -9 $pid; echo "the run never saved"; return 99; }
  "$@"
  wait $pid
}
expect "a token file truncated under a running job" 60 nonzero \
  "^halftape: error: .*t1/train.bin: the token file shrank while the job ran" under_job "$work/t1" truncate -s 1000 "$work/t1/train.bin"
[[ $(grep -c "error" "$out") == 1 ]] || { echo "FAIL more than one error line"; failures=$((failures + 1)); }
expect "...and its last checkpoint is whole" 60 0 "^65( [0-9]+)+ *$" "$bin" sample --device cpu --resume "$work/t1/ck" --tokens 5 --prompt-ids 65

# 2. Overwritten in place with ids outside the vocabulary.
tokens "$work/t2"
/usr/bin/python3 -c "import array; array.array('H', [65535] * 4096).tofile(open('$work/ids_65535.bin', 'wb'))"
expect "a token file overwritten with out-of-range ids under a running job" 60 nonzero \
  "^halftape: error: .*t2/train.bin: token [0-9]+ is now id 65535, outside the 257 ids of the vocabulary: the token file changed" \
  under_job "$work/t2" dd if="$work/ids_65535.bin" of="$work/t2/train.bin" conv=notrunc status=none

# 3. profile refuses what it cannot honour.
expect "profile --resume" 30 nonzero "^halftape: error: profile --resume: .*leave out --resume" \
  "$bin" profile --model mlp --data synthetic --resume "$work/t1/ck"
expect "profile --save" 30 nonzero "^halftape: error: profile --save: " "$bin" profile --model mlp --data synthetic --save "$work/p"
[[ ! -e $work/p ]] || { echo "FAIL profile --save created $work/p"; failures=$((failures + 1)); }
expect "profile --steps 0" 30 nonzero "^halftape: error: profile --steps 0: at least 1" "$bin" profile --model mlp --data synthetic --steps 0

# 4. An llm.c file cut short inside its header.
/usr/bin/python3 -c "
import struct; open('$work/cut.bin', 'wb').write(struct.pack('<3i', 20240520, 1, 1000) + bytes(488))"
expect "an llm.c file cut inside its header" 30 nonzero "cut.bin: 500 bytes starting with llm.c's magic 20240520: a token file cut short inside its 1024-byte header" \
  "${gpt[@]}" --data "tokens:$work/cut.bin" --vocab-size 65536 --steps 1

# 5. Training and validation sharing a file; malformed lists.
mkdir -p "$work/shards" && cp "$work/t1/val.bin" "$work/shards/x_train_0.bin" && cp "$work/t2/val.bin" "$work/shards/x_val_0.bin"
expect "a train glob that holds the validation shard" 30 nonzero "x_val_0.bin is both a training and a validation file" \
  "${gpt[@]}" --data "tokens:$work/shards/*.bin,$work/shards/x_val_*.bin" --vocab-size 257 --steps 1
ln -s x_train_0.bin "$work/shards/x_train_1.bin"
expect "the same file twice in a split (a glob over a file and a link to it)" 30 nonzero "x_train_1.bin is named twice" \
  "${gpt[@]}" --data "tokens:$work/shards/x_train_*.bin,$work/shards/x_val_0.bin" --vocab-size 257 --steps 1
rm "$work/shards/x_train_1.bin"
expect "three files for TRAIN,VAL" 30 nonzero "is not TRAIN,VAL \(two files or globs of shards" \
  "${gpt[@]}" --data "tokens:$work/shards/x_train_0.bin,$work/shards/x_val_0.bin,$work/shards/x_val_0.bin" --vocab-size 257 --steps 1
expect "a trailing comma" 30 nonzero "is not TRAIN,VAL" "${gpt[@]}" --data "tokens:$work/shards/x_train_0.bin," --vocab-size 257 --steps 1
ln -s "$work/loop-b" "$work/loop-a" && ln -s "$work/loop-a" "$work/loop-b"
expect "a loop of symbolic links" 30 nonzero "loop-a: a loop of symbolic links" "${gpt[@]}" --data "tokens:$work/loop-a" --steps 1

# 6. A fresh run saved into another run's directory: refused; its checkpoints stay.
expect "a GPT run saves" 60 0 "saved" "${gpt[@]}" --data "tokens:$work/t1" --vocab-size 257 --steps 4 --save-every 2 --save "$work/run"
before=$(ls "$work/run")
expect "a fresh MLP run into the GPT's --save directory" 30 nonzero \
  "^halftape: error: --save $work/run: it holds another run's checkpoints .* give --overwrite" \
  "$bin" train --model mlp --data synthetic --steps 3 --save "$work/run" --keep 2 --device cpu
[[ $(ls "$work/run") == "$before" ]] || { echo "FAIL the GPT's checkpoints changed"; failures=$((failures + 1)); }
expect "...continued with --resume" 60 0 "saved" "${gpt[@]}" --data "tokens:$work/t1" --vocab-size 257 --steps 6 --save "$work/run" \
  --resume "$work/run"
expect "...or replaced with --overwrite" 60 0 "saved" "$bin" train --model mlp --data synthetic --steps 3 --save "$work/run" \
  --device cpu --overwrite

# 7. A manifest's step edited: refused (held to the CRC-checked training state).
cp -r "$work/run" "$work/edited"
sed -i 's/"step": 3/"step": 9/' "$work/edited/step-00000003/manifest.json"
expect "a manifest whose step was edited" 30 nonzero "manifest.json: field 'step' is 9, but the training state \(CRC-checked\) is of step 3" \
  "$bin" train --model mlp --data synthetic --steps 5 --device cpu --resume "$work/edited"

# 8. The right cause: latest as a directory, --vocab a directory or a file of mixed formats.
mkdir -p "$work/dirlatest/latest"
expect "latest as a directory" 30 nonzero "dirlatest/latest: not a file" "$bin" sample --device cpu --resume "$work/dirlatest"
expect "sample --vocab a directory" 30 nonzero "--vocab /tmp: a directory, not a vocabulary file" \
  "$bin" sample --device cpu --resume "$work/t1/ck" --prompt-ids 65 --tokens 2 --vocab /tmp
printf 'QQ== 65\nnot base64 at all\n' >"$work/mixed.tiktoken"
expect "sample --vocab with a line not in the file's format" 30 nonzero "mixed.tiktoken:2: not a tiktoken line" \
  "$bin" sample --device cpu --resume "$work/t1/ck" --prompt-ids 65 --tokens 2 --vocab "$work/mixed.tiktoken"
printf 'QQ== 65\n' >"$work/short.tiktoken"
expect "sample --vocab naming fewer ids than the model has: said" 30 0 "note: --vocab .*short.tiktoken names 1 of the model's 257 ids" \
  "$bin" sample --device cpu --resume "$work/t1/ck" --prompt-ids 65 --tokens 2 --vocab "$work/short.tiktoken"

# 9. Flags that would do nothing: refused.
expect "--dry-run --save" 30 nonzero "^halftape: error: --dry-run saves nothing: leave out --save" \
  "$bin" train --model mlp --data synthetic --dry-run --save "$work/dry" --device cpu
[[ ! -e $work/dry ]] || { echo "FAIL --dry-run --save created $work/dry"; failures=$((failures + 1)); }

# 11. The banner's parameter count and the memory line's agree (the arena's padding named).
expect "the memory line names the model's parameters" 30 0 "\(22400 parameters in the arena: the model's 21504 and each tensor's padding" \
  "${gpt[@]}" --data "tokens:$work/t1" --vocab-size 257 --steps 1
grep -q "(21504 parameters)" "$out" || { echo "FAIL the banner's count"; failures=$((failures + 1)); }

# 12. --zero with one rank, a resume that runs no step, a preset's value, a flag given twice.
expect "--zero 2 with one rank: said" 30 0 "note: --zero 2 with one rank shards nothing" \
  "$bin" train --model mlp --data synthetic --steps 1 --zero 2 --device cpu
expect "a GPT run to resume" 60 0 "saved" "${gpt[@]}" --data "tokens:$work/t1" --vocab-size 257 --steps 2 --save "$work/run-gpt"
expect "a resume at its last step" 30 0 "train loss - \(no step ran\)" "${gpt[@]}" --data "tokens:$work/t1" --vocab-size 257 \
  --steps 2 --resume "$work/run-gpt"
expect "a preset's value in an error" 30 nonzero "--n-embd 32 is not divisible by --n-head 12 \(--n-head 12 from --preset gpt2\)" \
  "$bin" train --model gpt --preset gpt2 --n-embd 32 --steps 1 --device cpu
expect "a flag given twice" 30 2 "^halftape: error: --steps is given 2 times; give it once" \
  "$bin" train --steps 1 --steps 2 --data synthetic
finish
