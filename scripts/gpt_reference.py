#!/usr/bin/python3
"""halftape's GPT held against PyTorch (scripts/nanogpt.py, a nanoGPT-style model):

  eval   --checkpoint DIR --data FILE [--windows N]
         loads a halftape --model gpt checkpoint into the PyTorch model and prints, as JSON, its
         validation loss on the first N non-overlapping windows of FILE's validation text (the
         windows halftape evaluates on);
  train  --data FILE [recipe flags]
         trains the same recipe in PyTorch (AdamW, decay on 2-D weights, linear warmup and cosine
         to --min-lr, gradient clipping, random windows) and prints the validation loss on the
         same windows and the median step time.

    /usr/bin/python3 scripts/gpt_reference.py eval --checkpoint ckpt --data /usr/share/datasets/shakespeare/shakespeare.txt
"""
import argparse
import json
import math
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="command", required=True)
    ev = sub.add_parser("eval")
    ev.add_argument("--checkpoint", required=True, help="a checkpoint directory (step-NNNNNNNN) or a --save directory")
    ev.add_argument("--data", required=True)
    ev.add_argument("--windows", type=int, default=2048)
    tr = sub.add_parser("train")
    tr.add_argument("--data", required=True)
    tr.add_argument("--n-layer", type=int, default=4)
    tr.add_argument("--n-head", type=int, default=4)
    tr.add_argument("--n-embd", type=int, default=128)
    tr.add_argument("--block-size", type=int, default=64)
    tr.add_argument("--batch-size", type=int, default=12)
    tr.add_argument("--steps", type=int, default=2000)
    tr.add_argument("--lr", type=float, default=1e-3)
    tr.add_argument("--min-lr", type=float, default=1e-4)
    tr.add_argument("--warmup-steps", type=int, default=100)
    tr.add_argument("--beta1", type=float, default=0.9)
    tr.add_argument("--beta2", type=float, default=0.99)
    tr.add_argument("--weight-decay", type=float, default=0.1)
    tr.add_argument("--clip-grad-norm", type=float, default=1.0)
    tr.add_argument("--windows", type=int, default=2048)
    tr.add_argument("--threads", type=int, default=1, help="torch.set_num_threads (on 2 cores, 1 is fastest)")
    tr.add_argument("--seed", type=int, default=1337)
    args = ap.parse_args()

    import torch
    import nanogpt

    if args.command == "eval":
        path = args.checkpoint
        if os.path.exists(os.path.join(path, "latest")) and not os.path.exists(os.path.join(path, "manifest.json")):
            path = os.path.join(path, open(os.path.join(path, "latest")).read().strip())
        model, vocab = nanogpt.load_halftape_gpt(path)
        text_vocab, _, val = nanogpt.load_text(args.data)
        if text_vocab != vocab:
            sys.exit(f"gpt_reference: the checkpoint's vocabulary is not {args.data}'s")
        x, y = nanogpt.eval_windows(val, model.block_size, args.windows)
        print(json.dumps({"checkpoint": path, "val_loss": nanogpt.evaluate(model, x, y), "windows": len(x)}))
        return

    torch.manual_seed(args.seed)
    torch.set_num_threads(args.threads)
    vocab, train, val = nanogpt.load_text(args.data)
    model = nanogpt.GPT(len(vocab), args.block_size, args.n_layer, args.n_head, args.n_embd)
    opt = model.optimizer(args.lr, (args.beta1, args.beta2), args.weight_decay)

    def lr_at(step):  # halftape's schedule: linear warmup, then cosine to min_lr
        if step < args.warmup_steps:
            return args.lr * (step + 1) / args.warmup_steps
        progress = min(1.0, (step - args.warmup_steps) / max(1, args.steps - args.warmup_steps))
        return args.min_lr + 0.5 * (args.lr - args.min_lr) * (1 + math.cos(math.pi * progress))

    times = []
    for step in range(args.steps):
        start = time.perf_counter()
        ix = torch.randint(len(train) - args.block_size - 1, (args.batch_size,))
        xb = torch.stack([train[i:i + args.block_size] for i in ix.tolist()])
        yb = torch.stack([train[i + 1:i + 1 + args.block_size] for i in ix.tolist()])
        for group in opt.param_groups:
            group["lr"] = lr_at(step)
        _, loss = model(xb, yb)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), args.clip_grad_norm)
        opt.step()
        times.append(time.perf_counter() - start)
    x, y = nanogpt.eval_windows(val, args.block_size, args.windows)
    print(json.dumps({"val_loss": nanogpt.evaluate(model, x, y), "windows": len(x), "steps": args.steps,
                      "median_step_ms": 1e3 * statistics.median(times[min(10, len(times) - 1):]),
                      "threads": torch.get_num_threads(), "torch": torch.__version__}))


if __name__ == "__main__":
    main()
