#!/usr/bin/python3
"""Plots a `halftape train --metrics` JSON Lines file: loss, loss scale and grad norm per step,
with skipped steps marked and test accuracy per evaluation.

    /usr/bin/python3 scripts/plot_metrics.py run.jsonl run.png
"""
import json
import sys


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    steps, evals = [], []
    with open(sys.argv[1]) as f:
        for n, line in enumerate(f, 1):
            try:
                record = json.loads(line)
            except json.JSONDecodeError as e:
                sys.exit(f"{sys.argv[1]}:{n}: not JSON ({e})")
            (evals if record.get("event") == "eval" else steps).append(record)
    if not steps:
        sys.exit(f"{sys.argv[1]}: no step records")

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    x = [r["step"] for r in steps]
    skipped = [r["step"] for r in steps if r["skipped"]]
    fig, axes = plt.subplots(4 if evals else 3, 1, figsize=(9, 10), sharex=True)
    axes[0].plot(x, [r["loss"] for r in steps], lw=0.8)
    axes[0].set_ylabel("loss")
    axes[1].semilogy(x, [r["loss_scale"] for r in steps], lw=0.8)
    axes[1].set_ylabel("loss scale")
    axes[2].semilogy(x, [r["grad_norm"] if r["grad_norm"] else float("nan") for r in steps], lw=0.8)
    axes[2].set_ylabel("grad norm")
    for ax in axes[:3]:
        for s in skipped:
            ax.axvline(s, color="red", alpha=0.3, lw=0.8)
    if evals:
        axes[3].plot([e["step"] for e in evals], [100 * e["test_accuracy"] for e in evals], "o-")
        axes[3].set_ylabel("test accuracy %")
    axes[-1].set_xlabel("optimizer step" + (f" ({len(skipped)} skipped, in red)" if skipped else ""))
    fig.tight_layout()
    fig.savefig(sys.argv[2], dpi=110)


if __name__ == "__main__":
    main()
