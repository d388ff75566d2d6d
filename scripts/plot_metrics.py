#!/usr/bin/python3
"""Plots a `halftape train --metrics` JSON Lines file: loss, loss scale and grad norm per step,
with skipped steps marked, and the evaluations (test or validation loss, and accuracy where
there is one).

    /usr/bin/python3 scripts/plot_metrics.py run.jsonl run.png

A last line cut short (what a crashed or killed run leaves) is skipped with a warning; any other
problem is one line naming the file, and exit status 1.
"""
import json
import sys

STEP_KEYS = ("step", "loss", "loss_scale", "grad_norm", "skipped")


def fail(message):
    print(f"plot_metrics: error: {message}", file=sys.stderr)
    sys.exit(1)


def read_records(path):
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().split("\n")
    except OSError as e:
        fail(f"{path}: cannot read ({e.strerror})")
    except UnicodeDecodeError as e:
        fail(f"{path}: not a text file ({e.reason})")
    if lines and lines[-1] == "":
        lines.pop()  # the newline that ends the last record
    records = []
    for n, line in enumerate(lines, 1):
        try:
            record = json.loads(line)
        except json.JSONDecodeError as e:
            if n == len(lines):
                print(f"plot_metrics: warning: {path}:{n}: the last line is cut short (a run that died while "
                      f"writing it?); skipped", file=sys.stderr)
                break
            fail(f"{path}:{n}: not JSON ({e})")
        if not isinstance(record, dict):
            fail(f"{path}:{n}: not a JSON object")
        records.append((n, record))
    return records


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    path = sys.argv[1]
    steps, evals = [], []
    for n, record in read_records(path):
        if record.get("event") in ("memory", "fp8_saturation"):  # the memory account, FP8's saturations: not plotted
            continue
        if record.get("event") == "eval":
            if "step" not in record:
                fail(f"{path}:{n}: an eval record without 'step'")
            evals.append(record)
            continue
        missing = [k for k in STEP_KEYS if k not in record]
        if missing:
            fail(f"{path}:{n}: a step record without {', '.join(repr(k) for k in missing)} "
                 f"(not a halftape --metrics file?)")
        steps.append(record)
    if not steps:
        fail(f"{path}: no step records")

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    def value(v):
        return float("nan") if v is None else v

    eval_losses = sorted({k for e in evals for k in e if k.endswith("_loss") and k != "train_loss"})
    accuracies = sorted({k for e in evals for k in e if k.endswith("_accuracy")})
    panels = 3 + (1 if eval_losses else 0) + (1 if accuracies else 0)
    x = [r["step"] for r in steps]
    skipped = [r["step"] for r in steps if r["skipped"]]
    fig, axes = plt.subplots(panels, 1, figsize=(9, 2.5 * panels + 2), sharex=True)
    axes[0].plot(x, [value(r["loss"]) for r in steps], lw=0.8)
    axes[0].set_ylabel("loss")
    axes[1].semilogy(x, [value(r["loss_scale"]) for r in steps], lw=0.8)
    axes[1].set_ylabel("loss scale")
    axes[2].semilogy(x, [value(r["grad_norm"]) or float("nan") for r in steps], lw=0.8)
    axes[2].set_ylabel("grad norm")
    for ax in axes[:3]:
        for s in skipped:
            ax.axvline(s, color="red", alpha=0.3, lw=0.8)
    panel = 3
    if eval_losses:
        for key in eval_losses:
            pts = [(e["step"], value(e[key])) for e in evals if key in e]
            axes[panel].plot([p[0] for p in pts], [p[1] for p in pts], "o-", label=key)
        axes[panel].set_ylabel("eval loss")
        axes[panel].legend()
        panel += 1
    if accuracies:
        for key in accuracies:
            pts = [(e["step"], 100 * value(e[key])) for e in evals if key in e]
            axes[panel].plot([p[0] for p in pts], [p[1] for p in pts], "o-", label=key)
        axes[panel].set_ylabel("accuracy %")
        axes[panel].legend()
    axes[-1].set_xlabel("optimizer step" + (f" ({len(skipped)} skipped, in red)" if skipped else ""))
    fig.tight_layout()
    try:
        fig.savefig(sys.argv[2], dpi=110)
    except OSError as e:
        fail(f"{sys.argv[2]}: cannot write ({e.strerror})")


if __name__ == "__main__":
    main()
