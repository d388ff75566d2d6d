#!/usr/bin/env bash
# Installs the dependencies, builds, and runs every test (ctest: unit, emulator, CLI and
# mpiexec tests), then the sanitizer build of the CPU and emulator tests.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh
jobs=${HALFTAPE_JOBS:-$(nproc)}
ctest --test-dir build --output-on-failure -j "$jobs"
