"""examples/gpu/timing_analysis.py: the rules that decide a paired timing run (pairs, bootstrap interval, goal
verdicts, drift rejection, the launch-bound / compute-bound test), on synthetic runs whose answer is known."""
import math
import os
import random
import sys

from helpers import ROOT

sys.path.insert(0, os.path.join(ROOT, "examples", "gpu"))
import timing_analysis as ta  # noqa: E402

REF = "transformer"


def run_times(ratio, rounds=10, batches=4, noise=0.005, base=0.1, drift_per_round=0.0, seed=0, skip=()):
    """times[round][batch] of a model whose step is ``ratio`` times a base step per batch, with multiplicative
    noise; ``drift_per_round`` slows every step by that fraction a round; ``skip``: (round, batch) not timed."""
    rng = random.Random(seed)
    out = []
    for r in range(rounds):
        row = []
        for b in range(batches):
            t = base * (1 + 0.2 * b) * ratio * (1 + drift_per_round * r) * math.exp(rng.gauss(0, noise))
            row.append(None if (r, b) in skip else t)
        out.append(row)
    return out


def test_pairs_are_the_same_batch_in_the_same_round_and_skipped_steps_drop_out():
    times = {REF: [[1.0, 2.0], [1.0, None]], "m": [[1.5, 2.0], [None, 4.0]]}
    assert ta.paired_ratios(times, "m", REF) == [(0, 0, 1.5), (0, 1, 1.0)]
    # the batches' own sizes cancel: a model 1.2x on batches of very different cost gives 1.2 on every pair
    times = {REF: run_times(1.0, noise=0), "m": run_times(1.2, noise=0)}
    assert {round(x, 12) for _, _, x in ta.paired_ratios(times, "m", REF)} == {1.2}


def test_bootstrap_interval_is_seeded_brackets_the_estimate_and_narrows_with_less_noise():
    rng = random.Random(3)
    noisy = [1.05 * math.exp(rng.gauss(0, 0.05)) for _ in range(40)]
    quiet = [1.05 * math.exp(rng.gauss(0, 0.005)) for _ in range(40)]
    lo, hi = ta.bootstrap_interval(noisy)
    assert ta.bootstrap_interval(noisy) == (lo, hi)  # seeded
    assert lo < ta.geometric_mean(noisy) < hi and min(noisy) < lo and hi < max(noisy)
    qlo, qhi = ta.bootstrap_interval(quiet)
    assert qhi - qlo < (hi - lo) / 5 and qlo < 1.05 < qhi
    assert ta.bootstrap_interval([1.07] * 10) == (1.07, 1.07)
    # about 95% coverage: the interval of a sample of 40 excludes the true value in few of 40 draws
    misses = 0
    for k in range(40):
        r = random.Random(100 + k)
        lo, hi = ta.bootstrap_interval([1.05 * math.exp(r.gauss(0, 0.05)) for _ in range(40)], resamples=400)
        misses += not lo <= 1.05 <= hi
    assert misses <= 6


def test_goal_verdicts_met_missed_undecided():
    assert ta.decide((1.00, 1.02), 1.03) == "met"
    assert ta.decide((1.00, 1.03), 1.03) == "met"
    assert ta.decide((1.031, 1.08), 1.03) == "missed"
    assert ta.decide((1.01, 1.05), 1.03) == "undecided"
    assert ta.decide(None, 1.03).startswith("undecided")


def test_a_drifting_reference_is_rejected_a_steady_one_is_not():
    steady = run_times(1.0, noise=0.003, seed=1)
    drifting = run_times(1.0, noise=0.003, seed=1, drift_per_round=0.005)  # 4.5% slower by the last round
    assert abs(ta.drift(steady)) < 0.01 and not ta.rejected(ta.drift(steady))
    assert 0.035 < ta.drift(drifting) < 0.055 and ta.rejected(ta.drift(drifting))
    # the statistic: the median over batches of last round / first round on that batch, minus 1
    times = [[1.0, 2.0, 4.0], [9.9, 9.9, 9.9], [1.01, 2.2, 3.0]]
    assert math.isclose(ta.drift(times), 0.01)
    a = ta.analyse_block({REF: drifting, "m": run_times(1.0, seed=2, drift_per_round=0.005)}, REF, set())
    assert a["rejected"] and a["models"]["m"]["ratio"] < 1.01  # the pairs still cancel the drift


