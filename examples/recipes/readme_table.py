#!/usr/bin/env python
"""The README's results table: every model on every real corpus in one table, from the committed JSON.

    python examples/recipes/readme_table.py            # print it
    python examples/recipes/readme_table.py --write    # put it into README.md between its markers
    python examples/recipes/readme_table.py --check    # exit 1 if README.md's table differs (a test runs this)

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


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("\n\n", 1)[1])
    ap.add_argument("--readme", default=os.path.join(ROOT, "README.md"), help="the README (default: the repository's)")
    g = ap.add_mutually_exclusive_group()
    g.add_argument("--write", action="store_true", help="write the table into the README between its markers")
    g.add_argument("--check", action="store_true", help="exit 1 if the README's table is not this one")
    args = ap.parse_args(argv)
    t = table()
    if not (args.write or args.check):
        print(t)
        return 0
    text = open(args.readme, encoding="utf-8").read()
    if BEGIN not in text or END not in text:
        sys.exit(f"{args.readme}: no '{BEGIN}' ... '{END}' markers")
    a, b = text.index(BEGIN) + len(BEGIN), text.index(END)
    new = text[:a] + "\n" + t + "\n" + text[b:]
    if args.check:
        if new != text:
            print(f"{args.readme}: the results table is not the committed JSON's; run {sys.argv[0]} --write",
                  file=sys.stderr)
            return 1
        return 0
    with open(args.readme, "w", encoding="utf-8") as f:
        f.write(new)
    return 0


if __name__ == "__main__":
    sys.exit(main())
