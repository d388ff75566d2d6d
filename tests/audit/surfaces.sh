#!/usr/bin/env bash
# The small surfaces a careful user trips on (issue 22), each as a user meets it: a script given
# the wrong file, a baseline command that fails, an output path that cannot be written, an
# environment variable with an undocumented value. Every one: non-zero, one line saying what and
# where, no traceback, no raw wait status, and no work done first.
#   tests/audit/surfaces.sh HALFTAPE_BINARY SCRIPTS_DIR
set -uo pipefail
bin=$1 scripts=$2
source "$(dirname "$0")/lib.sh"
report=("/usr/bin/python3" "$scripts/bench_report.py")
no_traceback() { [[ $(count_lines "Traceback") -eq 0 ]] || { echo "FAIL $1: a traceback"; failures=$((failures + 1)); }; }

# bench_report.py: one line naming the file, never a traceback.
expect "bench_report: a file that is not JSON" 30 1 "^bench_report: error: /etc/passwd: not JSON" \
  "${report[@]}" /etc/passwd --markdown "$work/x.md" && no_traceback "bench_report /etc/passwd"
expect "bench_report: a missing file" 30 1 "^bench_report: error: $work/none.json: cannot read \(No such file or directory\)" \
  "${report[@]}" "$work/none.json" && no_traceback "bench_report missing"
echo '{"results": [{"name": "x"}]}' >"$work/partial.json"
expect "bench_report: JSON that is not a bench run" 30 1 "partial.json: does not match bench/schema.json at the top level: 'schema' is a required property" \
  "${report[@]}" "$work/partial.json" && no_traceback "bench_report partial"
expect "bench_report --validate: the same" 30 1 "partial.json: does not match bench/schema.json" \
  "${report[@]}" --validate "$work/partial.json" && no_traceback "bench_report --validate"
printf '\xff\xfe\x00' >"$work/binary.json"
expect "bench_report: a binary file" 30 1 "binary.json: not a text file" "${report[@]}" "$work/binary.json" &&
  no_traceback "bench_report binary"

# --pytorch: the baseline's exit code or the signal that ended it, never a raw wait status.
quick=("$bin" bench train --device cpu --quick --repeats 1 --warmup 0)
expect "bench --pytorch false: its exit code" 120 1 "--pytorch: 'false --json .*' exited with code 1$" "${quick[@]}" --pytorch false
expect "bench --pytorch killed: its signal" 120 1 "exited with code 137 \(the shell's code for signal 9, Killed\)|was killed by signal 9" \
  "${quick[@]}" --pytorch 'sh -c "kill -9 \$\$"'
expect "bench --pytorch: no such command" 120 1 "exited with code 127 \(the shell found no such command\)" \
  "${quick[@]}" --pytorch "$work/no-such-baseline"
[[ $(count_lines "status [0-9]") -eq 0 ]] || { echo "FAIL bench --pytorch: a raw wait status"; failures=$((failures + 1)); }

# --json: checked before the first benchmark runs, and the final write still checked.
expect "bench --json /dev/full: refused before any work" 10 1 "^halftape: error: --json /dev/full: write failed: No space left on device" \
  "$bin" bench memory --device cpu --quick --json /dev/full
[[ $(count_lines "median ms") -eq 0 ]] || { echo "FAIL bench --json /dev/full: benchmarks ran first"; failures=$((failures + 1)); }
expect "bench --json into a missing folder" 10 1 "--json $work/no/such/dir.json: cannot open for writing: No such file or directory" \
  "$bin" bench memory --device cpu --quick --json "$work/no/such/dir.json"
expect "bench --json: a good path gets the results" 120 0 "median ms" "$bin" bench memory --device cpu --quick --json "$work/ok.json"
expect "...which bench_report validates" 30 0 "ok.json: valid" "${report[@]}" --validate "$work/ok.json"

# HALFTAPE_* variables: their documented values only (ground/env.h), whatever the device.
train=("$bin" train --device cpu --data synthetic --synthetic-features 16 --hidden 16 --batch-size 4 --steps 1 --no-progress)
expect "HALFTAPE_WGMMA=garbage" 30 2 "^halftape: error: HALFTAPE_WGMMA='garbage': takes 0 or 1" env HALFTAPE_WGMMA=garbage "${train[@]}"
expect "HALFTAPE_WGMMA=0 is documented" 60 0 "done: 1 steps" env HALFTAPE_WGMMA=0 "${train[@]}"
expect "HALFTAPE_SIMT_THREADS=0" 30 2 "HALFTAPE_SIMT_THREADS='0': takes a thread count in \[1, 256\]" env HALFTAPE_SIMT_THREADS=0 "${train[@]}"
expect "HALFTAPE_SIMT_THREADS=4x" 30 2 "HALFTAPE_SIMT_THREADS='4x'" env HALFTAPE_SIMT_THREADS=4x "${train[@]}"
expect "HALFTAPE_SIMT_SCHEDULE=sideways" 30 2 "HALFTAPE_SIMT_SCHEDULE='sideways': takes forward, reverse or shuffle" \
  env HALFTAPE_SIMT_SCHEDULE=sideways "${train[@]}"
expect "a misspelt HALFTAPE_SIMT_THREAD=4" 30 2 "^halftape: error: HALFTAPE_SIMT_THREAD: not a variable halftape reads; did you mean HALFTAPE_SIMT_THREADS\?" \
  env HALFTAPE_SIMT_THREAD=4 "${train[@]}"
expect "a script's own variable (HALFTAPE_JOBS) is left alone" 60 0 "done: 1 steps" env HALFTAPE_JOBS=2 "${train[@]}"
expect "HALFTAPE_SIMT_ARCH=sm_70" 30 2 "HALFTAPE_SIMT_ARCH='sm_70': takes sm_80 or sm_90" env HALFTAPE_SIMT_ARCH=sm_70 "$bin" bench memory --device cpu --quick
finish
