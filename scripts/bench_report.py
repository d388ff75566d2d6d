#!/usr/bin/python3
"""Turns `halftape bench --json` files into a markdown report and PNG plots.

    scripts/bench_report.py results.json [more.json ...] [--markdown OUT.md] [--plots DIR]
    scripts/bench_report.py --validate results.json      # check against bench/schema.json

Uses Debian's python3 (matplotlib, jsonschema): run it as /usr/bin/python3. Without jsonschema
the report is made unvalidated (a note on stderr); without matplotlib, --plots fails.
"""
import argparse
import json
import pathlib
import sys

SCHEMA = pathlib.Path(__file__).resolve().parent.parent / "bench" / "schema.json"


def fail(message):
    print(f"bench_report: error: {message}", file=sys.stderr)
    sys.exit(1)


def load(path):
    """One results file, or one line naming the file and what is wrong with it."""
    try:
        text = pathlib.Path(path).read_text(encoding="utf-8")
    except OSError as e:
        fail(f"{path}: cannot read ({e.strerror})")
    except UnicodeDecodeError as e:
        fail(f"{path}: not a text file ({e.reason})")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        fail(f"{path}: not JSON ({e})")
    if not isinstance(data, dict) or not isinstance(data.get("results"), list):
        fail(f"{path}: not the JSON of `halftape bench --json` or scripts/pytorch_baseline.py (no 'results' list)")
    return data


def check_schema(path, data, required=False):
    """Validates against bench/schema.json where jsonschema is installed (Debian's python3 has it;
    a GPU machine's may not): then the report is made unvalidated, and says so on stderr.
    --validate needs it (required)."""
    try:
        import jsonschema
    except ImportError:
        if required:
            fail("--validate needs the Python package jsonschema (Debian: python3-jsonschema)")
        print(f"bench_report: note: jsonschema is not installed, so {path} is not checked against bench/schema.json",
              file=sys.stderr)
        return

    schema = json.loads(SCHEMA.read_text())
    try:
        jsonschema.validate(data, schema)
    except jsonschema.ValidationError as e:
        where = "/".join(str(k) for k in e.absolute_path) or "the top level"
        fail(f"{path}: does not match bench/schema.json at {where}: {e.message}")


def validate(paths):
    for p in paths:
        data = load(p)
        check_schema(p, data, required=True)
        if not data["results"]:
            sys.exit(f"{p}: no results")
        for r in data["results"]:
            if not (r["min_ms"] <= r["median_ms"] <= r["max_ms"]):
                sys.exit(f"{p}: {r['name']}: median outside [min, max]")
        print(f"{p}: valid ({len(data['results'])} results)")


def fmt(v, spec):
    return "-" if v is None else format(v, spec)


def markdown(runs):
    lines = []
    for data in runs:
        c = data["ceilings"]
        lines.append(f"### {data['device_description']} ({data['date']})\n")
        lines.append(f"Ceilings measured in this run: copy {fmt(c['copy_gbps'], '.1f')} GB/s, "
                     f"cuBLAS fp16 GEMM {fmt(c['gemm_fp16_tflops'], '.1f')} TFLOP/s. "
                     f"Median of {data['repeats']} repeats (p10-p90 spread).\n")
        lines.append("| benchmark | params | median ms | p10-p90 ms | GB/s | TFLOP/s | of ceiling | notes |")
        lines.append("|---|---|---:|---:|---:|---:|---:|---|")
        for r in data["results"]:
            frac = r["fraction_of_gemm"] if r["fraction_of_gemm"] is not None else r["fraction_of_copy"]
            params = ", ".join(f"{k}={v}" for k, v in r["params"].items())
            notes = ", ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in r["extra"].items())
            lines.append(f"| {r['name']} | {params} | {r['median_ms']:.4f} | {r['p10_ms']:.4f}-{r['p90_ms']:.4f} | "
                         f"{fmt(r['gbps'], '.1f')} | {fmt(r['tflops'], '.2f')} | "
                         f"{'-' if frac is None else f'{100 * frac:.0f}%'} | {notes} |")
        lines.append("")
    return "\n".join(lines)


