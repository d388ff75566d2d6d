#!/usr/bin/env bash
# cmake/check_layers.cmake, held to account: includes that run back up a layer, however they
# are spelled, planted in a scratch tree, must each fail the check naming the file; the real
# tree must pass it.
#   tests/check_layers.sh CMAKE SOURCE_ROOT
set -uo pipefail
cmake=$1 root=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0
check() {  # check NAME FILE CONTENT: the check must fail, naming FILE
  local name=$1 file=$2 content=$3
  rm -rf "$work/tree" && mkdir -p "$work/tree/$(dirname "$file")" && printf '%s\n' "$content" >"$work/tree/$file"
  if out=$("$cmake" -DROOT="$work/tree" -P "$root/cmake/check_layers.cmake" 2>&1); then
    echo "FAIL $name: accepted"; failures=$((failures + 1))
  elif ! grep -q "$file: .* may include only" <<<"$out"; then
    echo "FAIL $name: refused without naming $file:"; echo "$out" | sed 's/^/     | /'; failures=$((failures + 1))
  else
    echo "ok   $name"
  fi
}
check "simt/ includes kernels/" simt/simt.h '#include "kernels/cpu_dtype.h"'
check "indented, with a space after #" simt/scheduler.cpp '  #  include "kernels/launch.h"'
check "in angle brackets" simt/runtime.h '#include <kernels/gpu.h>'
check "through ../" simt/hopper.cpp '#include "../kernels/ptx_sm90.cuh"'
check "kernels/ includes engine/" kernels/gemm.cu '#include "engine/tensor.h"'
check "ground/ includes simt/" ground/dtype.h '#include "simt/simt.h"'
check "engine/ includes models/" engine/gpu/x.cpp '#include "models/gpt.h"'
mkdir -p "$work/ok/simt" && printf '#include "ground/error.h"\n#include <cuda_fp16.h>\n#include <boost/context/fiber.hpp>\n' >"$work/ok/simt/a.h"
if "$cmake" -DROOT="$work/ok" -P "$root/cmake/check_layers.cmake" >/dev/null 2>&1; then echo "ok   allowed includes pass"
else echo "FAIL allowed includes refused"; failures=$((failures + 1)); fi
if out=$("$cmake" -DROOT="$root" -P "$root/cmake/check_layers.cmake" 2>&1); then echo "ok   the source tree passes"
else echo "FAIL the source tree:"; echo "$out"; failures=$((failures + 1)); fi
[[ $failures -eq 0 ]] || { echo "$failures check(s) failed"; exit 1; }
