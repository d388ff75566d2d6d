#!/usr/bin/env bash
# The docs check (scripts/check_docs.py): today's docs name nothing the code lacks, and a doc that
# names a vanished kernel, a flag no command has or a CMake target that does not exist fails it.
#   tests/check_docs.sh REPO
set -euo pipefail
repo=$(cd "$1" && pwd)
/usr/bin/python3 "$repo/scripts/check_docs.py" "$repo"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for entry in "$repo"/*; do [[ $(basename "$entry") == docs || $(basename "$entry") == README.md ]] || ln -s "$entry" "$work/"; done
mkdir "$work/docs"
cat >"$work/README.md" <<'MD'
Run `halftape train --steps 3`; the step's kernels include `gemm_split_reduce`.
MD
cat >"$work/docs/stale.md" <<'MD'
Built as `ht_cli`; try `--no-such-flag`.
MD
if /usr/bin/python3 "$repo/scripts/check_docs.py" "$work" >"$work/out.txt"; then
  echo "check_docs.sh: stale names passed the check"; cat "$work/out.txt"; exit 1
fi
for want in "gemm_split_reduce is named nowhere in the code" "CMake target ht_cli does not exist" \
            "flag --no-such-flag is in no command or script"; do
  grep -q -- "$want" "$work/out.txt" || { echo "check_docs.sh: missed: $want"; cat "$work/out.txt"; exit 1; }
done
grep -q -- "--steps" "$work/out.txt" && { echo "check_docs.sh: a real flag was reported"; cat "$work/out.txt"; exit 1; }
echo "check_docs.sh: stale names caught: 3 of 3"
