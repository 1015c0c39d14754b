#!/usr/bin/env python
"""The Markdown table of a results folder (the JSON files results_table.py writes), for the docs: every figure
is one the committed JSON gives.

    python examples/recipes/results_markdown.py examples/tanaka-ja-en/results --models transformer rel dep_rel \\
        [--sets test] [--ribes] [--names transformer="transformer" ...]
    python examples/recipes/results_markdown.py examples/tanaka-ja-en/results/{intel-xeon,amd-epyc} --models ...
    python examples/recipes/results_markdown.py --write   # rewrite docs/recipes.md's tables (DOC_TABLES)
    python examples/recipes/results_markdown.py --check   # exit 1 if one differs (a test runs this)

With several folders (one per CPU the models trained on), the rows of each folder follow in turn, with a CPU
column: each row is tested against the baseline trained on its own CPU.

Columns per test set: BLEU, chrF, p (BLEU), and with --ribes RIBES and its p; then the parse heads' UAS, the
validation NLL of the checkpoint scored and the training hours. A model's rows against its other baselines
(``also_against``) follow its own row. Models without a JSON are listed as not trained yet.
"""
import argparse
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DOC = os.path.join(ROOT, "docs", "recipes.md")

#: the tables of docs/recipes.md that --write / --check keep: each sits between ``<!-- NAME table -->`` and
#: ``<!-- end NAME table -->``, made from examples/NAME/results/CPU for every CPU folder readme_table.py knows
#: (``MACHINES``, in its order), with its rows in this order (models without a JSON: listed as not trained yet)
DOC_TABLES = {
    "tanaka-ja-en": ["transformer", "transformer_seed2", "rel", "dep", "dep_rel", "dbsa_enc", "dbsa_dec", "dbsa",
                     "pascal", "sisa", "sh", "ch", "dbsa_sync", "syncattn", "lstm_luong", "cky_lstm",
                     "lstm_luong_lr001", "cky_lstm_lr001", "lstm_luong_lr001_seed2", "dbsa_enc_lambda05",
                     "dbsa_lambda05", "dbsa_dec_lambda05", "sisa_lambda05", "sh_label3", "pascal_h3",
                     "syncattn_sync2", "dep_rel_l4", "ch_u4000", "dep_l4", "dep_rel_self", "dep_rel_self_own",
                     "dep_rel_self_st", "dep_rel_self_st_own"],
    "tanaka-en-ja": ["transformer", "transformer_seed2", "rel", "dep", "dep_rel", "pascal", "sh", "sisa",
                     "pascal_wat", "sisa_lambda05", "dep_l4", "dep_rel_l4", "sh_label3", "dep_rel_self",
                     "dep_rel_self_own"],
}


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


def table(folders, models, sets=("test",), ribes=False, names=None):
    """The Markdown table of these results folders' models, as a string (one line per row)."""
    names = names or {}
    lines = []
    several = len(folders) > 1
    head = ["model", "baseline"] + (["CPU"] if several else [])
    for s in sets:
        head += [f"{s} BLEU", "chrF", "p"] + (["RIBES", "p"] if ribes else [])
    head += ["UAS enc", "UAS dec", "valid NLL", "train h"]
    lines.append("| " + " | ".join(head) + " |")
    lines.append("|" + " --- |" * len(head))
    found = set()
    for folder in folders:
        for m in models:
            path = os.path.join(folder, f"{m}.json")
            if not os.path.exists(path):
                continue
            found.add(m)
            r = json.load(open(path, encoding="utf-8"))
            cpu = [cpu_name(r.get("machine"))] if several else []
            row = [names.get(m, m), r.get("baseline") or "-"] + cpu
            for s in sets:
                row += cells(r["sets"][s], ribes)
            best = (r.get("training") or {}).get("best") or {}
            last = (r.get("training") or {}).get("last") or {}
            uas = r.get("uas") or {}
            row += [fmt(uas.get("encoder"), 1), fmt(uas.get("decoder"), 1), fmt(best.get("valid_metric"), 3),
                    fmt(last["train_seconds"] / 3600, 2) if "train_seconds" in last else "-"]
            lines.append("| " + " | ".join(row) + " |")
            for other, other_sets in sorted((r.get("also_against") or {}).items()):
                row = [names.get(m, m), other] + cpu
                for s in sets:
                    row += cells(other_sets[s], ribes)
                lines.append("| " + " | ".join(row + [""] * 4) + " |")
    missing = [m for m in models if m not in found]
    if missing:
        lines += ["", f"Not trained yet: {', '.join(missing)}."]
    return "\n".join(lines) + "\n"


def doc_with_tables(doc):
    """docs/recipes.md's text with every DOC_TABLES table made again from the JSON between its markers."""
    from readme_table import MACHINES  # the CPU folders' order and names, one convention for both tables

    for name, models in DOC_TABLES.items():
        folders = [os.path.join("examples", name, "results", cpu) for cpu in MACHINES]
        start, end = f"<!-- {name} table -->\n", f"<!-- end {name} table -->"
        if start not in doc or end not in doc:
            raise SystemExit(f"error: {DOC}: no '{start.strip()}' ... '{end}' markers")
        missing = [f for f in folders if not os.path.isdir(os.path.join(ROOT, f))]
        if missing:
            raise SystemExit(f"error: {name}: no results folder {', '.join(missing)} (DOC_TABLES)")
        made = table([os.path.join(ROOT, f) for f in folders], models, ribes=True)
        i, j = doc.index(start) + len(start), doc.index(end)
        if j < i:
            raise SystemExit(f"error: {DOC}: '{end}' comes before '{start.strip()}'")
        doc = doc[:i] + made + doc[j:]
    return doc


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("\n\n", 1)[1])
    ap.add_argument("results", nargs="*", help="folder(s) of MODEL.json files (not with --write / --check)")
    ap.add_argument("--models", nargs="+", help="rows, in this order (required with results folders)")
    ap.add_argument("--sets", nargs="+", default=["test"], help="test sets (default: test)")
    ap.add_argument("--ribes", action="store_true", help="RIBES and its bootstrap p-value columns")
    ap.add_argument("--names", nargs="*", default=[], metavar="MODEL=NAME", help="the name a row shows")
    mode = ap.add_mutually_exclusive_group()
    mode.add_argument("--write", action="store_true", help="rewrite docs/recipes.md's tables (DOC_TABLES)")
    mode.add_argument("--check", action="store_true", help="exit 1 if a docs/recipes.md table differs from the JSON")
    args = ap.parse_args(argv)
    if args.write or args.check:
        if args.results or args.models or args.names or args.ribes or args.sets != ["test"]:
            ap.error("--write / --check take no results folders, --models, --sets, --ribes or --names: they make "
                     "DOC_TABLES as it says")
        doc = open(DOC, encoding="utf-8").read()
        made = doc_with_tables(doc)
        if args.check:
            if made != doc:
                print(f"{DOC}: a results table differs from the committed JSON; run "
                      f"python examples/recipes/results_markdown.py --write", file=sys.stderr)
                return 1
            return 0
        if made != doc:
            open(DOC, "w", encoding="utf-8").write(made)
        return 0
    if not args.results or not args.models:
        ap.error("give results folder(s) and --models, or --write / --check")
    names = dict(x.split("=", 1) for x in args.names)
    sys.stdout.write(table(args.results, args.models, args.sets, args.ribes, names))
    return 0


if __name__ == "__main__":
    sys.exit(main())
