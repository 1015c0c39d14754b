#!/usr/bin/env python3
"""The tables of docs/benchmarks.md's GPU section, from device_check.py's JSON.

``--part speed`` (the default), from the speed phase: each model's fp16 training step at every batch size (the
median of the timed steps in ms, with their quartiles where the run recorded them), its peak memory and its beam-4
decoding, as ratios to a reference row of the same run (fairseq's transformer; the LSTMs against lstm_luong), and
whether the model meets its goal (step at most 1.10x for the models with a relative-position term, 1.03x for the
others; memory at most 1.15x). ``--part half``, from the half-precision phase: each paper's model in each
precision, its status, last training loss, fairseq's gradient overflows and the hypotheses fairseq-generate wrote.

    python3 examples/gpu/report_tables.py examples/gpu/results/device_check.json --reference "transformer (again)"
    python3 examples/gpu/report_tables.py examples/gpu/results/device_check.json --part half

``--reference`` picks the transformer's row: the run of 2026-11-27 timed it first without a warm-up on its batches
(239 ms a step; 59 ms when measured again last), so its table takes the second row; runs since warm the device up
on the same batches first and can take the first.
"""
import argparse
import json
import sys

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from device_check import LSTMS, MEMORY_GOAL, RELATIVE, STEP_GOAL  # noqa: E402


def rows(report, reference):
    """(model, reference, {tokens: (ms, ratio)}, (peak MiB, ratio) at the largest batch, (sent/s, ratio), goal)."""
    models = report["speed"]["models"]
    sizes = report["speed"]["setting"]["token_sizes"]
    out = []
    for name, row in models.items():
        if "decode" not in row:  # skipped for time
            continue
        ref_name = "lstm_luong" if name.split(" ")[0] in LSTMS and "lstm_luong" in models else reference
        ref = models[ref_name]
        steps = {t: (row[f"train_{t}"]["step_ms_median"],
                     row[f"train_{t}"]["step_ms_median"] / ref[f"train_{t}"]["step_ms_median"],
                     row[f"train_{t}"].get("step_ms_quartiles")) for t in sizes}
        big = f"train_{sizes[-1]}"
        mem = row[big].get("peak_mem_mib")
        memory = (mem, mem / ref[big]["peak_mem_mib"]) if mem is not None else (None, None)
        decode = (row["decode"]["sentences_per_second"],
                  row["decode"]["sentences_per_second"] / ref["decode"]["sentences_per_second"])
        model = name.split(" ")[0]
        goal = ""
        if ref_name == reference and model not in LSTMS and model != "transformer":
            limit = STEP_GOAL["relative" if model in RELATIVE else "other"]
            worst = max(r for _, r, _ in steps.values())
            goal = (f"step {'met' if worst <= limit else 'over'} ({limit:.2f}x)"
                    + ("" if memory[1] is None else f", memory {'met' if memory[1] <= MEMORY_GOAL else 'over'}"))
        out.append((name, ref_name, steps, memory, decode, goal))
    return out


def markdown(report, reference):
    sizes = report["speed"]["setting"]["token_sizes"]
    head = ["model", "against"]
    for t in sizes:
        head += [f"step ms, {t:,} tokens", "ratio"]
    head += [f"peak MiB, {sizes[-1]:,} tokens", "ratio", "beam-4 sent/s", "ratio", "goal"]
    lines = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    for name, ref, steps, memory, decode, goal in rows(report, reference):
        cells = [name, ref]
        for t in sizes:
            ms, ratio, quartiles = steps[t]
            cells += [f"{ms:.1f}" + (f" ({quartiles[0]:.1f}-{quartiles[1]:.1f})" if quartiles else ""), f"{ratio:.2f}"]
        cells += ["-", "-"] if memory[0] is None else [f"{memory[0]:.0f}", f"{memory[1]:.2f}"]
        cells += [f"{decode[0]:.0f}", f"{decode[1]:.2f}", goal]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def half_markdown(report):
    """One row per paper's model, a column group per precision: status, last loss, overflows, hypotheses."""
    half = report["half"]
    precisions = list(half)
    models = list(next(iter(half.values())))
    head = ["model"] + [f"{p}: {what}" for p in precisions for what in ("status", "loss", "overflows")] + [
        "hypotheses"]
    lines = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    for m in models:
        cells = [m]
        for p in precisions:
            r = half[p].get(m, {})
            cells += [r.get("status", "-"), r.get("last", {}).get("train_loss", "-"), str(r.get("overflows", "-"))]
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
