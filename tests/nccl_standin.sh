#!/usr/bin/env bash
# `mpirun -np N halftape train --device simt --comm nccl`, NCCL being the stand-in of the tests
# (tests/nccl_standin), ends with the same checkpoint - weights, optimizer state, scaler, every
# file - bit for bit as `--comm mpi`: the MLP and a GPT in fp16, with accumulation and fp16
# gradient traffic, with --zero 1 and 2, on 2 ranks; on 4 ranks, where the two transports add
# the ranks' gradients in different orders, within a measured, printed bound. And a rank that stops answering ends
# an NCCL job through the communicator's watchdog within its --comm-timeout, a killed one ends it;
# the step captured as a CUDA graph replays its collectives to the eager run's checkpoint; a
# checkpoint of 2 ranks resumes on 4 (--zero 1 -> 2) within 1e-6 of going straight on.
#   tests/nccl_standin.sh MPIEXEC HALFTAPE_BINARY STAND_IN_DIR SCRIPTS_DIR REAL_NCCL
# (REAL_NCCL 1: the binary links the real NCCL, which LD_LIBRARY_PATH replaces; 0: a build
# without CUDA, which links the stand-in itself.)
set -uo pipefail
mpiexec=$1 bin=$2 standin=$3 scripts=$4 real_nccl=${5:-1}
source "$(dirname "$0")/audit/lib.sh"
ranks() { local n=$1; shift; timeout 240 "$mpiexec" -n "$n" --oversubscribe --bind-to none -x LD_LIBRARY_PATH="$standin" "$bin" "$@"; }
mlp=(train --device simt --data synthetic --synthetic-samples 512 --synthetic-features 64 --hidden 64
     --log-every 6 --no-progress --precision fp16)
gpt32=(train --model gpt --device simt --n-layer 1 --n-embd 32 --n-head 2 --block-size 32 --log-every 4
       --no-progress --eval-windows 4)
gpt=("${gpt32[@]}" --precision fp16)
# same NAME N ARGS...: --comm mpi and --comm nccl on N ranks end with identical checkpoints.
# close NAME N BOUND ARGS...: where the two sum in different orders (4 ranks: OpenMPI's
# allreduce pairs the ranks, the stand-in adds them in rank order), the weights' largest
# difference relative to the largest weight is measured, printed, and held under BOUND.
close() {
  local name=$1 n=$2 bound=$3
  shift 3
  expect "$name: --comm mpi" 240 0 "done:" ranks "$n" "$@" --comm mpi --save "$work/$name-mpi" || return
  expect "$name: --comm nccl" 240 0 "done:" ranks "$n" "$@" --comm nccl --save "$work/$name-nccl" || return
  /usr/bin/python3 - "$scripts" "$work/$name" "$bound" "$name" <<'PY' || failures=$((failures + 1))
import glob, os, sys
sys.path.insert(0, sys.argv[1])
from nanogpt import read_safetensors
run, bound, name = sys.argv[2], float(sys.argv[3]), sys.argv[4]
step = sorted(os.path.basename(p) for p in glob.glob(f"{run}-mpi/step-*"))[-1]
want, _ = read_safetensors(f"{run}-mpi/{step}/model.safetensors")
got, _ = read_safetensors(f"{run}-nccl/{step}/model.safetensors")
scale = max(float(t.abs().max()) for t in want.values())
apart = max(float((got[k] - want[k]).abs().max()) for k in want) / scale
ok = apart <= bound
print(f"{'ok  ' if ok else 'FAIL'} {name}: weights {apart:.2e} apart (relative to the largest) over MPI and over NCCL, bound {bound:g}")
sys.exit(0 if ok else 1)
PY
}
same() {
  local name=$1 n=$2
  shift 2
  expect "$name: --comm mpi" 240 0 "done:" ranks "$n" "$@" --comm mpi --save "$work/$name-mpi" || return
  expect "$name: --comm nccl" 240 0 "done:" ranks "$n" "$@" --comm nccl --save "$work/$name-nccl" || return
  local step
  step=$(cd "$work/$name-mpi" && ls -d step-* | tail -1)
  if [[ -n $step ]] && diff -r "$work/$name-mpi/$step" "$work/$name-nccl/$step" >/dev/null; then
    echo "ok   $name: every file of $step identical over MPI and over NCCL"
  else
    echo "FAIL $name: the checkpoints differ:"; diff -rq "$work/$name-mpi/$step" "$work/$name-nccl/$step" | sed 's/^/     | /'
    failures=$((failures + 1))
  fi
}
same mlp-2 2 "${mlp[@]}" --steps 6 --batch-size 16
same mlp-accum-fp16-traffic-2 2 "${mlp[@]}" --steps 6 --batch-size 8 --accum-steps 2 --allreduce-dtype fp16
close mlp-fp16-traffic-4 4 1e-3 "${mlp[@]}" --steps 6 --batch-size 8 --allreduce-dtype fp16
same gpt-2 2 "${gpt[@]}" --steps 4 --batch-size 4
same gpt-zero1-accum-2 2 "${gpt[@]}" --steps 4 --batch-size 2 --accum-steps 2 --zero 1
same gpt-zero2-accum-2 2 "${gpt[@]}" --steps 4 --batch-size 2 --accum-steps 2 --zero 2
close gpt-zero2-4 4 1e-7 "${gpt[@]}" --steps 4 --batch-size 2 --zero 2
# The step captured as a CUDA graph, its collectives replayed inside it: the same as eager NCCL.
for zero in 0 1; do
  expect "gpt --zero $zero --cuda-graph: eager" 240 0 "done:" ranks 2 "${gpt[@]}" --steps 6 --batch-size 4 --zero $zero \
    --comm nccl --save "$work/graph$zero-eager"
  expect "gpt --zero $zero --cuda-graph: captured" 240 0 "done:" ranks 2 "${gpt[@]}" --steps 6 --batch-size 4 --zero $zero \
    --comm nccl --cuda-graph --save "$work/graph$zero-captured"
  if diff -r "$work/graph$zero-eager/step-00000006" "$work/graph$zero-captured/step-00000006" >/dev/null; then
    echo "ok   gpt --zero $zero: the replayed graph's checkpoint is the eager run's, every file"
  else
    echo "FAIL gpt --zero $zero: the replayed graph's checkpoint differs from the eager run's"; failures=$((failures + 1))
  fi
