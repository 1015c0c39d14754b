"""A system against a baseline when each was trained several times (seeds): means, spreads and a paired
bootstrap test over test sentences that averages over the replicates.

Clark, Dyer, Lavie & Smith (2011), "Better Hypothesis Testing for Statistical Machine Translation: Controlling
for Optimizer Instability" (MultEval): report each metric as the mean over the replicates with their sample
standard deviation (n - 1), and resample the test sentences so that every resample scores every replicate's
output on the same sentences and averages over the replicates. The test sees the test set's sampling variance of
the mean over replicates; the seeds' spread enters only through the means it compares, so it is reported beside
the test (the sd), not tested: with three runs a side no test of the seed variance has power. (MultEval's own
p-value comes from approximate randomisation; here the bootstrap gives it.)

For a resample I of the N test sentences (drawn with replacement, the same for every system and replicate), a
system with replicates X_1..X_R scores m_X(I) = mean_r metric(X_r[I]); likewise m_Y(I) for the baseline, whose
number of replicates may differ. The observed difference is d = mean_r metric(X_r) - mean_s metric(Y_s). The
p-value is the two-sided version of the bootstrap test of no difference (Efron & Tibshirani 1993, 16.4, there
one-sided): p = (c + 1) / (n + 1), c the number of resamples whose d(I) = m_X(I) - m_Y(I), shifted to mean zero
(the null hypothesis), is as far from zero as d or further: |d(I) - mean d| >= |d|.

``sacrebleu_p_value`` keeps sacreBLEU's paired bootstrap statistic (``--paired-bs``) beside ours: it centres |d(I)|
on its mean and counts |d(I)| - mean|d| > |d|, which folds differences that straddle zero (docs/evaluation.md, "The
scores"); with one replicate a side it is exactly sacreBLEU's. BLEU and chrF come from summed sufficient statistics
of the resampled sentences (sacreBLEU's own per-sentence statistics), RIBES as the mean of its sentence scores.
"""
from __future__ import annotations

import statistics
from typing import Dict, List, Optional, Sequence

import numpy as np

DEFAULT_SEED = 12345  # sacreBLEU's default SACREBLEU_SEED: a single-replicate test equals its paired bootstrap


def resamples(n_sentences: int, n_samples: int = 1000, seed: Optional[int] = DEFAULT_SEED) -> np.ndarray:
    """(n_samples, n_sentences) sentence indices drawn with replacement, as sacreBLEU draws them."""
    rng = np.random.default_rng(seed)
    return rng.choice(n_sentences, size=(n_samples, n_sentences), replace=True)


def p_value(system: np.ndarray, baseline: np.ndarray, observed: float) -> float:
    """The two-sided bootstrap p-value of no difference: the share of the resampled differences, shifted to mean
    zero, at least as far from zero as the observed difference ((c + 1) / (n + 1); the module docstring)."""
    diffs = np.asarray(system, dtype=np.float64) - np.asarray(baseline, dtype=np.float64)
    c = int(np.sum(np.abs(diffs - diffs.mean()) >= abs(observed)))
    return (c + 1) / (len(diffs) + 1)


def sacrebleu_p_value(system: np.ndarray, baseline: np.ndarray, observed: float) -> float:
    """sacreBLEU's p-value of the paired bootstrap: per resample the absolute difference, centred on its mean,
    compared with the observed difference (``_compute_p_value``: (c + 1) / (n + 1)); smaller than
    ``p_value``'s when the differences straddle zero (the module docstring)."""
    from sacrebleu.significance import _compute_p_value

    diffs = np.abs(np.asarray(system, dtype=np.float64) - np.asarray(baseline, dtype=np.float64))
    return float(_compute_p_value(diffs - diffs.mean(), abs(observed)))


def resampled_means(scores: Sequence[Sequence[float]], idxs: np.ndarray) -> np.ndarray:
    """A mean-of-sentences metric (RIBES): per resample, each replicate's mean over the resampled sentences,
    averaged over the replicates. ``scores``: (replicates, sentences)."""
    s = np.asarray(scores, dtype=np.float64)
    return s[:, idxs].mean(axis=2).mean(axis=0)


