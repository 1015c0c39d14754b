#!/usr/bin/env python
"""The results tables of README.md and docs/results.md, from the committed JSON.

    python examples/recipes/readme_table.py            # print both
    python examples/recipes/readme_table.py --write    # put each into its page between its markers
    python examples/recipes/readme_table.py --check    # exit 1 if a page's table differs (a test runs this)

README.md shows the key rows over runs: each model's mean ± sd over its runs on Tanaka (the multi-seed JSON,
multiseed_table.py), the difference of means to its baseline and the two-sided paired bootstrap p, beside the
one Multi30k run. docs/results.md shows every model on every real corpus, one seed per row:

A baseline's row gives its scores; every other row gives its difference to its baseline and, in brackets, the
paired bootstrap p-value of that difference (1,000 resamples, results_table.py). Empty: not part of that
corpus's table (or not trained yet). The full tables (chrF, UAS, validation NLL, train hours, the tries):
docs/recipes.md.

A corpus whose models trained on several CPUs keeps one results folder per CPU (``results/intel-xeon``,
``results/amd-epyc``, ...), each with the transformer trained there: a row is the difference to the
baseline of its own CPU, and a cell is marked with its CPU's letter (``MACHINES``: X Intel Xeon, E AMD
EPYC); a model trained on several CPUs shows each, separated by " / ".
"""
import argparse
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BEGIN, END = "<!-- results table (examples/recipes/readme_table.py) -->", "<!-- end results table -->"
KEY_BEGIN, KEY_END = "<!-- key results (examples/recipes/readme_table.py) -->", "<!-- end key results -->"

#: the CPUs' results folders of a corpus trained on several, in the order their cells are shown, and the
#: letter that marks a cell of each
MACHINES = {"intel-xeon": "X", "amd-epyc": "E"}

# (header, results folder, test set, metric)
COLUMNS = [
    ("En-De 2016 BLEU", "examples/multi30k-en-de/results", "test2016", "bleu"),
    ("En-De 2017 BLEU", "examples/multi30k-en-de/results", "test2017", "bleu"),
    ("Ja-En BLEU", "examples/tanaka-ja-en/results", "test", "bleu"),
    ("Ja-En RIBES", "examples/tanaka-ja-en/results", "test", "ribes"),
    ("En-Ja BLEU", "examples/tanaka-en-ja/results", "test", "bleu"),
    ("En-Ja RIBES", "examples/tanaka-en-ja/results", "test", "ribes"),
]

# (model, the name its row shows, the baseline its row compares with)
ROWS = [
    ("transformer", "transformer", None),
    ("transformer_seed2", "transformer, seed 2", "transformer"),
    ("rel", "rel (Shaw 2018)", "transformer"),
    ("dep", "dep (Omote 2019)", "transformer"),
    ("dep_rel", "dep_rel (Omote 2019)", "transformer"),
    ("dep_rel", "dep_rel", "rel"),
    ("dbsa_enc", "dbsa_enc (Deguchi 2019)", "transformer"),
    ("dbsa_dec", "dbsa_dec (Deguchi 2019)", "transformer"),
    ("dbsa", "dbsa (Deguchi 2019)", "transformer"),
    ("pascal", "pascal (B&O 2020)", "transformer"),
    ("sisa", "sisa (B&O 2020)", "transformer"),
    ("sh", "sh (S&H 2016)", "transformer"),
    ("ch", "ch (C&H 2019)", "transformer"),
    ("dbsa_sync", "dbsa_sync (Deguchi 2021)", "transformer"),
    ("syncattn", "syncattn (Deguchi 2021)", "transformer"),
    ("syncattn", "syncattn", "dbsa_sync"),
    ("lstm_luong", "lstm_luong (Luong 2015)", None),
    ("cky_lstm", "cky_lstm (Watanabe 2017)", "lstm_luong"),
    # the LSTM pair's try (both at lr 0.001): kept on Tanaka for both, on Multi30k for cky_lstm only
    ("lstm_luong_lr001", "lstm_luong, lr 0.001 (try)", None),
    ("lstm_luong_lr001_seed2", "lstm_luong, lr 0.001, seed 2", "lstm_luong_lr001"),
    ("cky_lstm_lr001", "cky_lstm, lr 0.001 (try)", "lstm_luong_lr001"),
]


