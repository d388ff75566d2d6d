#!/usr/bin/env bash
# The wgmma GEMM's SASS, read from the built library (cuobjdump, which scripts/setup.sh
# installs): fails unless each of the six kernels (fp16, bf16: 128- and 256-wide tiles, HGMMA;
# FP8, E4M3 and E5M2 A: 128-wide, QGMMA.64x128x32) issues each K-tile as the four GMMA of its
# width behind one wgmma fence (WARPGROUP.ARRIVE),
# followed by a wait that leaves one batch in flight (WARPGROUP.DEPBAR.LE gsb0, 0x1), with the
# one full wait (0x0) after the K loop, and hands registers from the producer to the consumers
# (USETMAXREG.DEALLOC 40, USETMAXREG.TRY_ALLOC 232). Prints the instruction counts.
# (Registers, spills and occupancy of every kernel: tests/kernel_resources.py.)
#   tests/wgmma_sass.sh CUOBJDUMP LIBRARY
set -euo pipefail
cuobjdump=$1 library=$2
if [[ ! -x $cuobjdump ]]; then
  echo "FAIL: no cuobjdump ('$cuobjdump'): scripts/setup.sh installs it"; exit 1
fi
sass=$(mktemp)
trap 'rm -f "$sass"' EXIT
NVDISASM_PATH=$(dirname "$cuobjdump") PATH=$(dirname "$cuobjdump"):$PATH "$cuobjdump" -sass "$library" >"$sass"
awk '
  /Function :/ { fn = $3; kernels++; width[fn] = (fn ~ /Li256E/) ? 256 : 128; fp8[fn] = (fn ~ /Fp8Pair/) }
  fn != "" && /[HQ]GMMA\.64x[0-9]+x(16|32)/ { match($0, /[HQ]GMMA\.64x[0-9]+x(16|32)/); shape[fn] = substr($0, RSTART, RLENGTH); hgmma[fn]++ }
  fn != "" && /WARPGROUP\.ARRIVE/ { arrive[fn]++ }
  fn != "" && /WARPGROUP\.DEPBAR\.LE gsb0, 0x1/ { inflight[fn]++ }
  fn != "" && /WARPGROUP\.DEPBAR\.LE gsb0, 0x0/ { drain[fn]++ }
  fn != "" && /USETMAXREG\.DEALLOC\.CTAPOOL 0x28/ { dealloc[fn]++ }
  fn != "" && /USETMAXREG\.TRY_ALLOC\.CTAPOOL UP[0-9]+, 0xe8/ { alloc[fn]++ }
  END {
    for (f in hgmma) {
      printf "sm_90a SASS %s: %d %s, %d WARPGROUP.ARRIVE, %d WARPGROUP.DEPBAR.LE gsb0 0x1, %d 0x0, USETMAXREG %d dealloc 40 / %d alloc 232\n",
             f, hgmma[f], shape[f], arrive[f], inflight[f], drain[f], dealloc[f], alloc[f]
      want = fp8[f] ? "QGMMA.64x" width[f] "x32" : "HGMMA.64x" width[f] "x16"
      if (shape[f] != want || hgmma[f] != 4 || arrive[f] != 1 || inflight[f] != 1 || drain[f] != 1 ||
          dealloc[f] != 1 || alloc[f] != 1) bad = 1
    }
    if (kernels != 6 || length(hgmma) != 6) { print "FAIL: expected six wgmma kernels with HGMMA or QGMMA in the SASS"; bad = 1 }
    exit bad
  }' "$sass"
