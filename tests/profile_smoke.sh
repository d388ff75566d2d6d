#!/usr/bin/env bash
# `halftape profile` on a tiny GPT and MLP: the table and its JSON, every kernel with its counters
# and a modelled time, the step's modelled figures labelled as such; in a build with nvcc, every
# kernel with the compiler's registers and an occupancy.
#   tests/profile_smoke.sh HALFTAPE_BINARY EXPECT_RESOURCES(1|0)
set -euo pipefail
binary=$1 expect_resources=$2
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
tiny_gpt=(--model gpt --n-layer 1 --n-head 2 --n-embd 32 --block-size 16 --batch-size 4)
# (no --steps: the profile's own 2 counted steps, not the GPT recipe's 2000; 2 worker threads, whose
# 8 blocks at most a grid-stride launch would get if the emulator reported its own SM count)
HALFTAPE_SIMT_THREADS=2 "$binary" profile --gpu h100 "${tiny_gpt[@]}" --json "$out/gpt.json" >"$out/gpt.txt"
"$binary" profile --gpu a100 --model mlp --data synthetic --hidden 32 --batch-size 32 --json "$out/mlp.json" >"$out/mlp.txt"
grep -q "MODELLED on h100" "$out/gpt.txt" || { echo "the table does not say it is modelled"; cat "$out/gpt.txt"; exit 1; }
/usr/bin/python3 - "$expect_resources" "$out/gpt.json" "$out/mlp.json" <<'PY'
import json, sys
need = ["name", "launches", "flops", "dram_bytes", "sectors_per_request", "sector_efficiency",
        "shared_wavefronts_per_request", "shared_bank_conflicts", "registers", "occupancy", "spill_bytes", "modelled_us", "bound"]
expect_resources = sys.argv[1] == "1"
for path, must in zip(sys.argv[2:], [["gemm_wgmma_kernel", "attention_forward_kernel", "layernorm_kernel", "adamw_kernel"],
                                    ["gemm_mma_kernel", "adamw_kernel"]]):
    p = json.load(open(path))
    assert p["modelled"] is True and p["modelled_step_ms"] > 0, (path, p.get("modelled_step_ms"))
    assert p["counted_steps"] == 2, (path, p["counted_steps"])
    assert p["gpu"]["sms"] == {"h100": 132, "a100": 108}[p["gpu"]["name"]], p["gpu"]
    names = [k["name"] for k in p["kernels"]]
    for k in p["kernels"]:
        missing = [key for key in need if key not in k]
        assert not missing, (path, k["name"], missing)
        assert k["modelled_us"] > 0 and k["bound"] in ("memory", "l2", "latency", "tensor", "sfu", "shared", "launch"), k
        if expect_resources:  # the compiler's figures joined to every counted kernel by its name
            assert k["registers"] is not None and 0 < k["registers"] <= 255, (path, k["name"], k["registers"])
            assert k["occupancy"] is not None and 0 < k["occupancy"] <= 1, (path, k["name"], k["occupancy"])
            assert k["compiled"]["occupancy_limited_by"] in ("registers", "shared", "warps", "blocks"), (path, k["compiled"])
            # the bytes its SASS stores to local memory: none in the fp16 step's kernels
            assert k["spill_bytes"] == 0 or "__half" not in k["name"], (path, k["name"], k["spill_bytes"])
    for m in must:
        assert any(m in n for n in names), (path, m, names)
    # grids sized by the modelled GPU's SMs (HALFTAPE_SIMT_SMS): AdamW's grid-stride launch covers
    # the tiny GPT's arena (tens of blocks), not 4 blocks a worker thread
    adamw = [k for k in p["kernels"] if k["name"].startswith("adamw_kernel")]
    assert not path.endswith("gpt.json") or adamw[0]["blocks_per_launch"] > 8, adamw
    assert sum(k["flops"] for k in p["kernels"]) > 0, path
    print(path, len(names), "kernels", round(p["modelled_step_ms"], 4), "ms modelled")
PY
