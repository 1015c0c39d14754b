"""Where syntax helps: BLEU and chrF of several systems per bucket of the source sentences' length, tree depth and
longest dependency, each system against the first with a paired bootstrap interval (``fairseq-syntax-analyze``).

The source trees are the data-bin's (the split's source syntax, as the models read it): a sentence's length is
its number of units (the parser's words, merged where the subwords merge them: docs/design.md), its depth the
most arcs from a unit to the root, its longest dependency the most units between a unit and its head. A bucket
``lo-hi`` holds the sentences with lo <= value <= hi (the last bucket ``>b``: above the last bound); a bucket of
fewer than 20 sentences joins its neighbour.

Per bucket and metric, every system's score (its replicates' mean, when a system is given as several runs),
and for each system after the first the difference to the first with the 2.5 and 97.5 percentiles of the
paired bootstrap's differences and its two-sided p-value (:mod:`.replicates`: the same resamples of the
bucket's sentences for every system and replicate; Koehn 2004, Clark et al. 2011).
"""
from __future__ import annotations

import os
from typing import Dict, List, Optional, Sequence

import numpy as np

from fairseq_syntax.errors import SyntaxDataError
from fairseq_syntax.evaluation.replicates import DEFAULT_SEED, p_value, resampled_corpus_scores, resamples

#: each feature's default bucket bounds (the Tanaka sentences: 4-16 words)
DEFAULT_BOUNDS = {"length": (6, 9, 12, 15), "depth": (2, 3, 4, 5), "distance": (2, 4, 6, 8)}
FEATURES = tuple(DEFAULT_BOUNDS)


def tree_features(units: Sequence[int], heads: Sequence[int]) -> Dict[str, int]:
    """(length, depth, distance) of one sentence from its per-subword units (1-based) and head units (0: root)."""
    head_of = dict(zip(units, heads))
    n = max(head_of, default=0)
    depth = 0
    for u in head_of:
        d, h, seen = 0, u, set()
        while head_of.get(h, 0) and h not in seen:
            seen.add(h)
            d, h = d + 1, head_of[h]
        depth = max(depth, d)
    distance = max((abs(u - h) for u, h in head_of.items() if h), default=0)
    return {"length": n, "depth": depth, "distance": distance}


def source_tree_features(data_dir: str, split: str, src: Optional[str] = None,
                         tgt: Optional[str] = None) -> Dict[str, np.ndarray]:
    """Per sentence of the data-bin's split: its source length, depth and longest dependency (module docstring)."""
    from fairseq_syntax.data.alignment import syntax_io
    from fairseq_syntax.data.alignment.aligned_view import _dataset, language_pair

    if not os.path.isdir(data_dir):
        raise SyntaxDataError(data_dir, "no such data-bin folder")
    src, tgt = language_pair(data_dir, split, src, tgt)
    prefix = syntax_io.syntax_prefix(data_dir, split, src, tgt, src)
    if not syntax_io.syntax_exists(prefix, "words"):
        raise SyntaxDataError(prefix + ".words.bin", f"the data-bin has no source trees of split {split} (prepared "
                              "with --syntax naming the source side?)")
    units, heads = _dataset(prefix + ".words", "words"), _dataset(prefix + ".heads", "heads")
    rows = [tree_features(units[i].tolist(), heads[i].tolist()) for i in range(len(units))]
    return {f: np.array([r[f] for r in rows], np.int64) for f in FEATURES}


#: a bucket of fewer sentences joins its neighbour: a bootstrap over a handful of sentences says nothing
MIN_SENTENCES = 20


def buckets(values: np.ndarray, bounds: Sequence[int], least: int = MIN_SENTENCES) -> List[tuple]:
    """[(label, sentence indices)] for the bounds b1 < b2 < ...: <=b1, b1+1..b2, ..., >bn; a bucket of fewer than
    ``least`` sentences joins the one before it (the first, the one after), empty ones are left out."""
    edges = sorted(set(int(b) for b in bounds))
    ranges = [(None, edges[0])] + list(zip(edges[:-1], edges[1:])) + [(edges[-1], None)]
    groups = [[lo, hi, np.flatnonzero((values > (lo if lo is not None else -np.inf)) &
                                      (values <= (hi if hi is not None else np.inf)))] for lo, hi in ranges]
    groups = [g for g in groups if len(g[2])]
    k = 0
    while len(groups) > 1 and k < len(groups):
        if len(groups[k][2]) >= least:
            k += 1
            continue
        other = k - 1 if k > 0 else k + 1
        a, b = sorted((k, other))
        groups[a:b + 1] = [[groups[a][0], groups[b][1], np.sort(np.concatenate([groups[a][2], groups[b][2]]))]]
        k = 0
    return [(_label(lo, hi), idx) for lo, hi, idx in groups]


