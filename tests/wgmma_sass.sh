#!/usr/bin/env bash
# The wgmma GEMM's SASS, read from the built library (cuobjdump, which scripts/setup.sh
# installs): fails unless each K-tile of each kernel (fp16, bf16) is the four HGMMA.64x128x16
# the source asks for, behind one wgmma fence (WARPGROUP.ARRIVE), followed by a wait that leaves
# one batch in flight (WARPGROUP.DEPBAR.LE gsb0, 0x1), with the one full wait (0x0) after the
# loop. Prints the instruction counts. (Registers, spills and occupancy of every kernel:
# tests/kernel_resources.py.)
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
  }' "$sass"
