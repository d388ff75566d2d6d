#!/usr/bin/env python3
"""The same training steps as `halftape bench train`, in PyTorch: the same MLPs and GPTs
(scripts/nanogpt.py), batch shapes, optimizer (AdamW; the GPT's with weight decay on 2-D
weights and gradient clipping at 1.0, as halftape's bench runs it) and precision. On a GPU:
torch.amp autocast + GradScaler, eager and under torch.compile (PyTorch 2), and DDP when started
by torchrun. On the CPU (--device cpu): fp32, eager, torch.set_num_threads(--threads); 1 is
fastest on small machines. Each step is timed as halftape times its own - CUDA events (or the
wall clock on the CPU) around one step, after warm-up steps, the median (and p10/p90) of the
timed repeats - and named as halftape names it, so that `halftape bench --pytorch` and
scripts/bench_report.py set the two side by side.

    python3 scripts/pytorch_baseline.py --json pytorch.json [--device cpu] [--quick] [--no-compile]

Run it with the interpreter that has PyTorch (/usr/bin/python3 here, Debian's 1.13).
"""
import argparse
import json
import math
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def workloads(quick, device):
    """(name, kind, shape, batch) as bench/train_bench.cpp lists them."""
    if quick:
        return [("mlp 64-32-10 (quick)", "mlp", (64, [32]), 16), ("gpt 1x32 t16 (quick)", "gpt", (1, 2, 32, 16), 4)]
    w = [("mlp 784-512-512-10", "mlp", (784, [512, 512]), 128), ("gpt 4x128 t64", "gpt", (4, 4, 128, 64), 12)]
    if device == "cuda":
        w += [("wide mlp 4096x3", "mlp", (4096, [4096, 4096, 4096]), 4096), ("gpt 6x384 t256", "gpt", (6, 6, 384, 256), 64)]
    return w


def build_mlp(torch, features, hidden, classes):
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
                    x = torch.relu(x)
            return x

    return Mlp()


def percentile(values, q):
    v = sorted(values)
    pos = q * (len(v) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(v) - 1)
    return v[lo] + (v[hi] - v[lo]) * (pos - lo)


