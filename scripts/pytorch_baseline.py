#!/usr/bin/env python3
"""The same training step as `halftape bench train`, in PyTorch: the same MLPs, batch shapes,
optimizer (AdamW) and precision, with torch.amp autocast + GradScaler, eager and under
torch.compile, and under DDP when started by torchrun (or mpirun with the PyTorch env vars).
Each step is timed as halftape times its own: CUDA events around one step, after warm-up
steps, the median (and p10/p90) of the timed repeats. Writes JSON that
scripts/bench_report.py sets side by side with halftape's (matching benchmark names).

    python3 scripts/pytorch_baseline.py --json pytorch.json [--quick] [--no-compile]

Needs PyTorch with CUDA (the GPU machines carry it); run with the interpreter that has it.
"""
import argparse
import json
import os
import statistics
import sys
import time


def shapes(quick):
    if quick:
        return [("mlp 64-32-10 (quick)", 64, [32], 16)]
    return [("mlp 784-512-512-10", 784, [512, 512], 128), ("wide mlp 4096x3", 4096, [4096, 4096, 4096], 4096)]


def build_model(torch, features, hidden, classes, activation):
    nn = torch.nn

    class Mlp(nn.Module):  # the same parameter names and shapes as halftape's safetensors
        def __init__(self):
            super().__init__()
            sizes = [features] + hidden + [classes]
            self.layers = nn.ModuleList(nn.Linear(a, b) for a, b in zip(sizes[:-1], sizes[1:]))

        def forward(self, x):
            for i, layer in enumerate(self.layers):
                x = layer(x)
                if i + 1 < len(self.layers):
                    x = nn.functional.gelu(x, approximate="tanh") if activation == "gelu" else torch.relu(x)
            return x

    return Mlp()


def percentile(values, q):
    v = sorted(values)
    pos = q * (len(v) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(v) - 1)
    return v[lo] + (v[hi] - v[lo]) * (pos - lo)


def time_steps(torch, step, warmup, repeats):
    for _ in range(warmup):
        step()
    torch.cuda.synchronize()
    times = []
    for _ in range(repeats):
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        step()
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop))
    return times


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--json", required=True)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--no-compile", action="store_true", help="skip the torch.compile variant")
    ap.add_argument("--precisions", default="fp16,bf16,fp32")
    args = ap.parse_args()

    import torch

    if not torch.cuda.is_available():
        sys.exit("pytorch_baseline.py: no CUDA device: PyTorch's numbers would mean nothing here")
    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    if world > 1:
        import torch.distributed as dist

        dist.init_process_group("nccl")
        torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))
    device = torch.device("cuda")
    dtypes = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": None}
    results = []
    for name, features, hidden, batch in shapes(args.quick):
        for precision in args.precisions.split(","):
            for variant in ["eager"] + ([] if args.no_compile else ["compile"]):
                torch.manual_seed(0)
                model = build_model(torch, features, hidden, 10, "relu").to(device)
                if world > 1:
                    model = torch.nn.parallel.DistributedDataParallel(model)
                optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01, fused=True)
                scaler = torch.amp.GradScaler("cuda", enabled=precision == "fp16")
                # The data set on the device as u8, batches gathered per step, as halftape does.
                steps = args.warmup + args.repeats + 1
                images = torch.randint(0, 256, (batch * steps, features), dtype=torch.uint8, device=device)
                labels = torch.randint(0, 10, (batch * steps,), device=device)
                cursor = [0]

                def loss_of(x, y):
                    with torch.autocast("cuda", dtype=dtypes[precision], enabled=dtypes[precision] is not None):
                        return torch.nn.functional.cross_entropy(model(x), y)

                compiled = torch.compile(loss_of) if variant == "compile" else loss_of

                def step():
                    rows = slice(cursor[0] * batch, (cursor[0] + 1) * batch)
                    cursor[0] = (cursor[0] + 1) % steps
                    x = images[rows].float() / 255.0
                    loss = compiled(x, labels[rows])
                    scaler.scale(loss).backward()
                    scaler.unscale_(optimizer)
                    scaler.step(optimizer)
                    scaler.update()
                    optimizer.zero_grad(set_to_none=True)

                t0 = time.time()
                times = time_steps(torch, step, args.warmup, args.repeats)
                med = statistics.median(times)
                results.append({
                    "name": f"train step {name} b{batch} {precision}",
                    "variant": variant,
                    "median_ms": med,
                    "p10_ms": percentile(times, 0.1),
                    "p90_ms": percentile(times, 0.9),
                    "samples_per_s": batch * world / (med * 1e-3),
                    "repeats": len(times),
                    "wall_s": time.time() - t0,
                })
                if rank == 0:
                    print(f"{results[-1]['name']:<46} {variant:<8} {med:9.4f} ms  {results[-1]['samples_per_s']:12.0f} samples/s",
                          flush=True)
    if rank == 0:
        with open(args.json, "w") as f:
            json.dump({"framework": "pytorch", "torch": torch.__version__, "device": torch.cuda.get_device_name(),
                       "world_size": world, "results": results}, f, indent=2)


if __name__ == "__main__":
    main()
