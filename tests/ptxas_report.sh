#!/usr/bin/env bash
# The compiler's own evidence on the tensor-core GEMMs: compiles the mma.sync kernel for sm_80
# and sm_90 and the wgmma kernel for sm_90a with `nvcc -Xptxas -v`, and fails if any of them has
# a stack frame or spills registers; then reads the wgmma kernel's SASS (cuobjdump, which
# scripts/setup.sh installs) and fails unless each K-tile is the four HGMMA.64x128x16 the source
# asks for, behind one wgmma fence (WARPGROUP.ARRIVE), followed by a wait that leaves one batch
# in flight (WARPGROUP.DEPBAR.LE gsb0, 0x1), with the one full wait (0x0) after the loop.
# Prints the resource report and the instruction counts.
#   tests/ptxas_report.sh NVCC SOURCE_DIR CUOBJDUMP
set -euo pipefail
nvcc=$1 src=$2 cuobjdump=${3:-}
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

# The Hopper kernel (sm_90a only).
"$nvcc" -O3 -std=c++20 --expt-relaxed-constexpr -I"$src" -gencode=arch=compute_90a,code=sm_90a -Xptxas -v -cubin \
  -o "$out/wgmma.cubin" "$src/kernels/gemm_wgmma.cu" 2>"$out/ptxas_90a.txt"
awk '
  /Compiling entry function/ { fn = $0; sub(/.*function ./, "", fn); sub(/. for .*/, "", fn) }
  /stack frame/ { frame = $0 }
  /Used [0-9]+ registers/ && fn ~ /gemm_wgmma_kernel/ {
    printf "sm_90a %s: %s |%s\n", fn, $0, frame; n++
    if (frame !~ /0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads/) bad = 1
  }
  END { if (n != 2) { print "FAIL: expected the fp16 and bf16 wgmma kernels, found " n; bad = 1 } exit bad }' \
  "$out/ptxas_90a.txt" | sed 's/ptxas info *: //' || status=1
if [[ ! -x $cuobjdump ]]; then
  echo "FAIL: no cuobjdump ('$cuobjdump'): scripts/setup.sh installs it"; exit 1
fi
NVDISASM_PATH=$(dirname "$cuobjdump") "$cuobjdump" -sass "$out/wgmma.cubin" >"$out/wgmma.sass"
awk '
  /Function :/ { fn = $3; kernels++ }
  fn != "" && /HGMMA\.64x128x16/ { hgmma[fn]++ }
  fn != "" && /WARPGROUP\.ARRIVE/ { arrive[fn]++ }
  fn != "" && /WARPGROUP\.DEPBAR\.LE gsb0, 0x1/ { inflight[fn]++ }
  fn != "" && /WARPGROUP\.DEPBAR\.LE gsb0, 0x0/ { drain[fn]++ }
  END {
    for (f in hgmma) {
      printf "sm_90a SASS %s: %d HGMMA.64x128x16, %d WARPGROUP.ARRIVE, %d WARPGROUP.DEPBAR.LE gsb0 0x1, %d 0x0\n", f, hgmma[f],
             arrive[f], inflight[f], drain[f]
      if (hgmma[f] != 4 || arrive[f] != 1 || inflight[f] != 1 || drain[f] != 1) bad = 1
    }
    if (kernels != 2 || length(hgmma) != 2) { print "FAIL: expected two wgmma kernels with HGMMA in the SASS"; bad = 1 }
    exit bad
  }' "$out/wgmma.sass" || status=1
exit $status
