#!/usr/bin/env bash
# `halftape profile --kernel`: the model held against published GPU measurements of kernels of
# the same kind, each within the band docs/performance-model.md states, and ranking designs the
# way it must (the first wgmma GEMM design below today's). Every figure here is MODELLED; the
# published ones are others' measurements (sources in the table below and in the doc).
#   tests/model_bands.sh HALFTAPE_BINARY
set -euo pipefail
binary=$1
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
profile() {  # NAME GPU ARGS...
  local name=$1 gpu=$2
  shift 2
  "$binary" profile --gpu "$gpu" "$@" --json "$out/$name.json" >"$out/$name.txt" || { cat "$out/$name.txt"; exit 1; }
  grep -q "MODELLED on $gpu" "$out/$name.txt" || { echo "$name: the table does not say it is modelled"; exit 1; }
}
profile gemm4096 h100 --kernel gemm --shape 4096,4096,4096 --precision bf16
profile gemm4096-first h100 --kernel gemm --shape 4096,4096,4096 --precision bf16 --gemm-design first
profile gemm8192 h100 --kernel gemm --shape 8192,8192,8192 --precision bf16
profile copy-h100 h100 --kernel copy --shape 67108864 --precision bf16
profile copy-h200 h200 --kernel copy --shape 67108864 --precision bf16
profile attention-d128 h100 --kernel attention --shape 4,4096,16,128 --precision bf16
profile attention-d64 h100 --kernel attention --shape 4,4096,32,64 --precision bf16

# Bad flags: one error line each, a non-zero exit.
refuse() {  # WHAT-THE-ERROR-SAYS ARGS...
  local says=$1
  shift
  if "$binary" profile "$@" >"$out/err.txt" 2>&1; then echo "profile $* was accepted"; exit 1; fi
  grep -q -- "$says" "$out/err.txt" || { echo "profile $*: the error does not say '$says'"; cat "$out/err.txt"; exit 1; }
}
refuse "needs --shape" --gpu h100 --kernel gemm
refuse "three\|3 positive integers" --gpu h100 --kernel gemm --shape 64,64
refuse "only with --kernel" --gpu h100 --shape 64,64,64
refuse "is for --kernel copy" --gpu h100 --kernel gemm --shape 64,64,64 --unaligned
refuse "a flag of a training step" --gpu h100 --kernel copy --shape 1024 --model gpt
# --measure beside an earlier profile (--modelled, for a GPU build without the emulator): the
# file checked before anything runs - and then, with a matching profile, no GPU here.
refuse "it is --measure's" --gpu h100 --kernel copy --shape 1024 --modelled "$out/copy-h100.json"
refuse "it is --measure's" --gpu h100 --model mlp --modelled "$out/copy-h100.json"
refuse "cannot read it" --gpu h100 --kernel copy --shape 1024 --measure --modelled "$out/none.json"
refuse "it models the h100, not the h200" --gpu h200 --kernel copy --shape 67108864 --measure --modelled "$out/copy-h100.json"
refuse "it models shape 67108864, not the shape 1024" --gpu h100 --kernel copy --shape 1024 --measure --modelled "$out/copy-h100.json"
echo '{"incomplete": "x"}' >"$out/unfinished.json"
refuse "did not finish" --gpu h100 --model mlp --measure --modelled "$out/unfinished.json"
echo '{}' >"$out/empty.json"
refuse "not a profile's JSON" --gpu h100 --model mlp --measure --modelled "$out/empty.json"
if ! nvidia-smi -L >/dev/null 2>&1; then
  refuse "no GPU here" --gpu h100 --kernel copy --shape 1024 --measure
  refuse "no GPU here" --gpu h100 --model mlp --measure
  refuse "no GPU here" --gpu h100 --kernel copy --shape 67108864 --precision bf16 --measure --modelled "$out/copy-h100.json"
fi

/usr/bin/python3 - "$out" <<'PY'
import json, sys
out = sys.argv[1]
def load(name):
    p = json.load(open(f"{out}/{name}.json"))
    assert p["modelled"] is True, name
    for k in p["kernels"]:
        assert k["modelled_us"] > 0 and k["bound"] in ("memory", "l2", "latency", "tensor", "sfu", "shared", "launch"), k
    return p
# Published measurements (others', on real GPUs) and the band the model must keep around them.
# Sources: docs/performance-model.md, "Held against published figures".
bands = [
    ("gemm8192", "tflops", 790, 800, 0.15, "cuBLAS bf16 GEMM 8192^3, H100 SXM"),
    ("gemm4096", "tflops", 716, 716, 0.15, "cuBLAS bf16 GEMM 4096^3, H100 SXM"),
    ("copy-h100", "gbps", 3000, 3000, 0.10, "device-to-device copy, H100 SXM"),
    ("copy-h200", "gbps", 4300, 4300, 0.10, "device-to-device copy, H200 SXM"),
    ("attention-d128", "tflops", 300, 335, 0.30, "FlashAttention-2 causal forward, head 128, H100 SXM"),
    ("attention-d64", "tflops", 280, 325, 0.30, "FlashAttention-2 causal forward, head 64, H100 SXM"),
]
for name, key, low, high, band, what in bands:
    v = load(name)[key]
    ok = low * (1 - band) <= v <= high * (1 + band)
    print(f"{name:16} MODELLED {v:7.0f} {key:6} | published {low}-{high} ({what}), band +-{band:.0%}: {'inside' if ok else 'OUTSIDE'}")
    assert ok, (name, v, low, high, band)
# It ranks designs: the first wgmma design (128-wide tiles, a block a tile, wait_group 0 every
# K-tile) models measurably slower than today's at 4096^3, and the emulator saw why.
today, first = load("gemm4096"), load("gemm4096-first")
assert first["modelled_us"] > 1.10 * today["modelled_us"], (first["modelled_us"], today["modelled_us"])
kt, kf = today["kernels"][0], first["kernels"][0]
assert kf["wgmma_drains"] > 10 * kt["wgmma_drains"], (kf["wgmma_drains"], kt["wgmma_drains"])  # a drain every K-tile
assert kt["bytes_in_flight_per_sm"] >= 2 * 48 * 1024, kt  # at least two of its 48 KiB stages ahead of the consumers
print(f"first wgmma design {first['modelled_us']:.0f} us vs today's {today['modelled_us']:.0f} us MODELLED at 4096^3")
PY
