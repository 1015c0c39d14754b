#!/usr/bin/env python3
"""The statistics of a paired timing run (examples/gpu/paired_timing.py): what its numbers can decide.

Pure Python (no torch, no numpy), so that every rule is unit-tested and a
JSON from a GPU can be analysed again anywhere.

A block of a run is one precision, one regime (sentence lengths) and one
batch size: every model stepped on the same batches, round after round, the
models in a random order for each batch. Its times: ``times[model][round][batch]``
in seconds, ``None`` where the step was not timed (an update fairseq skipped
for an fp16 overflow).

* **Pairs.** A model's ratio to the reference (fairseq's transformer) on one
  batch in one round: the two steps ran within one batch's visit of every
  model, so drift of the machine cancels. Pairs with a skipped step on either
  side are dropped.
* **Estimate and interval.** The geometric mean of a model's paired ratios,
  and its percentile bootstrap interval (pairs resampled with replacement,
  seeded).
* **Goal.** Met when the whole interval is at or below the goal, missed when
  it is wholly above, undecided when it straddles it.
* **Drift.** The reference's median, over the batches, of its step time in
  the last round divided by its time on the same batch in the first round,
  minus 1. A block whose drift exceeds ``MAX_DRIFT`` in size is REJECTED: its
  ratios are reported but decide nothing.
* **Regime.** Where the reference's median step at the large batch size
  (WMT-like lengths) is at least ``COMPUTE_BOUND`` times its median at the
  small one, the step is compute-bound and goals are decided; otherwise the
  step is bound by launching kernels, its ratios follow operator counts, and
  every goal is "undecided: launch-bound".
* **Memory.** Peak memory ratios are deterministic figures (no interval): met
  when at most the goal.

    python3 examples/gpu/timing_analysis.py paired_timing.json   # the markdown table of a run's JSON
"""
import argparse
import json
import math
import random
import statistics

MAX_DRIFT = 0.02
COMPUTE_BOUND = 3.0
#: the goals, as ratios to fairseq's transformer: a step with a relative-position term, a step without, memory
STEP_GOAL = {"relative": 1.10, "other": 1.03}
MEMORY_GOAL = 1.15
RESAMPLES = 2000
LEVEL = 0.95


#: the statistics in words, for the JSON's setting
STATISTICS = {
    "pairs": "a model's step / the reference's step on the same batch in the same round; pairs with a skipped "
             "(overflowed) step on either side left out",
    "ratio": "geometric mean of the pairs",
    "interval": f"{LEVEL:.0%} percentile bootstrap interval of that geometric mean, pairs resampled with "
                f"replacement {RESAMPLES} times (seeded)",
    "goal": "met: interval at or below the goal; missed: wholly above; undecided: straddling",
    "drift": f"median over batches of the reference's last-round step / its first-round step on the same batch, "
             f"minus 1; a block whose |drift| > {MAX_DRIFT} is REJECTED (its ratios decide nothing)",
    "regime": f"compute-bound when the reference's median step at the largest wmt batch size is at least "
              f"{COMPUTE_BOUND}x its median at the smallest; else every step goal is undecided: launch-bound",
    "memory": f"largest per-step peak of the block's batches, as a ratio to the reference's; met at most "
              f"{MEMORY_GOAL}",
}


def paired_ratios(times, model, reference):
    """[(round, batch, ratio)] of a model's steps to the reference's on the same batch in the same round; pairs
    where either step was not timed (None) are left out."""
    out = []
    for r, (row, ref_row) in enumerate(zip(times[model], times[reference])):
        for b, (t, t_ref) in enumerate(zip(row, ref_row)):
            if t is not None and t_ref is not None and t_ref > 0:
                out.append((r, b, t / t_ref))
    return out


def geometric_mean(values):
    return math.exp(sum(math.log(v) for v in values) / len(values))


def bootstrap_interval(ratios, level=LEVEL, resamples=RESAMPLES, seed=1):
    """The percentile bootstrap interval (lo, hi) of the geometric mean of ``ratios``: resampled with
    replacement ``resamples`` times with a seeded generator."""
    if not ratios:
        return None
    logs = [math.log(v) for v in ratios]
    n = len(logs)
    rng = random.Random(seed)
    means = sorted(sum(rng.choices(logs, k=n)) / n for _ in range(resamples))
    tail = (1 - level) / 2
    lo = means[min(int(math.floor(tail * resamples)), resamples - 1)]
    hi = means[min(int(math.ceil((1 - tail) * resamples)) - 1, resamples - 1)]
    return math.exp(lo), math.exp(hi)


