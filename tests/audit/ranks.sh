#!/usr/bin/env bash
# Ranks of one mpirun job that disagree - a setting that differs (an MPMD launch), a bad flag on
# one rank, a --save given to one rank - end the whole job within 30 s, non-zero, with one line
# naming the setting (and both values) or the rank; nothing hangs, nothing trains a wrong model.
#   tests/audit/ranks.sh MPIEXEC HALFTAPE_BINARY
set -uo pipefail
mpiexec=$1 bin=$2
source "$(dirname "$0")/lib.sh"
common=(--device cpu --data synthetic --synthetic-features 32 --hidden 16 --batch-size 8 --steps 20 --log-every 5 --no-progress)
with() {  # EXTRA...: the common arguments, each flag EXTRA gives replacing its common value
  local args=("${common[@]}") i
  for ((i = 0; i < ${#args[@]}; i += 2)); do
    if [[ " $* " == *" ${args[i]} "* && ${args[i]} != --no-progress ]]; then args[i]="" args[i + 1]=""; fi
  done
  for a in "${args[@]}" "$@"; do [[ -n $a ]] && printf '%s\n' "$a"; done
}
mpmd() {  # RANK0_EXTRA -- RANK1_EXTRA: a two-rank MPMD launch
  local a=() b=()
  while [[ $1 != -- ]]; do a+=("$1"); shift; done
  shift
  b=("$@")
  mapfile -t a < <(with "${a[@]}")
  mapfile -t b < <(with "${b[@]}")
  "$mpiexec" --oversubscribe --bind-to none -n 1 "$bin" train "${a[@]}" : -n 1 "$bin" train "${b[@]}"
}

expect "same job on both ranks trains" 60 0 "done: 20 steps" mpmd -- --lr 0.001
for case in "--lr 0.001|--lr 0.1" "--batch-size 8|--batch-size 4" "--precision fp16|--precision fp32" \
            "--optimizer adamw|--optimizer sgd" "--accum-steps 1|--accum-steps 2" "--hidden 16|--hidden 32" \
            "--steps 20|--steps 40" "--seed 0|--seed 1" "--schedule cosine|--schedule constant" \
            "--warmup-steps 0|--warmup-steps 5" "--clip-grad-norm 0|--clip-grad-norm 1" "--device cpu|--device simt" \
            "--bucket-mb 25|--bucket-mb 1" "--allreduce-dtype fp32|--allreduce-dtype bf16" "--log-every 5|--log-every 10"; do
  left=${case%|*} right=${case#*|}
  flag=${left%% *}
  # shellcheck disable=SC2086
  expect "ranks disagree on $flag" 30 nonzero "ranks disagree on $flag: rank 0 has ${left#* }, rank 1 has ${right#* }" \
    mpmd $left -- $right
  [[ $(count_lines "halftape: error:") -eq 1 ]] || { echo "FAIL $flag: not exactly one error line"; failures=$((failures + 1)); }
done
expect "--save on one rank only" 30 nonzero "ranks disagree on --save: rank 0 has nothing, rank 1 has $work/one" \
  mpmd -- --save "$work/one"
expect "--resume on one rank only" 30 nonzero "ranks disagree on --resume" mpmd --resume "$work/nothing" --
expect "a bad flag on rank 1 only" 30 nonzero "rank 1 of 2: .*--precision" mpmd -- --precision fp4
expect "an unknown flag on rank 1 only" 30 nonzero "rank 1 of 2: .*--frobnicate" mpmd -- --frobnicate
expect "--help on rank 1 only" 30 nonzero "rank 1 of 2 was asked for --help" mpmd -- --help
expect "a bad value on every rank: said once" 30 nonzero "halftape: error: --precision: fp4" \
  "$mpiexec" --oversubscribe --bind-to none -n 2 "$bin" train "${common[@]}" --precision fp4
[[ $(count_lines "halftape: error:") -eq 1 ]] || { echo "FAIL all ranks bad: not exactly one error line"; failures=$((failures + 1)); }
expect "a --save no rank can write" 30 nonzero "--save /proc/halftape-x: cannot create" \
  "$mpiexec" --oversubscribe --bind-to none -n 2 "$bin" train "${common[@]}" --save /proc/halftape-x
expect "--inject-crash naming a rank the job lacks" 30 nonzero "there is no rank 2 \(the job has 2\)" \
  "$mpiexec" --oversubscribe --bind-to none -n 2 "$bin" train "${common[@]}" --inject-crash 5:2
finish