def resampled_corpus_scores(stats: Sequence[np.ndarray], metric, idxs: np.ndarray) -> np.ndarray:
    """A corpus metric of summed sufficient statistics (BLEU, chrF): per resample, each replicate's score from
    its resampled sentences' statistics, averaged over the replicates. ``stats``: per replicate (N, k)."""
    out = np.zeros(len(idxs))
    for st in stats:
        sums = np.asarray(st, dtype=np.float64)[idxs].sum(axis=1)  # (samples, k)
        out += np.array([metric._compute_score_from_stats(list(row)).score for row in sums])
    return out / len(stats)


def _summary(scores: List[float]) -> dict:
    # the sample standard deviation; one run has none (None, not a spread of 0)
    return {"mean": statistics.fmean(scores), "sd": statistics.stdev(scores) if len(scores) > 1 else None,
            "replicates": scores}


def corpus_scores(outputs: Sequence[Sequence[str]], refs: Sequence[str], tokenize: Optional[str], metric: str):
    """The corpus score of each replicate (a list of hypothesis lines)."""
    from sacrebleu.metrics import CHRF

    from fairseq_syntax.evaluation.scores import _bleu, ribes

    if metric == "ribes":
        return [ribes(list(h), list(refs), tokenize) for h in outputs]
    m = _bleu(tokenize, force=True) if metric == "bleu" else CHRF()
    return [m.corpus_score(list(h), [list(refs)]).score for h in outputs]


def check_lines(outputs: Sequence[Sequence[str]], refs: Sequence[str]) -> None:
    """Every replicate has one line per reference (sacreBLEU scores a short one without a word)."""
    for k, hyp in enumerate(outputs):
        if len(hyp) != len(refs):
            raise ValueError(f"replicate {k}: {len(hyp)} lines for {len(refs)} references")


def summarize(outputs: Sequence[Sequence[str]], refs: Sequence[str], tokenize: Optional[str] = None,
              metrics: Sequence[str] = ("bleu", "chrf", "ribes")) -> Dict[str, dict]:
    """Per metric the mean and standard deviation of a system's replicates (no test)."""
    check_lines(outputs, refs)
    return {name: _summary(corpus_scores(outputs, refs, tokenize, name)) for name in metrics}


def compare(systems: Sequence[Sequence[str]], baselines: Sequence[Sequence[str]], refs: Sequence[str],
            tokenize: Optional[str] = None, metrics: Sequence[str] = ("bleu", "chrf", "ribes"),
            n_samples: int = 1000, seed: Optional[int] = DEFAULT_SEED) -> Dict[str, dict]:
    """Per metric: the system's and the baseline's mean and standard deviation over their replicates (each a
    list of hypothesis lines, one per reference line), the difference of means, its two-sided multi-replicate
    bootstrap p-value and sacreBLEU's p-value of the same resamples (see the module docstring)."""
    from sacrebleu.metrics import CHRF

    from fairseq_syntax.evaluation.scores import _bleu, sentence_ribes

    check_lines(list(systems) + list(baselines), refs)
    idxs = resamples(len(refs), n_samples, seed)
    out = {}
    for name in metrics:
        if name == "ribes":
            sys_s = [sentence_ribes(list(h), list(refs), tokenize) for h in systems]
            base_s = [sentence_ribes(list(h), list(refs), tokenize) for h in baselines]
            sys_scores, base_scores = [float(np.mean(s)) for s in sys_s], [float(np.mean(s)) for s in base_s]
            m_sys, m_base = resampled_means(sys_s, idxs), resampled_means(base_s, idxs)
        else:
            metric = _bleu(tokenize, force=True) if name == "bleu" else CHRF()
            sys_st = [np.array(metric._extract_corpus_statistics(list(h), [list(refs)])) for h in systems]
            base_st = [np.array(metric._extract_corpus_statistics(list(h), [list(refs)])) for h in baselines]
            sys_scores = [metric._compute_score_from_stats(list(st.sum(0))).score for st in sys_st]
            base_scores = [metric._compute_score_from_stats(list(st.sum(0))).score for st in base_st]
            m_sys = resampled_corpus_scores(sys_st, metric, idxs)
            m_base = resampled_corpus_scores(base_st, metric, idxs)
        system, baseline = _summary(sys_scores), _summary(base_scores)
        observed = system["mean"] - baseline["mean"]
        out[name] = {"system": system, "baseline": baseline, "difference": observed,
                     "p_value": p_value(m_sys, m_base, observed),
                     "p_sacrebleu": sacrebleu_p_value(m_sys, m_base, observed), "resamples": n_samples}
    return out