def cell(folder, model, baseline, test_set, metric):
    """A model's cell in one corpus's column: from the folder itself, else from its CPUs' folders."""
    machines = [m for m in MACHINES if os.path.isdir(os.path.join(ROOT, folder, m))]
    if not machines:
        return one_cell(folder, model, baseline, test_set, metric)
    cells = ((one_cell(os.path.join(folder, m), model, baseline, test_set, metric), MACHINES[m]) for m in machines)
    return " / ".join(f"{c} {letter}" for c, letter in cells if c)


def one_cell(folder, model, baseline, test_set, metric):
    path = os.path.join(ROOT, folder, f"{model}.json")
    if not os.path.exists(path):
        return ""
    r = json.load(open(path, encoding="utf-8"))
    if baseline is None:
        return f"{r['sets'][test_set][metric]:.2f}"
    sets = r["sets"] if r.get("baseline") == baseline else (r.get("also_against") or {}).get(baseline)
    if sets is None or "bootstrap" not in sets[test_set]:  # not tested: the baseline was not scored then
        return ""
    boot = sets[test_set]["bootstrap"][metric]
    diff = boot["system"]["score"] - boot["baseline"]["score"]
    return f"{diff:+.2f} ({boot['system']['p_value']:.3f})".replace("(0.", "(.")