def decide(interval, goal):
    """"met" (the interval at or below the goal), "missed" (wholly above it) or "undecided" (straddling it)."""
    if interval is None:
        return "undecided: no pairs"
    lo, hi = interval
    if hi <= goal:
        return "met"
    if lo > goal:
        return "missed"
    return "undecided"


def drift(times_of_reference):
    """The reference's drift: median over batches of (last round's step / first round's step on that batch) - 1,
    over the batches timed in both rounds (None when there are none, or fewer than 2 rounds)."""
    rounds = times_of_reference
    if len(rounds) < 2:
        return None
    pairs = [last / first for first, last in zip(rounds[0], rounds[-1])
             if first is not None and last is not None and first > 0]
    return statistics.median(pairs) - 1 if pairs else None


def rejected(drift_value, limit=MAX_DRIFT):
    """A block is rejected when its reference drifted more than ``limit`` either way (or cannot be checked)."""
    return drift_value is None or abs(drift_value) > limit


def median_step(times_of_model):
    """The median of a model's timed steps (seconds), or None."""
    steps = [t for row in times_of_model for t in row if t is not None]
    return statistics.median(steps) if steps else None


def regime(small_median, large_median, threshold=COMPUTE_BOUND):
    """"compute-bound" when the large batches' median step is at least ``threshold`` times the small ones',
    "launch-bound" otherwise; None when either is missing."""
    if not small_median or not large_median:
        return None
    return "compute-bound" if large_median >= threshold * small_median * (1 - 1e-9) else "launch-bound"


def step_goal(relative):
    return STEP_GOAL["relative" if relative else "other"]


def analyse_block(times, reference, relative, resamples=RESAMPLES, seed=1):
    """{model: the statistics of its pairs} and the block's drift for one block's ``times``; ``relative``: the
    models with a relative-position term (goal 1.10; the others 1.03)."""
    d = drift(times[reference])
    models = {}
    for model in times:
        row = {"median_step_ms": _ms(median_step(times[model])),
               "steps_timed": sum(t is not None for r in times[model] for t in r),
               "steps_skipped": sum(t is None for r in times[model] for t in r)}
        if model != reference:
            pairs = [x for _, _, x in paired_ratios(times, model, reference)]
            row.update(pairs=len(pairs), ratio=geometric_mean(pairs) if pairs else None,
                       ratio_median=statistics.median(pairs) if pairs else None,
                       interval=bootstrap_interval(pairs, resamples=resamples, seed=seed),
                       goal=step_goal(model in relative))
        models[model] = row
    return {"drift": d, "rejected": rejected(d), "models": models}


def decide_goals(report, threshold=COMPUTE_BOUND, memory_goal=MEMORY_GOAL):
    """Fill in ``report`` (paired_timing.py's JSON, in place) the analysis of every block and the verdicts.

    For each precision: the WMT-like blocks are decided where their reference is compute-bound (the largest
    batch size at least ``threshold`` times the smallest); a model's step verdict for the precision is "missed"
    if any decided block misses, "met" if every one meets, else "undecided" with the reason; memory: the largest
    peak ratio of its blocks against the goal."""
    setting = report["setting"]
    reference, relative = setting["reference"], set(setting["relative"])
    verdicts = {}
    for dtype, blocks in report["blocks"].items():
        for block in blocks.values():
            if "times" in block:
                block["analysis"] = analyse_block(block["times"], reference, relative,
                                                  resamples=setting.get("resamples", RESAMPLES),
                                                  seed=setting.get("seed", 1))
        decided = [b for b in blocks.values() if b.get("regime_name") == "wmt" and "analysis" in b]
        medians = {b["tokens"]: b["analysis"]["models"][reference]["median_step_ms"] for b in decided}
        bound = (regime(medians[min(medians)], medians[max(medians)], threshold) if len(medians) > 1 else None)
        verdicts[dtype] = {"regime": bound, "regime_ratio": (medians[max(medians)] / medians[min(medians)]
                                                             if len(medians) > 1 and medians[min(medians)] else None),
                           "models": {}}
        for model in setting["models"]:
            if model == reference:
                continue
            goal = step_goal(model in relative)
            states = []
            for b in decided:
                a = b["analysis"]
                if a["rejected"]:
                    states.append("undecided: rejected (drift)")
                elif bound != "compute-bound":
                    states.append("undecided: launch-bound" if bound else "undecided: no regime test")
                else:
                    states.append(decide(a["models"][model]["interval"], goal))
            if not states:
                step = "undecided: not measured"
            elif "missed" in states:
                step = "missed"
            elif all(s == "met" for s in states):
                step = "met"
            else:
                step = next(s for s in states if s.startswith("undecided"))
            mem = [b["memory"][model]["ratio"] for b in decided
                   if b.get("memory", {}).get(model, {}).get("ratio") is not None]
            verdicts[dtype]["models"][model] = {
                "step_goal": goal, "step": step, "step_by_tokens": {b["tokens"]: s for b, s in zip(decided, states)},
                "memory_goal": memory_goal, "memory_ratio": max(mem) if mem else None,
                "memory": (None if not mem else "met" if max(mem) <= memory_goal else "missed")}
    report["verdicts"] = verdicts
    return report