def _label(lo, hi) -> str:
    if lo is None and hi is None:
        return "all"
    if lo is None:
        return f"<={hi}"
    if hi is None:
        return f">{lo}"
    return f"{lo + 1}-{hi}" if hi > lo + 1 else str(hi)


def _metrics(tokenize: Optional[str]):
    from sacrebleu.metrics import CHRF

    from fairseq_syntax.evaluation.scores import _bleu

    return {"bleu": _bleu(tokenize, force=True), "chrf": CHRF()}


def analyze(systems: Dict[str, List[List[str]]], refs: List[str], features: Dict[str, np.ndarray],
            bounds: Optional[Dict[str, Sequence[int]]] = None, tokenize: Optional[str] = None,
            n_samples: int = 1000, seed: Optional[int] = DEFAULT_SEED) -> dict:
    """The table of the module docstring. ``systems``: name -> its replicates (each a list of lines, one per
    reference line), the first the one the others are tested against."""
    bounds = {**DEFAULT_BOUNDS, **(bounds or {})}
    names = list(systems)
    metrics = _metrics(tokenize)
    # each replicate's per-sentence sufficient statistics, once: a bucket sums its sentences'
    stats = {m: {s: [np.array(metric._extract_corpus_statistics(list(h), [list(refs)]), np.float64)
                     for h in runs] for s, runs in systems.items()} for m, metric in metrics.items()}
    out = {"systems": names, "sentences": len(refs), "tokenize": tokenize or "13a", "resamples": n_samples,
           "seed": seed, "features": {}}
    for feature in FEATURES:
        rows = []
        for label, idx in buckets(features[feature], bounds[feature]):
            row = {"bucket": label, "sentences": int(len(idx)), "scores": {}}
            draws = resamples(len(idx), n_samples, seed)
            for m, metric in metrics.items():
                score = {s: float(np.mean([metric._compute_score_from_stats(list(st[idx].sum(0))).score
                                           for st in stats[m][s]])) for s in names}
                resampled = {s: resampled_corpus_scores([st[idx] for st in stats[m][s]], metric, draws)
                             for s in names}
                against = {}
                for s in names[1:]:
                    d = resampled[s] - resampled[names[0]]
                    lo, hi = np.percentile(d, [2.5, 97.5])
                    diff = score[s] - score[names[0]]
                    against[s] = {"difference": diff, "ci95": [float(lo), float(hi)],
                                  "p_value": p_value(resampled[s], resampled[names[0]], diff)}
                row["scores"][m] = {"systems": score, "against_first": against}
            rows.append(row)
        out["features"][feature] = {"bounds": list(bounds[feature]), "buckets": rows}
    return out


def plot(result: dict, path: str) -> None:
    """BLEU per bucket of each feature, a panel each, a line per system, the bucket sizes under the axis."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    titles = {"length": "source length (units)", "depth": "source tree depth", "distance": "longest dependency"}
    fig, axes = plt.subplots(1, len(FEATURES), figsize=(4.2 * len(FEATURES), 3.4), sharey=True)
    for ax, feature in zip(axes, FEATURES):
        rows = result["features"][feature]["buckets"]
        x = np.arange(len(rows))
        for name in result["systems"]:
            ax.plot(x, [r["scores"]["bleu"]["systems"][name] for r in rows], marker="o", label=name)
        ax.set_xticks(x, [f"{r['bucket']}\n({r['sentences']})" for r in rows])
        ax.set_title(titles[feature])
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("BLEU")
    axes[-1].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=150)
    plt.close(fig)


def format_table(result: dict) -> str:
    """The result as text: per feature a line per bucket, each system's BLEU and chrF, and the others' BLEU
    difference to the first with its interval."""
    names = result["systems"]
    lines = []
    for feature, part in result["features"].items():
        lines.append(f"{feature}: bucket (sentences) | " + " | ".join(f"{n} BLEU/chrF" for n in names))
        for r in part["buckets"]:
            cells = [f"{r['scores']['bleu']['systems'][n]:.2f}/{r['scores']['chrf']['systems'][n]:.1f}"
                     for n in names]
            diffs = [f"{n} {a['difference']:+.2f} [{a['ci95'][0]:+.2f}, {a['ci95'][1]:+.2f}] p {a['p_value']:.3f}"
                     for n, a in r["scores"]["bleu"]["against_first"].items()]
            lines.append(f"  {r['bucket']} ({r['sentences']}) | " + " | ".join(cells) +
                         (f"  | BLEU vs {names[0]}: " + "; ".join(diffs) if diffs else ""))
    return "\n".join(lines)
