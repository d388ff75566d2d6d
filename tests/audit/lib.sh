# Helpers for the audit scripts (tests/audit/*.sh): run a command under a time limit and check
# its exit status, its time and a line of its output. Sourced, not run.
set -m  # background jobs get their own process group, so a stuck one can be killed whole
out=$(mktemp)
work=$(mktemp -d)
trap 'rm -rf "$out" "$work"' EXIT
failures=0

# expect NAME LIMIT_S STATUS PATTERN COMMAND...: STATUS is a number, or "nonzero".
expect() {
  local name=$1 limit=$2 want=$3 pattern=$4
  shift 4
  local start=$SECONDS
  "$@" >"$out" 2>&1 &  # (a shell function works here, unlike under timeout)
  local pid=$!
  while kill -0 "$pid" 2>/dev/null; do
    if ((SECONDS - start > limit + 30)); then kill -9 -- "-$pid" 2>/dev/null; break; fi
    sleep 0.2
  done
  wait "$pid"
  local rc=$? elapsed=$((SECONDS - start))
  local ok=1
  if [[ $want == nonzero ]]; then [[ $rc -ne 0 ]] || ok=0; else [[ $rc -eq $want ]] || ok=0; fi
  if [[ $ok -eq 0 ]]; then echo "FAIL $name: exit $rc, expected $want"; sed 's/^/     | /' "$out" | tail -20; failures=$((failures + 1)); return 1; fi
  if [[ $elapsed -gt $limit ]]; then echo "FAIL $name: took ${elapsed}s (limit ${limit}s)"; failures=$((failures + 1)); return 1; fi
  if ! grep -Eq -- "$pattern" "$out"; then
    echo "FAIL $name: no line matching '$pattern'"; sed 's/^/     | /' "$out" | tail -20; failures=$((failures + 1)); return 1
  fi
  echo "ok   $name: exit $rc after ${elapsed}s: $(grep -Em1 -- "$pattern" "$out" | cut -c1-150)"
}

# count_lines PATTERN: lines of the last command's output that match.
count_lines() { grep -Ec -- "$1" "$out"; }

finish() {
  if [[ $failures -gt 0 ]]; then echo "$failures check(s) failed"; exit 1; fi
  echo "all checks passed"
}
