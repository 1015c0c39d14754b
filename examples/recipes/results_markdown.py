#!/usr/bin/env python
"""The Markdown table of a results folder (the JSON files results_table.py writes), for the docs: every figure
is one the committed JSON gives.

    python examples/recipes/results_markdown.py examples/tanaka-ja-en/results --models transformer rel dep_rel \\
        [--sets test] [--ribes] [--names transformer="transformer" ...]
    python examples/recipes/results_markdown.py examples/tanaka-ja-en/results/{intel-xeon,amd-epyc} --models ...
    python examples/recipes/results_markdown.py --write   # rewrite examples/NAME/results/runs.md (DOC_TABLES)
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

#: the tables --write / --check keep, each in examples/NAME/results/runs.md (beside the JSON it is made of,
#: linked from docs/recipes.md) between ``<!-- NAME table -->`` and ``<!-- end NAME table -->``, made from
#: examples/NAME/results/CPU for every CPU folder readme_table.py knows (``MACHINES``, in its order), with its
#: rows in this order (models without a JSON: listed as not trained yet)
DOC_TABLES = {
    "tanaka-ja-en": ["transformer", "transformer_seed2", "rel", "dep", "dep_rel", "dbsa_enc", "dbsa_dec", "dbsa",
                     "pascal", "sisa", "sh", "ch", "dbsa_sync", "syncattn", "lstm_luong", "cky_lstm",
                     "lstm_luong_lr001", "cky_lstm_lr001", "lstm_luong_lr001_seed2", "dbsa_enc_lambda05",
                     "dbsa_lambda05", "dbsa_dec_lambda05", "sisa_lambda05", "sh_label3", "pascal_h3",
                     "syncattn_sync2", "dep_rel_l4", "ch_u4000", "dep_l4", "dep_rel_self", "dep_rel_self_own",
                     "dep_rel_self_st", "dep_rel_self_st_own", "transformer_ft",
                     "dep_rel_ft", "dep_rel_u3000", "dep_rel_random", "dep_rel_right_chain", "dep_rel_left_chain",
                     "dep_rel_noise03", "dep_rel_noise015", "dep_rel_noise05"],
    "tanaka-en-ja": ["transformer", "transformer_seed2", "rel", "dep", "dep_rel", "pascal", "sh", "sisa",
                     "pascal_wat", "sisa_lambda05", "dep_l4", "dep_rel_l4", "sh_label3", "dep_rel_self",
                     "dep_rel_self_own"],
}
#: the same for a dataset whose runs are one folder, examples/NAME/results (one CPU): its rows and test sets
FLAT_TABLES = {
    "multi30k-en-de": (["transformer", "transformer_seed2", "rel", "dep", "dep_rel", "dbsa_enc", "dbsa_dec", "dbsa",
                        "pascal", "sisa", "sh", "ch", "dbsa_sync", "syncattn", "lstm_luong", "cky_lstm"],
                       ("test2016", "test2017")),
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


def runs_file(name: str) -> str:
    return os.path.join(ROOT, "examples", name, "results", "runs.md")


def runs_page(name: str, models, sets=None) -> str:
    """examples/NAME/results/runs.md: every committed run of the dataset's models, a row per run and baseline
    (``sets``: a FLAT_TABLES dataset's test sets, its runs in one folder)."""
    from readme_table import MACHINES  # the CPU folders' order and names, one convention for both tables

    if sets:
        folders, where = [os.path.join("examples", name, "results")], "the JSON beside this file"
    else:
        folders = [os.path.join("examples", name, "results", cpu) for cpu in MACHINES]
        where = "the JSON of the folders beside this file, one per CPU"
    missing = [f for f in folders if not os.path.isdir(os.path.join(ROOT, f))]
    if missing:
        raise SystemExit(f"error: {name}: no results folder {', '.join(missing)} (DOC_TABLES)")
    made = table([os.path.join(ROOT, f) for f in folders], models, sets=sets or ("test",), ribes=not sets)
    return (f"# {name}: every committed run\n\n"
            f"Made by `python examples/recipes/results_markdown.py --write` from {where} (do not edit: "
            "`tests/test_docs.py` checks it). p: the paired bootstrap against the "
            "row's baseline, trained on the same CPU (1,000 resamples); UAS: the parse heads' trees against the "
            "data's parses; valid NLL: of the checkpoint scored; train h: its training hours. The reading: "
            "[docs/recipes.md](../../../docs/recipes.md).\n\n"
            f"<!-- {name} table -->\n{made}<!-- end {name} table -->\n")


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
    mode.add_argument("--write", action="store_true", help="rewrite examples/NAME/results/runs.md (DOC_TABLES)")
    mode.add_argument("--check", action="store_true", help="exit 1 if a runs.md differs from the JSON")
    args = ap.parse_args(argv)
    if args.write or args.check:
        if args.results or args.models or args.names or args.ribes or args.sets != ["test"]:
            ap.error("--write / --check take no results folders, --models, --sets, --ribes or --names: they make "
                     "DOC_TABLES as it says")
        differ = []
        pages = [(name, models, None) for name, models in DOC_TABLES.items()]
        pages += [(name, models, sets) for name, (models, sets) in FLAT_TABLES.items()]
        for name, models, sets in pages:
            path, made = runs_file(name), runs_page(name, models, sets)
            have = open(path, encoding="utf-8").read() if os.path.exists(path) else None
            if have != made:
                differ.append(path)
                if args.write:
                    open(path, "w", encoding="utf-8").write(made)
        if args.check and differ:
            print(f"{', '.join(differ)}: differs from the committed JSON; run "
                  "python examples/recipes/results_markdown.py --write", file=sys.stderr)
            return 1
        return 0
    if not args.results or not args.models:
        ap.error("give results folder(s) and --models, or --write / --check")
    names = dict(x.split("=", 1) for x in args.names)
    sys.stdout.write(table(args.results, args.models, args.sets, args.ribes, names))
    return 0


if __name__ == "__main__":
    sys.exit(main())
