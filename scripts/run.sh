#!/usr/bin/env bash
# A fresh machine to a trained model: installs the dependencies, builds, and trains the
# default MLP on Fashion-MNIST in fp16 with dynamic loss scaling. Extra arguments go to
# `halftape train` (e.g. --device cuda, --epochs 10, --metrics run.jsonl).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh
exec build/halftape train --precision fp16 "$@"
