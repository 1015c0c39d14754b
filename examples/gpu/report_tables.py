#!/usr/bin/env python3
"""The tables of docs/benchmarks.md's GPU section, from device_check.py's JSON.

``--part speed`` (the default), from the speed phase: each model's fp16 training step at every batch size (the
median of the timed steps in ms, with their quartiles where the run recorded them), the JSON's ``peak_mem_mib``
(``torch.cuda.max_memory_allocated`` after the timed steps: not their peak, since fairseq's Trainer resets the
counter after every step that did not overflow, so it is about what the last step left allocated) and its beam-4
decoding, as ratios to a reference row of the same run (fairseq's transformer; the LSTMs against lstm_luong).
The goals (step at most 1.10x for the models with a relative-position term, 1.03x for the others; memory at most
1.15x) are in the JSON (``speed.models.MODEL.goals``, against the first reference row), not judged here.
``--part half``, from the half-precision phase: each paper's model in each precision, its status, last training
loss, final loss scale and the hypotheses fairseq-generate wrote.

    python3 examples/gpu/report_tables.py examples/gpu/results/device_check.json --reference "transformer (again)"
    python3 examples/gpu/report_tables.py examples/gpu/results/device_check.json --part half

``--reference`` picks the transformer's row: the committed results/device_check.json timed it first after 3
untimed steps (239 ms a step; 59 ms when timed again last on the same batches), so its table takes the second
row; the check now trains every model once untimed on its timed batches first, and a newer JSON can take the
first.
"""
import argparse
import json
import sys

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from device_check import LSTMS  # noqa: E402


def rows(report, reference):
    """(model, reference, {tokens: (step ms, ratio, quartiles or None, peak MiB or None, ratio or None)},
    (sentences/s, ratio)) of every speed row measured, against ``reference`` (the LSTMs against lstm_luong);
    a row whose reference was not measured is left out."""
    models = report["speed"]["models"]
    sizes = report["speed"]["setting"]["token_sizes"]
    out = []
    for name, row in models.items():
        ref_name = "lstm_luong" if name.split(" ")[0] in LSTMS and "lstm_luong" in models else reference
        ref = models.get(ref_name, {})
        if "decode" not in row or "decode" not in ref:  # skipped for time
            continue
        per_size = {}
        for t in sizes:
            mine, theirs = row[f"train_{t}"], ref[f"train_{t}"]
            mem = mine.get("peak_mem_mib")
            per_size[t] = (mine["step_ms_median"], mine["step_ms_median"] / theirs["step_ms_median"],
                           mine.get("step_ms_quartiles"), mem,
                           None if mem is None else mem / theirs["peak_mem_mib"])
        decode = (row["decode"]["sentences_per_second"],
                  row["decode"]["sentences_per_second"] / ref["decode"]["sentences_per_second"])
        out.append((name, ref_name, per_size, decode))
    return out


def markdown(report, reference):
    sizes = report["speed"]["setting"]["token_sizes"]
    head = ["model", "against"]
    for t in sizes:
        head += [f"step ms, {t:,} tokens", "ratio"]
    for t in sizes:
        head += [f"allocated MiB, {t:,}", "ratio"]
    head += ["beam-4 sent/s", "ratio"]
    lines = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    for name, ref, per_size, decode in rows(report, reference):
        cells = [name, ref]
        for t in sizes:
            ms, ratio, quartiles, _, _ = per_size[t]
            cells += [f"{ms:.1f}" + (f" ({quartiles[0]:.1f}-{quartiles[1]:.1f})" if quartiles else ""), f"{ratio:.2f}"]
        for t in sizes:
            mem, ratio = per_size[t][3:]
            cells += ["-", "-"] if mem is None else [f"{mem:.0f}", f"{ratio:.2f}"]
        cells += [f"{decode[0]:.0f}", f"{decode[1]:.2f}"]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def half_markdown(report):
    """One row per paper's model, a column group per precision: status, last loss, the loss scale at the end
    (fairseq starts it at 128 and halves it at each overflow: with FP16Optimizer the update is skipped, with
    --amp the batch is retried) and the hypotheses of fairseq-generate."""
    half = report["half"]
    precisions = list(half)
    models = list(next(iter(half.values())))
    head = ["model"] + [f"{p}: {what}" for p in precisions for what in ("status", "loss", "loss scale")] + [
        "hypotheses"]
    lines = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    for m in models:
        cells = [m]
        for p in precisions:
            r = half[p].get(m, {})
            last = r.get("last", {})
            cells += [r.get("status", "-"), last.get("train_loss", "-"), last.get("train_loss_scale", "-")]
        hyps = sorted({str(half[p].get(m, {}).get("hypotheses", "-")) for p in precisions})
        cells.append("/".join(hyps))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("json", help="device_check.py's JSON")
    p.add_argument("--part", default="speed", choices=("speed", "half"), help="which table (default speed)")
    p.add_argument("--reference", default="transformer", help="the transformer's row the syntax models are "
                   "compared with (default transformer; 'transformer (again)': its row measured last)")
    args = p.parse_args(argv)
    report = json.load(open(args.json, encoding="utf-8"))
    if args.part == "half":
        print(half_markdown(report))
        return 0
    if args.reference not in report.get("speed", {}).get("models", {}):
        sys.exit(f"error: {args.json}: no speed row {args.reference!r}")
    print(markdown(report, args.reference))
    return 0


if __name__ == "__main__":
    sys.exit(main())
