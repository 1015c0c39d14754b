#!/usr/bin/env python
"""Are a trained cky_lstm's cells distinct, and how much of the joint attention do they take?

CKY attention (Watanabe et al. 2017, Eq. 12-14) attends jointly over the T encoder states and the T(T+1)/2
cells of the CKY-CNN table. If the Deduction Unit's outputs grow a common component, layer normalisation
leaves every cell of a sentence the same vector (docs/cky.md): the attention then has no spans to choose
from, and the weight it gives the cells is a constant offset. This reads the first ``--sentences`` pairs of
``--split`` one at a time, the reference forced as the target, and reports (``cell_statistics`` in
``fairseq_syntax/analysis/cky_attention.py``): the mean within-sentence pairwise cosine of the cells of levels
2 and up (1.0: one vector per sentence) beside that of the encoder states, and the mean share of each target
token's joint weight on all cells and on the cells of levels 2 and up.

    python examples/recipes/cky_cells.py DATA-BIN --path CHECKPOINT [--split test] [--sentences 100] \\
        [--json OUT.json --model NAME]

With ``--json`` the figures go into OUT.json's ``runs`` under NAME (the recipe's model name), beside the other
models' runs there (a run of the same NAME is replaced), with the command, the date and the machine.

It runs on the CPU unless a GPU is there; 100 Tanaka sentences take about half a minute on one core.
"""
import argparse
import datetime
import json
import os
import sys
from dataclasses import asdict

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "examples", "recipes"))
WHAT = ("cky_lstm's cells over the first sentences of a split, the references forced (cell_statistics in "
        "fairseq_syntax/analysis/cky_attention.py): cell_cosine, the mean within-sentence pairwise cosine of the "
        "cells of levels >= 2 (1: one vector per sentence), state_cosine the same for the encoder states; "
        "attention_on_cells / attention_on_upper_cells, the mean joint attention weight of a target token on all "
        "cells / on the cells of levels >= 2")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("data", help="the data-bin the model was trained on")
    p.add_argument("--path", required=True, help="checkpoint of a cky_lstm model")
    p.add_argument("--split", default="test", help="split to read (default test)")
    p.add_argument("--sentences", type=int, default=100, help="the first N sentence pairs of the split (100)")
    p.add_argument("--json", help="record the figures, the command and the machine in this file's runs")
    p.add_argument("--model", help="the model's name in the recipe (cky_lstm, ...): its run in --json")
    p.add_argument("--cpu", action="store_true", help="run on the CPU even when a GPU is there")
    args = p.parse_args(argv)
    if args.json and not args.model:
        p.error("--json needs --model (the name its run is recorded under)")

    from fairseq_syntax.analysis.checkpoint import load_checkpoint, load_split
    from fairseq_syntax.analysis.cky_attention import cell_statistics
    from fairseq_syntax.errors import SyntaxDataError
    from results_table import machine

    model, _cfg, task, device = load_checkpoint(args.path, args.data, cpu=args.cpu)
    if getattr(model.encoder, "cky", None) is None:
        raise SyntaxDataError(args.path, "not a CKY attention model (train with --arch cky_lstm)")
    dataset = load_split(task, args.split)
    count = min(args.sentences, len(dataset))

    def pairs():
        for i in range(count):
            item = dataset[i]
            yield item["source"].to(device), item["target"].to(device)
            if (i + 1) % 25 == 0 or i + 1 == count:
                print(f"  {i + 1}/{count} sentences", file=sys.stderr, flush=True)

    stats = asdict(cell_statistics(model, pairs(), task.target_dictionary.eos()))
    print(json.dumps(stats, indent=1))
    if args.json:
        record = {"what": WHAT, "runs": []}
        if os.path.exists(args.json):
            with open(args.json, encoding="utf-8") as f:
                record = json.load(f)
        run = {"model": args.model, "checkpoint": args.path, "split": args.split,
               "command": "python examples/recipes/cky_cells.py " + " ".join(argv or sys.argv[1:]),
               "date": datetime.date.today().isoformat(), "machine": machine(), "statistics": stats}
        record["runs"] = [r for r in record["runs"] if r["model"] != args.model] + [run]
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(record, f, indent=1)
            f.write("\n")
        print(f"wrote {args.json}")


if __name__ == "__main__":
    from fairseq_syntax.cli import run

    run(main)
