#!/usr/bin/env python
"""Compare two folders of results_table.py JSON files model by model: the same commands run twice (another
seed, another machine) give the noise that a gain has to clear.

For every model with a JSON in both folders: BLEU and chrF per test set in each, their difference (B - A),
and the validation NLL of the checkpoint scored; a Markdown table, then the mean absolute BLEU difference.
A folder rescored after a detokeniser fix (rescore.py) is compared with one that was not on the scores
before the fix, which rescore.py keeps.

    python examples/recipes/compare_results.py examples/multi30k-en-de/results/first_pass \\
        examples/multi30k-en-de/results
"""
import argparse
import glob
import json
import os


def load(folder):
    out = {}
    for path in sorted(glob.glob(os.path.join(folder, "*.json"))):
        with open(path, encoding="utf-8") as f:
            result = json.load(f)
        if "sets" in result and "model" in result:
            out[result["model"]] = result
    return out


def like_with_like(x, y):
    """x's scores as scored with y's fixes only: a folder rescored after a detokeniser fix (rescore.py keeps
    the earlier scores under before_rescore) compared with one that was not."""
    extra = [f for f in x.get("rescored", []) if f not in y.get("rescored", [])]
    if not extra:
        return x
    return {**x, "sets": {s: {**sc, **x["before_rescore"][extra[0]]["sets"][s]} for s, sc in x["sets"].items()}}


def valid_nll(result):
    return ((result.get("training") or {}).get("best") or {}).get("valid_metric")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__.split("\n\n", 1)[1])
    p.add_argument("a", help="the first folder of MODEL.json files")
    p.add_argument("b", help="the second folder")
    args = p.parse_args(argv)
    a, b = load(args.a), load(args.b)
    both = [m for m in a if m in b]
    if not both:
        raise SystemExit(f"no model has a JSON in both {args.a} and {args.b}")
    sets = [s for s in a[both[0]]["sets"] if all(s in a[m]["sets"] and s in b[m]["sets"] for m in both)]
    head = ["model"]
    for s in sets:
        head += [f"{s} BLEU A", "B", "B - A", "chrF B - A"]
    head += ["valid NLL A", "B"]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    diffs = []
    for m in both:
        row = [m]
        for s in sets:
            x, y = like_with_like(a[m], b[m])["sets"][s], like_with_like(b[m], a[m])["sets"][s]
            diffs.append(y["bleu"] - x["bleu"])
            row += [f"{x['bleu']:.2f}", f"{y['bleu']:.2f}", f"{y['bleu'] - x['bleu']:+.2f}", f"{y['chrf'] - x['chrf']:+.1f}"]
        row += ["-" if valid_nll(r) is None else f"{valid_nll(r):.3f}" for r in (a[m], b[m])]
        print("| " + " | ".join(row) + " |")
    print(f"\n{len(both)} models, {len(sets)} test sets: mean |B - A| {sum(abs(d) for d in diffs) / len(diffs):.2f} BLEU, "
          f"largest {max(diffs, key=abs):+.2f}")


if __name__ == "__main__":
    main()
