#!/usr/bin/env python
"""Score a results folder's kept translations again after a fix of the detokeniser, without the checkpoints.

results_table.py keeps every model's scored (detokenised) translations beside its JSON. When the
detokeniser changes by a rule that is a function of the output alone (fairseq_syntax.evaluation.detokenize:
``T - Shirt`` -> ``T-Shirt``), the new scores follow from those files: this script applies the rule to each
kept translation (rewriting it), scores it against the raw reference (sacreBLEU, chrF, BLEU by source length)
and against its baseline's and ALSO_AGAINST baselines' rewritten translations (paired bootstrap), and
replaces the JSON's scores. The scores before the fix stay in the JSON under ``before_rescore`` with the
name of the fix, so that a folder that was not rescored (e.g. results/first_pass) is compared like with like.

    python examples/recipes/rescore.py examples/multi30k-en-de/results --fix join_hyphens \\
        --ref test2016=RAW/test_2016_flickr.de --source test2016=SRC_TOKENS_2016 ...
"""
import argparse
import glob
import json
import os

from fairseq_syntax.evaluation.scores import evaluate
from fairseq_syntax.evaluation.detokenize import join_hyphens

FIXES = {"join_hyphens": join_hyphens}


def pairs(values, option):
    out = {}
    for v in values:
        name, sep, path = v.partition("=")
        if not sep:
            raise SystemExit(f"{option} {v!r}: expected SET=PATH")
        out[name] = path
    return out


def read(path):
    with open(path, encoding="utf-8") as f:
        return [line.rstrip("\n") for line in f]


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__.split("\n\n", 1)[1])
    p.add_argument("results", help="a folder of MODEL.json files with translations/MODEL.SET.txt")
    p.add_argument("--fix", choices=sorted(FIXES), required=True, help="the rule applied to every translation")
    p.add_argument("--ref", nargs="+", required=True, metavar="SET=PATH", help="raw reference of each test set")
    p.add_argument("--source", nargs="+", required=True, metavar="SET=PATH",
                   help="tokenised source of each test set (the length buckets, as evaluate.sh has them)")
    p.add_argument("--rebucket", nargs="*", default=[], metavar="MODEL",
                   help="models whose length buckets may change: their JSON was bucketed on another source text "
                   "(C&H's test source carries its task tags, 2 tokens; --source has none)")
    args = p.parse_args(argv)
    refs, sources = pairs(args.ref, "--ref"), pairs(args.source, "--source")
    fix = FIXES[args.fix]
    results = {}
    for path in sorted(glob.glob(os.path.join(args.results, "*.json"))):
        with open(path, encoding="utf-8") as f:
            r = json.load(f)
        if "sets" in r and "model" in r:
            results[r["model"]] = (path, r)
    hyps = {}
    for model, (_, r) in results.items():
        if args.fix in r.get("rescored", []):
            raise SystemExit(f"{model}: already rescored with {args.fix}")
        for s in r["sets"]:
            tpath = os.path.join(args.results, "translations", f"{model}.{s}.txt")
            hyps[(model, s)] = (tpath, [fix(line) for line in read(tpath)])
    for model, (path, r) in sorted(results.items()):
        before = r.setdefault("before_rescore", {})
        before[args.fix] = {"sets": {s: {k: v for k, v in sc.items() if k != "by_length"} for s, sc in r["sets"].items()},
                            "also_against": {b: {s: {k: v for k, v in sc.items() if k != "by_length"}
                                                 for s, sc in d.items()} for b, d in r.get("also_against", {}).items()}}
        for s in r["sets"]:
            hyp = hyps[(model, s)][1]
            ref, src = read(refs[s]), read(sources[s])
            base = r.get("baseline")
            new = evaluate(hyp, ref, hyps[(base, s)][1] if base else None, src)
            if model not in args.rebucket and len(new["by_length"]) != len(r["sets"][s]["by_length"]) or any(
                    a["sentences"] != b["sentences"] for a, b in zip(new["by_length"], r["sets"][s]["by_length"])
                    if model not in args.rebucket):
                raise SystemExit(f"{model} {s}: the length buckets of {sources[s]} differ from the JSON's: "
                                 "not the source tokens evaluate.sh used")
            r["sets"][s] = new
            for other in r.get("also_against", {}):
                r["also_against"][other][s] = evaluate(hyp, ref, hyps[(other, s)][1], src)
            print(f"{model:20s} {s}: BLEU {before[args.fix]['sets'][s]['bleu']:.2f} -> {new['bleu']:.2f}, chrF "
                  f"{before[args.fix]['sets'][s]['chrf']:.2f} -> {new['chrf']:.2f}")
        r.setdefault("rescored", []).append(args.fix)
        with open(path, "w", encoding="utf-8") as f:
            json.dump(r, f, indent=1, sort_keys=True)
            f.write("\n")
    for (model, s), (tpath, lines) in hyps.items():  # the kept translations are now the scored ones
        with open(tpath, "w", encoding="utf-8") as f:
            f.write("".join(line + "\n" for line in lines))


if __name__ == "__main__":
    main()
