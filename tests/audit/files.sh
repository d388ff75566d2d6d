#!/usr/bin/env bash
# Files that cannot be written or read as expected: a disk that fills up during a checkpoint or
# the metrics (simulated with a file-size limit, ulimit -f), /dev/full, a FIFO given as data,
# and plot_metrics.py on a file a crashed run left. Every failure: non-zero, one line saying what
# and where; the checkpoints written before stay loadable.
#   tests/audit/files.sh HALFTAPE_BINARY PLOT_METRICS_SCRIPT
set -uo pipefail
bin=$1 plot=$2
source "$(dirname "$0")/lib.sh"
train=("$bin" train --device cpu --data synthetic --synthetic-features 256 --hidden 256 --batch-size 8 --log-every 1
       --no-progress)
limited() { (ulimit -f "$1" && shift && "$@"); }  # runs a command with a file-size limit (KiB)

expect "a checkpoint that fits" 60 0 "saved $work/ckpt/step-00000002" "${train[@]}" --steps 2 --save "$work/ckpt"
expect "the disk fills during the next checkpoint" 60 nonzero "halftape: error: .*model.safetensors: write failed: File too large" \
  limited 100 "${train[@]}" --steps 4 --save "$work/ckpt" --resume "$work/ckpt"
expect "...and the previous one still resumes" 60 0 "done: 2 steps" "${train[@]}" --steps 4 --save "$work/ckpt" --resume "$work/ckpt"
expect "the disk fills while writing --metrics" 60 nonzero "halftape: error: --metrics $work/m.jsonl: write failed: File too large" \
  limited 4 "${train[@]}" --steps 200 --metrics "$work/m.jsonl"
expect "--metrics /dev/full" 60 nonzero "halftape: error: --metrics /dev/full: write failed: No space left on device" \
  "${train[@]}" --steps 2 --metrics /dev/full
expect "the log to a full standard output" 60 nonzero "halftape: error: writing the log to standard output failed" \
  bash -c '"$@" >/dev/full' _ "${train[@]}" --steps 2
mkfifo "$work/fifo-dir" && mkdir "$work/idx" && mkfifo "$work/idx/train-images-idx3-ubyte"
expect "a FIFO as the data directory" 10 nonzero "--data idx:$work/fifo-dir: .* is not a directory" \
  "$bin" train --data "idx:$work/fifo-dir" --steps 1
expect "a FIFO as a data file" 10 nonzero "train-images-idx3-ubyte: not a regular file" "$bin" train --data "idx:$work/idx" --steps 1

# plot_metrics.py: a last line cut short is skipped with a warning; other problems are one line.
# (the file: the memory account, 6 steps, the evaluation: 8 lines)
expect "metrics for plotting" 60 0 "done: 6 steps" "${train[@]}" --steps 6 --metrics "$work/full.jsonl"
head -c -40 "$work/full.jsonl" >"$work/cut.jsonl"
expect "plot: a truncated last line is skipped" 60 0 "warning: .*cut.jsonl:8: the last line is cut short" \
  /usr/bin/python3 "$plot" "$work/cut.jsonl" "$work/cut.png"
[[ -s $work/cut.png ]] || { echo "FAIL plot: no PNG written"; failures=$((failures + 1)); }
expect "plot: a missing file" 30 1 "plot_metrics: error: $work/none.jsonl: cannot read \(No such file or directory\)" \
  /usr/bin/python3 "$plot" "$work/none.jsonl" "$work/none.png"
echo '{"step": 1, "loss": 2.3}' >"$work/keys.jsonl"
expect "plot: missing keys" 30 1 "keys.jsonl:1: a step record without 'loss_scale', 'grad_norm', 'skipped'" \
  /usr/bin/python3 "$plot" "$work/keys.jsonl" "$work/keys.png"
[[ $(count_lines "Traceback") -eq 0 ]] || { echo "FAIL plot: a traceback"; failures=$((failures + 1)); }
finish
