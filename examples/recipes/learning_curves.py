#!/usr/bin/env python
"""Learning curves from a recipe's training logs: each model's validation NLL (``nll_loss``) at every validation
of ``WORK/logs/MODEL.train.log`` (fairseq's simple log: ``valid on 'valid' subset | ... | nll_loss X | ... |
num_updates N``), as JSON and a chart (one line per model); for models with a parse head also its validation
parse loss (``dep_enc_loss`` / ``dep_dec_loss``, bits per supervised token) under ``parse_loss``.

    python examples/recipes/learning_curves.py --work work/tanaka-ja-en \\
        --models transformer_curve dbsa_enc_curve dbsa_enc_l0_curve dbsa_enc_scaled_curve \\
        --json examples/tanaka-ja-en/results/curves/dbsa_curves.json --plot examples/tanaka-ja-en/results/curves/dbsa_curves.png

A model trained again after a kill logs its resumed validations after the earlier ones: the last value logged
at an update counts.
"""
import argparse
import json
import os
import platform
import re
import sys

VALID = re.compile(r"valid on 'valid' subset \|.*?\| nll_loss ([0-9.]+) \|.*?\| num_updates (\d+)")
PARSE = re.compile(r"\| (dep_(?:enc|dec)_loss) ([0-9.]+) ")


def curve(path):
    """Of one training log, in update order: [[updates, validation NLL], ...], and {"dep_enc_loss": [[updates,
    bits], ...], ...} of the parse losses its validations log (empty without a parse head)."""
    points, losses = {}, {}
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            m = VALID.search(line)
            if m:
                points[int(m.group(2))] = float(m.group(1))
                for name, value in PARSE.findall(line):
                    losses.setdefault(name, {})[int(m.group(2))] = float(value)
    return _ordered(points), {name: _ordered(v) for name, v in losses.items()}


def _ordered(values):
    return [[u, values[u]] for u in sorted(values)]


def cpu():
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            names = [line.split(":", 1)[1].strip() for line in f if line.startswith("model name")]
            flags = open("/proc/cpuinfo", encoding="utf-8").read()
        return {"cpu": names[0] if names else platform.processor(), "avx512": "avx512f" in flags,
                "cores": os.cpu_count()}
    except OSError:
        return {"cpu": platform.processor(), "cores": os.cpu_count()}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], epilog=__doc__.split("\n\n", 1)[1],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--work", required=True, help="the recipe's WORK folder (its logs/MODEL.train.log)")
    p.add_argument("--models", nargs="+", required=True, help="the models, in the chart's order")
    p.add_argument("--json", required=True, help="write the curves here")
    p.add_argument("--plot", default=None, help="and the chart here (PNG)")
    args = p.parse_args(argv)
    curves, parse_loss = {}, {}
    for m in args.models:
        path = os.path.join(args.work, "logs", f"{m}.train.log")
        if not os.path.isfile(path):
            raise SystemExit(f"error: {path}: no training log of {m} (train it first)")
        curves[m], parse = curve(path)
        if parse:
            parse_loss[m] = parse
        if not curves[m]:
            raise SystemExit(f"error: {path}: no validation line (train with --validate-interval-updates N)")
    os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
    with open(args.json, "w", encoding="utf-8") as f:
        json.dump({"metric": "validation nll_loss", "machine": cpu(), "curves": curves,
                   "parse_loss": parse_loss}, f, indent=1)
        f.write("\n")
    if args.plot:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(6, 3.6))
        for m, points in curves.items():
            ax.plot([u for u, _ in points], [v for _, v in points], marker=".", label=m)
        ax.set_xlabel("updates")
        ax.set_ylabel("validation NLL")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(args.plot, dpi=150)
        plt.close(fig)
    return 0


if __name__ == "__main__":
    sys.exit(main())