def test_regime_launch_bound_below_three_times():
    assert ta.regime(0.010, 0.035) == "compute-bound"
    assert ta.regime(0.050, 0.060) == "launch-bound"
    assert ta.regime(0.050, 0.149) == "launch-bound" and ta.regime(0.050, 0.150) == "compute-bound"
    assert ta.regime(None, 0.1) is None


def _block(regime, tokens, ratios, base, drift=0.0, memory=None, skip=()):
    times = {m: run_times(r, base=base, seed=k, drift_per_round=drift, skip=skip if m != REF else ())
             for k, (m, r) in enumerate(ratios.items())}
    block = {"regime_name": regime, "tokens": tokens, "times": times}
    if memory:
        block["memory"] = ta.memory_ratios(memory, REF)
    return block


def _report(blocks):
    return {"setting": {"reference": REF, "models": [REF, "rel", "fast", "slow", "close"], "relative": ["rel"],
                        "compute_bound": 3.0, "resamples": 500, "seed": 1},
            "blocks": blocks}


def test_goals_are_decided_only_where_compute_bound_and_not_drifting():
    ratios = {REF: 1.0, "rel": 1.05, "fast": 1.0, "slow": 1.2, "close": 1.03}
    mem = {REF: 1000, "rel": 1100, "fast": 1000, "slow": 1200, "close": 1150}
    compute = {"wmt:8192": _block("wmt", 8192, ratios, 0.02, memory=mem, skip={(0, 1)}),
               "wmt:32768": _block("wmt", 32768, ratios, 0.08, memory=mem),
               # Tanaka-like lengths decide nothing: every model 1.5x there would miss every goal
               "tanaka:8192": _block("tanaka", 8192, {m: 1.0 if m == REF else 1.5 for m in ratios}, 0.02)}
    launch = {"wmt:8192": _block("wmt", 8192, ratios, 0.05), "wmt:32768": _block("wmt", 32768, ratios, 0.06)}
    drifting = {"wmt:8192": _block("wmt", 8192, ratios, 0.02),
                "wmt:32768": _block("wmt", 32768, ratios, 0.08, drift=0.01)}
    report = ta.decide_goals(_report({"fp16": compute, "bf16": launch, "fp32": drifting}))
    v = report["verdicts"]
    assert v["fp16"]["regime"] == "compute-bound" and math.isclose(v["fp16"]["regime_ratio"], 4.0, rel_tol=0.05)
    fp16 = v["fp16"]["models"]
    assert fp16["rel"]["step"] == "met" and fp16["rel"]["step_goal"] == 1.10  # 1.05 against the relative goal
    assert fp16["fast"]["step"] == "met" and fp16["slow"]["step"] == "missed"
    assert fp16["close"]["step"] == "undecided" and fp16["close"]["step_goal"] == 1.03
    assert (fp16["rel"]["memory"], fp16["slow"]["memory"], fp16["close"]["memory"]) == ("met", "missed", "met")
    assert compute["wmt:8192"]["analysis"]["models"]["slow"]["pairs"] == 39  # the skipped step's pair dropped
    assert sorted(fp16["slow"]["step_by_tokens"]) == [8192, 32768]
    assert compute["tanaka:8192"]["analysis"]["models"]["fast"]["ratio"] > 1.4
    assert {m["step"] for m in v["bf16"]["models"].values()} == {"undecided: launch-bound"}
    assert v["bf16"]["regime"] == "launch-bound"
    assert drifting["wmt:32768"]["analysis"]["rejected"]
    assert v["fp32"]["models"]["fast"]["step"] == "undecided: rejected (drift)"  # met at 8k, rejected at 32k
    assert v["fp32"]["models"]["slow"]["step"] == "missed"  # missed where decided
    table = ta.markdown(report)
    assert "REJECTED" in table and "| fp16 | wmt | 32,768 | slow |" in table and "launch-bound" in table
