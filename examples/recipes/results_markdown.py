#!/usr/bin/env python
"""The Markdown table of a results folder (the JSON files results_table.py writes), for the docs: every figure
is one the committed JSON gives.

    python examples/recipes/results_markdown.py examples/tanaka-ja-en/results --models transformer rel dep_rel \\
        [--sets test] [--ribes] [--names transformer="transformer" ...]
    python examples/recipes/results_markdown.py examples/tanaka-ja-en/results/{intel-xeon,amd-epyc} --models ...

With several folders (one per CPU the models trained on), the rows of each folder follow in turn, with a CPU
column: each row is tested against the baseline trained on its own CPU.

Columns per test set: BLEU, chrF, p (BLEU), and with --ribes RIBES and its p; then the parse heads' UAS, the
validation NLL of the checkpoint scored and the training hours. A model's rows against its other baselines
(``also_against``) follow its own row. Models without a JSON are listed as not trained yet.
"""
import argparse
import json
import os


def fmt(x, digits):
    return "-" if x is None else f"{x:.{digits}f}"


def cpu_name(machine):
    """'Intel Xeon' / 'AMD EPYC' from the JSON's machine record."""
    cpu = (machine or {}).get("cpu", "?")
    return " ".join(cpu.replace("(R)", "").replace("Processor", "").split())


def cells(sc, ribes):
    boot = sc.get("bootstrap") or {}
    p = lambda m: (boot.get(m) or {}).get("system", {}).get("p_value")  # noqa: E731
    out = [fmt(sc["bleu"], 2), fmt(sc["chrf"], 1), fmt(p("bleu"), 3)]
    if ribes:
        out += [fmt(sc.get("ribes"), 2), fmt(p("ribes"), 3)]
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("\n\n", 1)[1])
    ap.add_argument("results", nargs="+", help="folder(s) of MODEL.json files")
    ap.add_argument("--models", nargs="+", required=True, help="rows, in this order")
    ap.add_argument("--sets", nargs="+", default=["test"], help="test sets (default: test)")
    ap.add_argument("--ribes", action="store_true", help="RIBES and its bootstrap p-value columns")
    ap.add_argument("--names", nargs="*", default=[], metavar="MODEL=NAME", help="the name a row shows")
    args = ap.parse_args(argv)
    names = dict(x.split("=", 1) for x in args.names)
    several = len(args.results) > 1
    head = ["model", "baseline"] + (["CPU"] if several else [])
    for s in args.sets:
        head += [f"{s} BLEU", "chrF", "p"] + (["RIBES", "p"] if args.ribes else [])
    head += ["UAS enc", "UAS dec", "valid NLL", "train h"]
    print("| " + " | ".join(head) + " |")
    print("|" + " --- |" * len(head))
    found = set()
    for folder in args.results:
        for m in args.models:
            path = os.path.join(folder, f"{m}.json")
            if not os.path.exists(path):
                continue
            found.add(m)
            r = json.load(open(path, encoding="utf-8"))
            cpu = [cpu_name(r.get("machine"))] if several else []
            row = [names.get(m, m), r.get("baseline") or "-"] + cpu
            for s in args.sets:
                row += cells(r["sets"][s], args.ribes)
            best = (r.get("training") or {}).get("best") or {}
            last = (r.get("training") or {}).get("last") or {}
            uas = r.get("uas") or {}
            row += [fmt(uas.get("encoder"), 1), fmt(uas.get("decoder"), 1), fmt(best.get("valid_metric"), 3),
                    fmt(last["train_seconds"] / 3600, 2) if "train_seconds" in last else "-"]
            print("| " + " | ".join(row) + " |")
            for other, sets in sorted((r.get("also_against") or {}).items()):
                row = [names.get(m, m), other] + cpu
                for s in args.sets:
                    row += cells(sets[s], args.ribes)
                print("| " + " | ".join(row + [""] * 4) + " |")
    missing = [m for m in args.models if m not in found]
    if missing:
        print(f"\nNot trained yet: {', '.join(missing)}.")


if __name__ == "__main__":
    main()
