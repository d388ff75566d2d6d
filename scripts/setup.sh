#!/usr/bin/env bash
# Installs every Debian package the build, the tests and the scripts need. Idempotent.
# The CUDA toolkit (/usr/local/cuda) is optional and not installed here: without it the
# build is CPU-only (no SIMT emulator, no CUDA backend).
set -euo pipefail

packages=(
  cmake ninja-build g++ pkg-config
  libfmt-dev libcli11-dev catch2 nlohmann-json3-dev zlib1g-dev
  libopenblas-dev libopenmpi-dev openmpi-bin libboost-context-dev
  dataset-fashion-mnist python3-matplotlib python3-numpy python3-jsonschema
  clang libclang-rt-14-dev
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if ((${#missing[@]})); then
  sudo_cmd=()
  [[ $(id -u) -eq 0 ]] || sudo_cmd=(sudo)
  echo "setup: installing ${missing[*]}"
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
else
  echo "setup: all ${#packages[@]} packages present"
fi