done
# Rank 1 stops answering: rank 0's collective never completes, and the watchdog ends the job.
expect "a hung rank under NCCL" 60 nonzero "rank 0 of 2: .* did not complete within 3 s" \
  ranks 2 "${mlp[@]}" --steps 200 --batch-size 8 --comm nccl --inject-hang 5:1 --comm-timeout 3
# A killed rank ends the job.
expect "a killed rank under NCCL" 60 nonzero "rank 1.*(signal 9|Killed)|exited on signal 9" \
  ranks 2 "${mlp[@]}" --steps 200 --batch-size 8 --comm nccl --inject-crash 5:1
# Resharded: saved by 2 ranks with --zero 1 at step 2 of 4, resumed on 4 ranks with --zero 2
# (the same global batch), all over NCCL: within 1e-6 of the 2 ranks that went straight on.
expect "gpt over NCCL, 2 ranks straight to step 4" 240 0 "done:" ranks 2 "${gpt32[@]}" --steps 4 \
  --batch-size 4 --comm nccl --save "$work/reshard-straight"
expect "gpt over NCCL, 2 ranks with --zero 1 stop after step 2" 240 0 "done:" ranks 2 "${gpt32[@]}" \
  --steps 4 --batch-size 4 --zero 1 --stop-after 2 --comm nccl --save "$work/reshard-half"
expect "gpt over NCCL, resumed on 4 ranks with --zero 2" 240 0 "done:" ranks 4 "${gpt32[@]}" --steps 4 \
  --batch-size 2 --zero 2 --comm nccl --resume "$work/reshard-half" --save "$work/reshard-four"
/usr/bin/python3 - "$scripts" "$work" <<'PY' || failures=$((failures + 1))
import sys
sys.path.insert(0, sys.argv[1])
from nanogpt import read_safetensors
work = sys.argv[2]
want, _ = read_safetensors(f"{work}/reshard-straight/step-00000004/model.safetensors")
got, _ = read_safetensors(f"{work}/reshard-four/step-00000004/model.safetensors")
scale = max(float(t.abs().max()) for t in want.values())
apart = max(float((got[k] - want[k]).abs().max()) for k in want) / scale
ok = apart <= 1e-6
print(f"{'ok  ' if ok else 'FAIL'} resharded 2 -> 4 ranks over NCCL: weights {apart:.2e} (relative) from the straight run (<= 1e-6)")
sys.exit(0 if ok else 1)
PY
# The real NCCL cannot move the emulator's memory: refused in one line.
if [[ $real_nccl == 1 ]]; then
  expect "the real NCCL with --device simt" 60 nonzero "the real NCCL moves GPU memory only" \
    timeout 60 "$mpiexec" -n 2 --oversubscribe --bind-to none "$bin" "${mlp[@]}" --steps 6 --batch-size 8 --comm nccl
else
  echo "skipped: the real NCCL with --device simt (this build, without CUDA, links the stand-in in NCCL's place)"
fi
finish
