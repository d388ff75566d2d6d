#!/usr/bin/python3
"""Compares `halftape train --metrics` runs of one recipe side by side: the training loss per step
(a moving average over 50 steps) and the evaluations' loss, on one figure; and, as JSON, each
run's final evaluation and its relative difference from the first run's (the baseline).

    /usr/bin/python3 scripts/plot_compare.py OUT.png OUT.json bf16=a.jsonl fp8-delayed=b.jsonl ...

Problems are one line naming the file, and exit status 1 (scripts/plot_metrics.py reads the files).
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from plot_metrics import fail, read_records  # noqa: E402

WINDOW = 50


def load(path):
    steps, evals = [], []
    for _, record in read_records(path):
        event = record.get("event")
        if event == "eval":
            evals.append(record)
        elif event is None and "loss" in record:
            steps.append(record)
    if not steps or not evals:
        fail(f"{path}: no step records or no evaluations")
    return steps, evals


def moving_average(values):
    out, total = [], 0.0
    for i, v in enumerate(values):
        total += v
        if i >= WINDOW:
            total -= values[i - WINDOW]
        out.append(total / min(i + 1, WINDOW))
    return out


def main():
    if len(sys.argv) < 4 or any("=" not in a for a in sys.argv[3:]):
        sys.exit(__doc__)
    runs = [(a.split("=", 1)[0], load(a.split("=", 1)[1])) for a in sys.argv[3:]]
    eval_key = next(k for k in runs[0][1][1][-1] if k.endswith("_loss") and k != "train_loss")

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (top, bottom) = plt.subplots(2, 1, figsize=(9, 8), sharex=True)
    for label, (steps, evals) in runs:
        top.plot([r["step"] for r in steps], moving_average([r["loss"] for r in steps]), lw=0.9, label=label)
        bottom.plot([e["step"] for e in evals], [e[eval_key] for e in evals], "o-", ms=3, label=label)
    top.set_ylabel(f"training loss ({WINDOW}-step mean)")
    bottom.set_ylabel(eval_key.replace("_", " "))
    bottom.set_xlabel("optimizer step")
    top.legend()
    bottom.legend()
    fig.tight_layout()
    try:
        fig.savefig(sys.argv[1], dpi=110)
    except OSError as e:
        fail(f"{sys.argv[1]}: cannot write ({e.strerror})")

    base = runs[0][1][1][-1][eval_key]
    summary = {"metric": eval_key, "baseline": runs[0][0], "runs": []}
    for label, (steps, evals) in runs:
        final = evals[-1][eval_key]
        summary["runs"].append({"label": label, "steps": steps[-1]["step"], f"final_{eval_key}": final,
                                "relative_to_baseline": (final - base) / base,
                                "evals": [{"step": e["step"], eval_key: e[eval_key]} for e in evals]})
    try:
        with open(sys.argv[2], "w", encoding="utf-8") as f:
            json.dump(summary, f, indent=2)
            f.write("\n")
    except OSError as e:
        fail(f"{sys.argv[2]}: cannot write ({e.strerror})")


if __name__ == "__main__":
    main()