def versus_pytorch(runs, baselines):
    """halftape's train-step results beside PyTorch's (scripts/pytorch_baseline.py), by name."""
    lines = ["### halftape vs PyTorch AMP: one training step\n",
             "Same model (MLP or GPT), batch, AdamW, precision; PyTorch with torch.amp autocast + GradScaler. "
             "Median step time; the ratio is PyTorch's time over halftape's (> 1: halftape faster).\n",
             "| step | halftape ms | PyTorch eager ms | ratio | torch.compile ms | ratio |",
             "|---|---:|---:|---:|---:|---:|"]
    torch_by = {}
    for b in baselines:
        for r in b["results"]:
            torch_by[(r["name"], r["variant"])] = r["median_ms"]
    for data in runs:
        for r in data["results"]:
            if r["group"] != "train":
                continue
            same_step = r["name"].removesuffix(" cuda-graph")  # PyTorch's step is the same either way
            eager, compiled = torch_by.get((same_step, "eager")), torch_by.get((same_step, "compile"))
            ours = r["median_ms"]
            ratio = lambda theirs: "-" if theirs is None else f"{theirs / ours:.2f}"
            lines.append(f"| {r['name']} | {ours:.4f} | {fmt(eager, '.4f')} | {ratio(eager)} | "
                         f"{fmt(compiled, '.4f')} | {ratio(compiled)} |")
    lines.append("")
    return "\n".join(lines)


def plots(runs, out_dir):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out_dir = pathlib.Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    for data in runs:
        for group in ("memory", "gemm", "linear", "attention", "allreduce", "train"):
            rows = [r for r in data["results"] if r["group"] == group]
            if not rows:
                continue
            key = "fraction_of_gemm" if group in ("gemm", "linear") else "fraction_of_copy"
            values = [100 * (r[key] or 0) for r in rows] if any(r[key] for r in rows) else [r["median_ms"] for r in rows]
            label = "% of ceiling" if any(r[key] for r in rows) else "median ms"
            fig, ax = plt.subplots(figsize=(8, 0.4 * len(rows) + 1.2))
            ax.barh([r["name"] for r in rows], values)
            ax.set_xlabel(label)
            ax.set_title(f"{group} - {data['device_description']}")
            ax.invert_yaxis()
            fig.tight_layout()
            fig.savefig(out_dir / f"bench-{data['device']}-{group}.png", dpi=120)
            plt.close(fig)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("files", nargs="+")
    ap.add_argument("--validate", action="store_true", help="only validate against bench/schema.json")
    ap.add_argument("--markdown", help="write the markdown table here (default: stdout)")
    ap.add_argument("--plots", help="write PNG plots into this directory")
    args = ap.parse_args()
    if args.validate:
        validate(args.files)
        return
    loaded = [load(p) for p in args.files]
    for p, d in zip(args.files, loaded):
        if d.get("framework") != "pytorch":
            check_schema(p, d)  # what the tables below read is there
        elif not all(isinstance(r, dict) and {"name", "variant", "median_ms"} <= r.keys() for r in d["results"]):
            fail(f"{p}: a PyTorch result without 'name', 'variant' and 'median_ms'")
    runs = [d for d in loaded if d.get("framework") != "pytorch"]
    baselines = [d for d in loaded if d.get("framework") == "pytorch"]
    baselines += [b for d in runs for b in d.get("baselines", [])]  # from `halftape bench --pytorch`
    text = markdown(runs)
    if baselines:
        text += "\n" + versus_pytorch(runs, baselines)
    if args.markdown:
        try:
            pathlib.Path(args.markdown).write_text(text)
        except OSError as e:
            fail(f"--markdown {args.markdown}: cannot write ({e.strerror})")
    else:
        try:
            print(text)
        except BrokenPipeError:  # `| head`: the reader has what it wanted
            sys.stderr.close()
            sys.exit(0)
    if args.plots:
        plots(runs, args.plots)


if __name__ == "__main__":
    main()
