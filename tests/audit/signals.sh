#!/usr/bin/env bash
# Preemption: SIGTERM (SIGINT, SIGHUP) lets the step in flight finish, writes a checkpoint (all
# ranks agreeing on the step), says so and exits 143 (130, 129); --resume then continues bit for
# bit as if the run had never stopped. A second signal exits at once.
#   tests/audit/signals.sh MPIEXEC HALFTAPE_BINARY
set -uo pipefail
mpiexec=$1 bin=$2
source "$(dirname "$0")/lib.sh"
train=("$bin" train --device cpu --data synthetic --synthetic-features 64 --hidden 256,256 --batch-size 16 --steps 300
       --log-every 1 --no-progress --precision fp16)

# Waits until FILE has a line matching PATTERN (at most 60 s).
wait_for() {
  local file=$1 pattern=$2 i
  for ((i = 0; i < 600; ++i)); do grep -Eq -- "$pattern" "$file" 2>/dev/null && return 0; sleep 0.1; done
  echo "FAIL: never saw '$pattern' in $file"; cat "$file"; return 1
}

# Signals one process mid-run: exit 128 + signal, the message, and (with --save) a checkpoint
# that resumes to the same weights as a run never stopped.
for sig in TERM INT HUP; do
  dir=$work/$sig log=$work/$sig.log
  "${train[@]}" --save "$dir" >"$log" 2>&1 &
  pid=$!
  wait_for "$log" "^step +20/" || { failures=$((failures + 1)); continue; }
  kill -s "$sig" "$pid"
  wait "$pid"
  rc=$? want=$((128 + $(kill -l "$sig")))
  if [[ $rc -ne $want ]] || ! grep -q "stopped by signal $(kill -l "$sig")" "$log" || ! grep -q "checkpoint saved to $dir/step-" "$log"; then
    echo "FAIL SIG$sig: exit $rc (want $want)"; tail -5 "$log"; failures=$((failures + 1)); continue
  fi
  echo "ok   SIG$sig mid-run: exit $rc: $(grep -m1 'stopped by signal' "$log")"
done
# The SIGTERM'd run resumed equals a run that never stopped, bit for bit.
expect "resume after SIGTERM" 120 0 "done: " "${train[@]}" --save "$work/TERM" --resume "$work/TERM"
expect "the same run, never stopped" 120 0 "done: " "${train[@]}" --save "$work/straight"
if cmp -s "$work/TERM/step-00000300/model.safetensors" "$work/straight/step-00000300/model.safetensors" &&
   cmp -s "$work/TERM/step-00000300/training_state.safetensors" "$work/straight/step-00000300/training_state.safetensors"; then
  echo "ok   SIGTERM + --resume: the final weights and optimizer state equal the uninterrupted run's, bit for bit"
else
  echo "FAIL SIGTERM + --resume: the final checkpoint differs from the uninterrupted run's"; failures=$((failures + 1))
fi

# A second signal exits at once, even where the first cannot be acted on (a rank that hangs).
log=$work/twice.log
"${train[@]}" --inject-hang 10:0 >"$log" 2>&1 &
pid=$!
wait_for "$log" "^step +9/" && sleep 0.5
kill -TERM "$pid"
sleep 1
if kill -0 "$pid" 2>/dev/null; then
  kill -TERM "$pid"
  wait "$pid"
  rc=$?
  if [[ $rc -eq 143 ]]; then echo "ok   a second SIGTERM exits at once: exit $rc"; else echo "FAIL second SIGTERM: exit $rc"; failures=$((failures + 1)); fi
else
  echo "FAIL the first SIGTERM ended a hung step (it should wait for the step)"; failures=$((failures + 1))
fi

# Under mpirun: SIGTERM to rank 1 alone; both ranks stop after the same step, the checkpoint
# has both ranks' files, and resuming equals a run never stopped.
mpi=("$mpiexec" --oversubscribe --bind-to none -n 2)
log=$work/mpi.log
"${mpi[@]}" "${train[@]}" --save "$work/mpi" >"$log" 2>&1 &
pid=$!
wait_for "$log" "^step +20/"
rank1=""
for p in $(pgrep -f -- "--save $work/mpi"); do
  if tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx "OMPI_COMM_WORLD_RANK=1"; then rank1=$p; fi
done
if [[ -z $rank1 ]]; then echo "FAIL mpirun: rank 1's process not found"; failures=$((failures + 1)); kill -9 -- "-$pid"; else
  kill -TERM "$rank1"
  wait "$pid"
  rc=$?
  step=$(sed -n 's/^stopped by signal 15 (Terminated) after step \([0-9]*\).*/\1/p' "$log")
  if [[ $rc -ne 0 && -n $step && -f $work/mpi/step-$(printf %08d "$step")/rank-1.json ]]; then
    echo "ok   SIGTERM to rank 1 of 2: the job stopped after step $step on every rank (mpirun exit $rc), checkpoint written"
  else
    echo "FAIL SIGTERM to rank 1 of 2: exit $rc, step '$step'"; tail -20 "$log"; failures=$((failures + 1))
  fi
  expect "mpirun resume after SIGTERM" 120 0 "done: " "${mpi[@]}" "${train[@]}" --save "$work/mpi" --resume "$work/mpi"
  expect "mpirun, never stopped" 120 0 "done: " "${mpi[@]}" "${train[@]}" --save "$work/mpi-straight"
  if cmp -s "$work/mpi/step-00000300/model.safetensors" "$work/mpi-straight/step-00000300/model.safetensors"; then
    echo "ok   mpirun SIGTERM + --resume: the final weights equal the uninterrupted run's, bit for bit"
  else
    echo "FAIL mpirun SIGTERM + --resume: the final weights differ"; failures=$((failures + 1))
  fi
fi
finish