def time_steps(torch, step, warmup, repeats, cuda):
    for _ in range(warmup):
        step()
    if cuda:
        torch.cuda.synchronize()
    times = []
    for _ in range(repeats):
        if cuda:
            start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            step()
            stop.record()
            stop.synchronize()
            times.append(start.elapsed_time(stop))
        else:
            t0 = time.perf_counter()
            step()
            times.append(1e3 * (time.perf_counter() - t0))
    return times


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--json", required=True)
    ap.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--threads", type=int, default=1, help="CPU: torch.set_num_threads")
    ap.add_argument("--no-compile", action="store_true", help="skip the torch.compile variant")
    ap.add_argument("--variants", default="eager,compile", help="which of eager,compile to run (compile: on a GPU only)")
    ap.add_argument("--precisions", default=None, help="default: fp16,bf16,fp32 on a GPU, fp32 on the CPU")
    args = ap.parse_args()

    import torch
    import nanogpt

    cuda = args.device == "cuda"
    if cuda and not torch.cuda.is_available():
        sys.exit("pytorch_baseline.py: no CUDA device: PyTorch's GPU numbers would mean nothing here")
    if not cuda:
        torch.set_num_threads(args.threads)
    precisions = (args.precisions or ("fp16,bf16,fp32" if cuda else "fp32")).split(",")
    compile_ok = cuda and not args.no_compile and hasattr(torch, "compile")
    variants = [v for v in args.variants.split(",") if v == "eager" or (v == "compile" and compile_ok)]
    if not variants:
        sys.exit(f"pytorch_baseline.py: --variants {args.variants}: nothing to run here (compile needs a GPU and PyTorch 2)")
    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    if world > 1:
        import torch.distributed as dist

        dist.init_process_group("nccl")
        torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))
    device = torch.device("cuda" if cuda else "cpu")
    dtypes = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": None}
    results, errors = [], []

    def write():
        """The JSON so far, after every workload: a run stopped from outside keeps what finished."""
        if rank != 0:
            return
        threads = torch.get_num_threads()
        with open(args.json + ".tmp", "w") as f:
            json.dump({"framework": "pytorch", "torch": torch.__version__,
                       "device": torch.cuda.get_device_name() if cuda else f"cpu ({threads} thread{'' if threads == 1 else 's'})",
                       "world_size": world, "results": results, "errors": errors}, f, indent=2)
        os.replace(args.json + ".tmp", args.json)

    for name, kind, shape, batch in workloads(args.quick, args.device):
        for precision in precisions:
            for variant in variants:
                torch.manual_seed(0)
                steps = args.warmup + args.repeats + 1
                if kind == "mlp":
                    features, hidden = shape
                    model = build_mlp(torch, features, hidden, 10).to(device)
                    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01, **({"fused": True} if cuda else {}))
                    # The data set on the device as u8, batches gathered per step, as halftape does.
                    images = torch.randint(0, 256, (batch * steps, features), dtype=torch.uint8, device=device)
                    labels = torch.randint(0, 10, (batch * steps,), device=device)

                    def batch_of(i):
                        rows = slice(i * batch, (i + 1) * batch)
                        return images[rows].float() / 255.0, labels[rows]
                    clip, rows_per_step, unit = 0.0, batch, "samples"
                else:
                    n_layer, n_head, n_embd, block = shape
                    model = nanogpt.GPT(84, block, n_layer, n_head, n_embd).to(device)
                    opt = model.optimizer(1e-3, (0.9, 0.99), 0.1)
                    tokens = torch.randint(0, 84, (batch * block * steps + block + 1,), device=device)

                    def batch_of(i):
                        starts = torch.randint(0, tokens.numel() - block - 1, (batch,), device=device)
                        offsets = starts[:, None] + torch.arange(block, device=device)[None, :]
                        return tokens[offsets], tokens[offsets + 1]
                    clip, rows_per_step, unit = 1.0, batch * block, "tokens"
                if world > 1:
                    model = torch.nn.parallel.DistributedDataParallel(model)
                scaler = torch.cuda.amp.GradScaler(enabled=cuda and precision == "fp16")
                cursor = [0]

                def loss_of(x, y):
                    with torch.autocast(args.device, dtype=dtypes[precision], enabled=dtypes[precision] is not None):
                        out = model(x)
                        logits = out[0] if isinstance(out, tuple) else out
                        return torch.nn.functional.cross_entropy(logits.reshape(-1, logits.size(-1)).float(), y.reshape(-1))

                compiled = torch.compile(loss_of) if variant == "compile" else loss_of

                def step():
                    x, y = batch_of(cursor[0])
                    cursor[0] = (cursor[0] + 1) % steps
                    loss = compiled(x, y)
                    scaler.scale(loss).backward()
                    scaler.unscale_(opt)
                    if clip > 0:
                        torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
                    scaler.step(opt)
                    scaler.update()
                    opt.zero_grad(set_to_none=True)

                t0 = time.time()
                try:
                    times = time_steps(torch, step, args.warmup, args.repeats, cuda)
                except Exception as e:  # a torch.compile failure, say: said, and the next variant runs
                    errors.append({"name": f"train step {name} b{batch} {precision}", "variant": variant,
                                   "error": f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"})
                    print(f"pytorch_baseline.py: {errors[-1]['name']} ({variant}) failed: {errors[-1]['error']}",
                          file=sys.stderr, flush=True)
                    write()
                    continue
                med = statistics.median(times)
                results.append({
                    "name": f"train step {name} b{batch} {precision}",
                    "variant": variant,
                    "median_ms": med,
                    "p10_ms": percentile(times, 0.1),
                    "p90_ms": percentile(times, 0.9),
                    f"{unit}_per_s": rows_per_step * world / (med * 1e-3),
                    "repeats": len(times),
                    "wall_s": time.time() - t0,
                })
                if rank == 0:
                    print(f"{results[-1]['name']:<46} {variant:<8} {med:9.4f} ms", flush=True)
                write()


if __name__ == "__main__":
    main()
