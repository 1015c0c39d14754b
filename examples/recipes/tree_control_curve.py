#!/usr/bin/env python
"""The gain against the trees' quality: for dep_rel trained on each tree control (docs/data.md#tree-controls)
and on the parser's own trees, the BLEU difference to rel (the same relative positions, no tree) over its runs
with the replicate bootstrap's p (from the committed multi-seed JSON, examples/recipes/multiseed_table.py), and
the UAS of its trees against the parser's on train (from its runs' JSON, results_table.py's data.tree_control;
the parser's own trees are 100). As JSON and a chart: x the UAS, y the BLEU over rel, one point per tree kind
with the spread of its runs' BLEU (sample sd) as a bar, the transformer's difference to rel as a line.

    python examples/recipes/tree_control_curve.py --dataset tanaka-ja-en \\
        --json examples/tanaka-ja-en/results/controls/tree_controls.json \\
        --plot examples/tanaka-ja-en/results/controls/tree_controls.png
    python examples/recipes/tree_control_curve.py --dataset tanaka-ja-en --check \\
        --json examples/tanaka-ja-en/results/controls/tree_controls.json   # the committed JSON is today's

Run multiseed_table.py --json first: its rows dep_rel_CONTROL against rel are the points.
"""
import argparse
import glob
import json
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
#: the model trained on the parser's trees, the baseline without a tree, the one without relative positions
MODEL, BASELINE, VANILLA = "dep_rel", "rel", "transformer"
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from multiseed_table import TREE_CONTROLS as CONTROLS  # noqa: E402  (the control rows its JSON holds)


def control_uas(dataset, model):
    """The train split's source-side UAS against the parser of ``model``'s trees (every run's JSON must agree),
    with its control's kind and seed."""
    src = dataset.split("-")[-2]
    seen = set()
    for path in glob.glob(os.path.join(ROOT, "examples", dataset, "results", "*", "*.json")):
        if re.fullmatch(rf"{re.escape(model)}(?:_seed\d+)?", os.path.basename(path)[:-5]):
            control = (json.load(open(path, encoding="utf-8")).get("data") or {}).get("tree_control")
            if control is None:
                raise SystemExit(f"{path}: no data.tree_control (collect it again with results_table.py)")
            seen.add((control["uas"]["train"][src], control["kind"], control["seed"]))
    if len(seen) != 1:
        raise SystemExit(f"{dataset} {model}: its runs' trees are {sorted(seen) or 'not committed'}: one control, "
                         "one set of trees, per model")
    return seen.pop()


def curve(dataset):
    """{"dataset", "baseline", "points": [{"model", "kind", "tree_seed", "uas", "runs", "bleu", "bleu_sd",
    "difference", "p_value"}] in UAS order, "vanilla": the transformer's BLEU difference to rel}."""
    result = json.load(open(os.path.join(ROOT, "examples", dataset, "results", "multiseed.json"), encoding="utf-8"))
    by = {(r["model"], r["baseline"]): r for r in result["rows"]}
    points = []
    for (model, base), row in by.items():
        if base != BASELINE or not (model == MODEL or model.startswith(MODEL + "_") and
                                    model[len(MODEL) + 1:] in CONTROLS):
            continue
        uas, kind, seed = (100.0, None, None) if model == MODEL else control_uas(dataset, model)
        bleu = row["metrics"]["bleu"]
        points.append({"model": model, "kind": kind or "parser", "tree_seed": seed, "uas": uas,
                       "runs": len(row["runs"]), "bleu": bleu["mean"], "bleu_sd": bleu["sd"],
                       "difference": bleu["difference"], "p_value": bleu["p_value"]})
    if not any(p["model"] == MODEL for p in points):
        raise SystemExit(f"{dataset}: multiseed.json has no row {MODEL} against {BASELINE}")
    vanilla = by.get((BASELINE, VANILLA))
    return {"dataset": dataset, "baseline": BASELINE, "uas_of": "train, source side, against the parser's trees",
            "points": sorted(points, key=lambda p: (p["uas"], p["model"])),
            "vanilla": -vanilla["metrics"]["bleu"]["difference"] if vanilla else None}



def plot(result, path):
    sys.path.insert(0, ROOT)
    from fairseq_syntax.analysis.drawing import pyplot_agg

    plt = pyplot_agg()
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    for p in result["points"]:
        ax.errorbar(p["uas"], p["difference"], yerr=p["bleu_sd"] if p["runs"] > 1 else None, fmt="o",
                    color="tab:blue" if p["kind"] != "parser" else "tab:red", capsize=3)
        ax.annotate(f"{p['kind']} ({p['runs']} run{'s' * (p['runs'] > 1)}, p {p['p_value']:.3f})", (p["uas"], p["difference"]),
                    textcoords="offset points", xytext=(4, 6), fontsize=7)
    ax.axhline(0, color="grey", lw=0.8, label=f"{result['baseline']} (no tree)")
    if result["vanilla"] is not None:
        ax.axhline(result["vanilla"], color="grey", lw=0.8, ls="--", label="transformer")
    ax.set_xlabel("UAS of the trees against the parser's (train, %)")
    ax.set_ylabel(f"BLEU over {result['baseline']} (mean of runs; bar: sd)")
    ax.set_title(f"{result['dataset']}: dep_rel on controlled trees")
    ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__.split("\n\n", 1)[1])
    p.add_argument("--dataset", default="tanaka-ja-en", help="examples/DATASET (default tanaka-ja-en)")
    p.add_argument("--json", required=True, help="the curve's JSON: written, or with --check compared")
    p.add_argument("--plot", default=None, help="a PNG of it (default: none)")
    p.add_argument("--check", action="store_true", help="fail unless --json holds what the committed results give")
    args = p.parse_args(argv)
    result = curve(args.dataset)
    if args.check:
        committed = json.load(open(args.json, encoding="utf-8"))
        if committed != result:
            raise SystemExit(f"{args.json} is not what the committed results give: run this without --check")
        return
    os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
    with open(args.json, "w", encoding="utf-8") as f:
        json.dump(result, f, indent=1, sort_keys=True)
        f.write("\n")
    if args.plot:
        plot(result, args.plot)
    for q in result["points"]:
        print(f"{q['kind']:>12} UAS {q['uas']:6.2f}  BLEU {q['bleu']:.2f} ({q['runs']} runs)  "
              f"over {result['baseline']} {q['difference']:+.2f} (p {q['p_value']:.3f})")


if __name__ == "__main__":
    main()
