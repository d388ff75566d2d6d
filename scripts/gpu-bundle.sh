#!/usr/bin/env bash
# Prepares a GPU check from a machine without a GPU: builds halftape here (Release, sm_90 and
# sm_80, no emulator) and packs the binaries, the scripts they need and the shared libraries a
# bare CUDA machine lacks (fmt, OpenBLAS, Boost.Context, OpenMPI's libraries) into
# .gpu-bundle/bundle.tar.gz (git-ignored). scripts/gpu-check.sh on the GPU machine unpacks it;
# the CUDA libraries themselves (cudart, cuBLASLt, NCCL) come from that machine.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=${HALFTAPE_JOBS:-$(nproc)}
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DHALFTAPE_SIMT=OFF \
      "-DCMAKE_CUDA_ARCHITECTURES=80;90" >/dev/null
ninja -C build-gpu -j "$jobs" halftape halftape_tests

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/halftape/bin" "$stage/halftape/lib" "$stage/halftape/scripts" "$stage/halftape/bench"
cp build-gpu/halftape build-gpu/tests/halftape_tests "$stage/halftape/bin/"
cp scripts/bench_report.py scripts/pytorch_baseline.py scripts/plot_metrics.py scripts/nanogpt.py scripts/gpt_reference.py \
   "$stage/halftape/scripts/"
# The GPT's corpus (scripts/setup.sh builds it here); the GPU machine has no Debian datasets.
mkdir -p "$stage/halftape/data"
cp /usr/share/datasets/shakespeare/shakespeare.txt "$stage/halftape/data/"
cp bench/schema.json "$stage/halftape/bench/"
# Every shared library the binaries use, except the C/C++ runtime and the CUDA libraries
# (the GPU machine has its own, matched to its driver).
skip='^(linux-vdso|ld-linux|libc\.|libm\.|libstdc\+\+|libgcc_s|libdl\.|libpthread|librt\.|libcuda|libcudart|libcublas|libnccl)'
for bin in build-gpu/halftape build-gpu/tests/halftape_tests; do
  ldd "$bin" | awk '/=>/ {print $1, $3}'
done | sort -u | while read -r name path; do
  [[ $name =~ $skip ]] && continue
  cp -L "$path" "$stage/halftape/lib/$name"
done
git rev-parse HEAD > "$stage/halftape/COMMIT" 2>/dev/null || echo unknown > "$stage/halftape/COMMIT"
mkdir -p .gpu-bundle
tar czf .gpu-bundle/bundle.tar.gz -C "$stage" halftape
echo "gpu-bundle: .gpu-bundle/bundle.tar.gz ($(du -h .gpu-bundle/bundle.tar.gz | cut -f1)); carry .gpu-bundle and run scripts/gpu-check.sh"
