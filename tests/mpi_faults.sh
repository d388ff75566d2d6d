#!/usr/bin/env bash
# A rank that dies or hangs mid-run must end the whole job with a clear error, never a hang.
#   tests/mpi_faults.sh MPIEXEC HALFTAPE_BINARY
set -uo pipefail
mpiexec=$1 binary=$2
out=$(mktemp)
trap 'rm -f "$out"' EXIT
train=("$binary" train --device cpu --data synthetic --synthetic-features 32 --hidden 16 --batch-size 8
       --steps 200 --log-every 10 --no-progress)

expect_failure() {  # NAME LIMIT_SECONDS PATTERN ARGS...
  local name=$1 limit=$2 pattern=$3
  shift 3
  local start=$SECONDS
  timeout 240 "$mpiexec" -n 2 --oversubscribe --bind-to none "${train[@]}" "$@" >"$out" 2>&1
  local rc=$? elapsed=$((SECONDS - start))
  if [[ $rc -eq 0 ]]; then echo "FAIL $name: the job succeeded"; cat "$out"; exit 1; fi
  if [[ $rc -eq 124 || $elapsed -gt $limit ]]; then echo "FAIL $name: took ${elapsed}s (limit ${limit}s)"; cat "$out"; exit 1; fi
  if ! grep -Eq "$pattern" "$out"; then echo "FAIL $name: no message matching '$pattern'"; cat "$out"; exit 1; fi
  echo "ok   $name: exit $rc after ${elapsed}s: $(grep -Em1 "$pattern" "$out")"
}

# SIGKILL on rank 1: mpirun sees the process die and ends the job, naming the rank.
expect_failure "killed rank" 60 "rank 1.*(signal 9|Killed)|exited on signal 9" --inject-crash 5:1
# Rank 1 stops answering: rank 0's next collective times out and aborts the job.
expect_failure "hung rank" 60 "rank 0 of 2: .*allreduce.* did not complete within 3 s" --inject-hang 5:1 --comm-timeout 3
# The same under --zero 2, where a step's gradients travel as bucket reduce-scatters: a rank that
# stops answering leaves the others in one, which must say so.
expect_failure "hung rank under --zero 2" 60 "rank 0 of 2: .*reduce-scatter.* did not complete within 3 s" --inject-hang 5:1 \
  --comm-timeout 3 --zero 2
expect_failure "killed rank under --zero 2" 60 "rank 1.*(signal 9|Killed)|exited on signal 9" --inject-crash 5:1 --zero 2