def table():
    lines = ["| model | baseline | " + " | ".join(c[0] for c in COLUMNS) + " |",
             "|" + " --- |" * (len(COLUMNS) + 2)]
    for model, name, baseline in ROWS:
        cells = [cell(folder, model, baseline, s, m) for _, folder, s, m in COLUMNS]
        if any(cells):
            lines.append(f"| {name} | {baseline or '-'} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


#: the README's key rows: (name shown, baseline shown, {corpus: (model, baseline model)}); a corpus left out has no run
KEY_ROWS = [
    ("transformer", "", {"multi30k": ("transformer", None), "tanaka-ja-en": ("transformer", None),
                         "tanaka-en-ja": ("transformer", None)}),
    ("`transformer_rel` (Shaw 2018)", "transformer", {"multi30k": ("rel", "transformer"),
                                                     "tanaka-ja-en": ("rel", "transformer"),
                                                     "tanaka-en-ja": ("rel", "transformer")}),
    ("`transformer_dep_rel` (Omote 2019)", "transformer", {"multi30k": ("dep_rel", "transformer"),
                                                         "tanaka-ja-en": ("dep_rel", "transformer"),
                                                         "tanaka-en-ja": ("dep_rel", "transformer")}),
    ("`transformer_dep_rel`", "rel", {"multi30k": ("dep_rel", "rel"), "tanaka-ja-en": ("dep_rel", "rel"),
                                      "tanaka-en-ja": ("dep_rel", "rel")}),
    ("`transformer_pascal` (B&O 2020)", "transformer", {"multi30k": ("pascal", "transformer"),
                                                       "tanaka-ja-en": ("pascal", "transformer"),
                                                       "tanaka-en-ja": ("pascal_wat", "transformer")}),
    ("`transformer_sh` (S&H 2016)", "transformer", {"multi30k": ("sh", "transformer"),
                                                   "tanaka-ja-en": ("sh", "transformer"),
                                                   "tanaka-en-ja": ("sh", "transformer")}),
    ("`transformer_dbsa_enc` (Deguchi 2019)", "transformer", {"multi30k": ("dbsa_enc", "transformer"),
                                                             "tanaka-ja-en": ("dbsa_enc", "transformer")}),
    ("`transformer_syncattn` (Deguchi 2021)", "transformer", {"multi30k": ("syncattn", "transformer"),
                                                             "tanaka-ja-en": ("syncattn", "transformer")}),
    ("`lstm_luong` (Luong 2015), lr 0.001", "", {"multi30k": ("lstm_luong_lr001", None),
                                                 "tanaka-ja-en": ("lstm_luong_lr001", None)}),
    ("`cky_lstm` (Watanabe 2017), lr 0.001", "lstm_luong", {"multi30k": ("cky_lstm_lr001", "lstm_luong_lr001"),
                                                           "tanaka-ja-en": ("cky_lstm_lr001", "lstm_luong_lr001")}),
]
KEY_COLUMNS = [("Multi30k En-De BLEU, 2016 / 2017 (1 run)", "multi30k"),
               ("Tanaka Ja-En BLEU (runs)", "tanaka-ja-en"), ("Tanaka En-Ja BLEU (runs)", "tanaka-en-ja")]


def _p(p):
    return f"{p:.3f}".replace("0.", ".", 1)


def multi30k_cell(model, baseline):
    """One run on both test sets: the score, or the difference to the baseline with sacreBLEU's paired p."""
    cells = [one_cell("examples/multi30k-en-de/results", model, baseline, s, "bleu") for s in ("test2016", "test2017")]
    return " / ".join(cells) if all(cells) else ""


def multiseed_cell(dataset, model, baseline):
    """mean ± sd (runs) of a baseline; a model's difference of means ± its own sd (runs), p (two-sided)."""
    rows = json.load(open(os.path.join(ROOT, "examples", dataset, "results", "multiseed.json"), encoding="utf-8"))
    row = next((r for r in rows["rows"] if r["model"] == model and r.get("baseline") == baseline), None)
    if row is None:
        return ""
    b, n = row["metrics"]["bleu"], len(row["runs"])
    if baseline is None:
        return f"{b['mean']:.2f} ± {b['sd']:.2f} ({n})"
    return f"{b['difference']:+.2f} ± {b['sd']:.2f} ({n}), p {_p(b['p_value'])}"


def key_table():
    lines = ["| model | against | " + " | ".join(c[0] for c in KEY_COLUMNS) + " |",
             "|" + " --- |" * (len(KEY_COLUMNS) + 2)]
    for name, shown, corpora in KEY_ROWS:
        cells = []
        for _, corpus in KEY_COLUMNS:
            if corpus not in corpora:
                cells.append("")
            elif corpus == "multi30k":
                cells.append(multi30k_cell(*corpora[corpus]))
            else:
                cells.append(multiseed_cell(corpus, *corpora[corpus]))
        lines.append(f"| {name} | {shown or '-'} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def put(path, begin, end, table, check):
    """Put a table between a page's markers (or, checking, say whether it is there); 0 when it is."""
    text = open(path, encoding="utf-8").read()
    if begin not in text or end not in text:
        sys.exit(f"{path}: no '{begin}' ... '{end}' markers")
    a, b = text.index(begin) + len(begin), text.index(end)
    new = text[:a] + "\n" + table + "\n" + text[b:]
    if check:
        if new != text:
            print(f"{path}: the results table is not the committed JSON's; run {sys.argv[0]} --write", file=sys.stderr)
            return 1
        return 0
    with open(path, "w", encoding="utf-8") as f:
        f.write(new)
    return 0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("\n\n", 1)[1])
    ap.add_argument("--readme", default=os.path.join(ROOT, "README.md"), help="the README (default: the repository's)")
    ap.add_argument("--results", default=os.path.join(ROOT, "docs", "results.md"),
                    help="the page with every model's row (default: docs/results.md)")
    g = ap.add_mutually_exclusive_group()
    g.add_argument("--write", action="store_true", help="write each table into its page between its markers")
    g.add_argument("--check", action="store_true", help="exit 1 if a page's table is not this script's")
    args = ap.parse_args(argv)
    if not (args.write or args.check):
        print(key_table() + "\n\n" + table())
        return 0
    return (put(args.readme, KEY_BEGIN, KEY_END, key_table(), args.check)
            | put(args.results, BEGIN, END, table(), args.check))


if __name__ == "__main__":
    sys.exit(main())