def memory_ratios(peaks, reference):
    """{model: {"peak_mib", "ratio"}} of one block's model peaks (bytes) against the reference's."""
    ref = peaks.get(reference)
    return {m: {"peak_mib": p / 2**20, "ratio": p / ref if ref else None} for m, p in peaks.items()}


def _ms(seconds):
    return None if seconds is None else 1000 * seconds


def _fmt(x, spec):
    return "" if x is None else format(x, spec)


def markdown(report):
    """The run's table: one row per precision, block and model (median step ms, ratio with its interval, the
    profiled device busy time a step, peak MiB and ratio), then the verdicts and the rejected blocks."""
    ref = report["setting"]["reference"]
    lines = ["| precision | regime | tokens | model | step ms | ratio [95% interval] | busy ms | peak MiB | "
             "mem ratio |", "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    notes = []
    for dtype, blocks in report["blocks"].items():
        for name, block in blocks.items():
            if "analysis" not in block:
                notes.append(f"{dtype} {name}: {block.get('status', 'not run')}")
                continue
            a = block["analysis"]
            if a["rejected"]:
                notes.append(f"{dtype} {name}: REJECTED, {ref} drifted {_fmt(a['drift'], '+.1%')} between its first "
                             f"and last rounds")
            for model, row in a["models"].items():
                interval = row.get("interval")
                ratio = ("1" if model == ref else
                         f"{_fmt(row.get('ratio'), '.3f')} [{interval[0]:.3f}, {interval[1]:.3f}]" if interval else "")
                mem = block.get("memory", {}).get(model, {})
                kernel = block.get("kernel_ms", {}).get(model)
                lines.append(f"| {dtype} | {block['regime_name']} | {block['tokens']:,} | {model} | "
                             f"{_fmt(row['median_step_ms'], '.1f')} | {ratio} | {_fmt(kernel, '.1f')} | "
                             f"{_fmt(mem.get('peak_mib'), '.0f')} | {_fmt(mem.get('ratio'), '.3f')} |")
    out = ["\n".join(lines)]
    for dtype, v in report.get("verdicts", {}).items():
        tested = (f" (reference's step at the largest wmt batch {v['regime_ratio']:.2f}x its step at the smallest, "
                  f"compute-bound from {report['setting']['compute_bound']}x)" if v["regime_ratio"] else "")
        out.append(f"\n{dtype}: WMT-like steps {v['regime'] or 'not tested (needs two wmt blocks)'}{tested}")
        out.append("\n".join(f"- {m}: step {x['step']} (goal {x['step_goal']}x); memory {x['memory'] or 'not measured'}"
                             f" ({_fmt(x['memory_ratio'], '.3f')}x, goal {x['memory_goal']}x)"
                             for m, x in v["models"].items()))
    if notes:
        out.append("\n" + "\n".join(f"- {n}" for n in notes))
    return "\n".join(out)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("json", help="paired_timing.py's JSON")
    p.add_argument("--reanalyse", action="store_true", help="recompute the statistics from the recorded times")
    args = p.parse_args(argv)
    with open(args.json, encoding="utf-8") as f:
        report = json.load(f)
    if args.reanalyse or "verdicts" not in report:
        decide_goals(report, threshold=report["setting"].get("compute_bound", COMPUTE_BOUND))
    print(markdown(report))


if __name__ == "__main__":
    main()
