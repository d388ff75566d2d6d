#!/usr/bin/env bash
# Compiles the tensor-core GEMM for sm_80 and sm_90 with `nvcc -Xptxas -v` and fails if any of
# its kernels has a stack frame or spills registers. Prints the resource report.
#   tests/ptxas_report.sh NVCC SOURCE_DIR
set -euo pipefail
nvcc=$1 src=$2
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
status=0
for arch in 80 90; do
  "$nvcc" -std=c++20 --expt-relaxed-constexpr -I"$src" -arch=sm_$arch -Xptxas -v -cubin \
    -o "$out/gemm_$arch.cubin" "$src/kernels/gemm_mma_f16.cu" 2>"$out/ptxas_$arch.txt"
  # Pair each "Compiling entry function" line with the resource lines that follow it.
  awk -v arch="sm_$arch" '
    /Compiling entry function/ { fn = $0; sub(/.*function ./, "", fn); sub(/. for .*/, "", fn) }
    /stack frame/ { frame = $0 }
    /Used [0-9]+ registers/ && fn ~ /gemm_mma_kernel/ {
      printf "%s %s: %s |%s\n", arch, fn, $0, frame
      if (frame !~ /0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads/) bad = 1
    }
    END { exit bad }' "$out/ptxas_$arch.txt" | sed 's/ptxas info *: //' || status=1
done
exit $status
