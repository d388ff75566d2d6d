#!/usr/bin/env bash
# cmake/check_layers.cmake, held to account: includes that run back up a layer, however they
# are spelled, planted in a scratch tree, must each fail the check naming the file; so must a
# link graph in which a kernels/ target links an engine/ one; the real tree and the build's real
# link graph must pass it.
#   tests/check_layers.sh CMAKE SOURCE_ROOT LINK_GRAPH
set -uo pipefail
cmake=$1 root=$2 graph=$3
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
mkdir -p "$work/empty"
printf 'ht_kernels_simt: ht_kernels,ht_simt_runtime\nht_kernels_cuda: ht_kernels,ht_engine_core,CUDA::cudart\n' >"$work/graph.txt"
if out=$("$cmake" -DROOT="$work/empty" -DLINK_GRAPH="$work/graph.txt" -P "$root/cmake/check_layers.cmake" 2>&1); then
  echo "FAIL a kernels/ target linking engine/: accepted"; failures=$((failures + 1))
elif ! grep -q "link: ht_kernels_cuda (kernels/) links ht_engine_core (engine/)" <<<"$out"; then
  echo "FAIL a kernels/ target linking engine/: refused without naming it:"; echo "$out" | sed 's/^/     | /'; failures=$((failures + 1))
else
  echo "ok   a kernels/ target linking engine/ is refused"
fi
[[ -s $graph ]] || { echo "FAIL no link graph at $graph"; failures=$((failures + 1)); }
if out=$("$cmake" -DROOT="$root" -DLINK_GRAPH="$graph" -P "$root/cmake/check_layers.cmake" 2>&1); then echo "ok   the source tree and its link graph pass"
else echo "FAIL the source tree:"; echo "$out"; failures=$((failures + 1)); fi
[[ $failures -eq 0 ]] || { echo "$failures check(s) failed"; exit 1; }
