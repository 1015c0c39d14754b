"""Score translations: sacreBLEU (with its signature), chrF, RIBES, paired bootstrap, BLEU by source length.

The library behind ``fairseq-syntax-evaluate`` (:mod:`fairseq_syntax.cli.evaluate`).

* BLEU and chrF are sacreBLEU's metrics (``sacrebleu.metrics``), so scores and signatures are those of the
  ``sacrebleu`` command on the same files.
* ``--baseline``: sacreBLEU's paired bootstrap resampling (``sacrebleu.significance.PairedTest``, ``--paired-bs``
  on its command line; seed 12345 unless SACREBLEU_SEED is set) of the system against the baseline, for BLEU and
  chrF: p-values, means and 95% confidence intervals.
* BLEU by source length (Bugliarello & Okazaki 2020, Fig. 3): sentences are grouped by the number of whitespace
  tokens of ``--source`` (else of the reference) into the buckets given by ``--length-buckets``, and each group is
  scored as a corpus; ``--plot`` draws it (system and baseline) as a PNG.
* ``--ribes``: RIBES (Isozaki et al. 2010, the WAT metric for Japanese and other distant-order targets): the mean
  over sentences of NKT x P^0.25 x BP^0.10 (NKT: normalised Kendall's tau of the aligned words' order; P: unigram
  precision; BP: brevity penalty), NLTK's implementation, 3.10.4 or later (earlier versions count Kendall's tau
  over runs of consecutive ranks only: they are refused; each report records ``ribes_implementation``). NLTK
  aligns the words as the official RIBES.py does, except on some sentences with repeated words, where its context
  window is narrower: compare with published WAT RIBES with that in mind. Its tokens are BLEU's: sacreBLEU's
  ``--tokenize`` tokenizer when one is given (e.g. ``ja-mecab`` on detokenised Japanese), else whitespace tokens
  (give tokenised text, as WAT does). With ``--baseline``, RIBES gets the same paired bootstrap test as BLEU (the
  same resamples: RIBES is a mean of sentence scores, so a resample's score is the mean over its sentences).
"""
from typing import Dict, List, Optional, Sequence

from fairseq_syntax.errors import OptionError, SyntaxDataError
from fairseq_syntax.text_reading import read_text_lines


def read_lines(path: str) -> List[str]:
    return list(read_text_lines(path))


def check_same_length(named: Dict[str, List[str]]):
    """Every file has as many lines as the first, and none is empty."""
    for name, lines in named.items():
        if not lines:
            raise SyntaxDataError(name, "empty: no sentences to score")
    sizes = {name: len(lines) for name, lines in named.items()}
    if len(set(sizes.values())) > 1:
        first = next(iter(named))
        for name, n in sizes.items():
            if n != sizes[first]:
                raise SyntaxDataError(name, f"{n} lines but {first} has {sizes[first]}")


def _bleu(tokenize: Optional[str], force: bool = False):
    """sacreBLEU's BLEU; ``force``: no warning about tokenised-looking output (the caller scores text it knows,
    e.g. replicates of a recipe whose evaluation warned once already)."""
    from sacrebleu.metrics import BLEU

    return BLEU(tokenize=tokenize, force=force) if tokenize else BLEU(force=force)


def length_buckets(lengths: Sequence[int], bounds: Sequence[int]) -> List[tuple]:
    """[(label, [sentence indices])] for bounds b1 < b2 < ...: (0,b1], (b1,b2], ..., >bn; empty ones dropped."""
    edges = [0] + list(bounds)
    out = []
    for lo, hi in zip(edges[:-1], edges[1:]):
        out.append((f"{lo + 1}-{hi}", [i for i, n in enumerate(lengths) if lo < n <= hi]))
    out.append((f">{edges[-1]}", [i for i, n in enumerate(lengths) if n > edges[-1]]))
    return [(label, idx) for label, idx in out if idx]


#: the first NLTK whose Kendall's tau counts every pair of aligned words (as RIBES.py does)
RIBES_NLTK = (3, 10, 4)


def ribes_implementation() -> str:
    """The RIBES implementation in use (``nltk X.Y.Z``); an NLTK before :data:`RIBES_NLTK` is an error."""
    import re

    import nltk

    version = nltk.__version__
    parts = tuple(int(x) for x in re.findall(r"\d+", version)[:3])
    if parts < RIBES_NLTK:
        raise OptionError(f"RIBES: NLTK {version} counts Kendall's tau over runs of consecutive ranks only, and "
                          "scores RIBES about 45 points low: install nltk>=3.10.4 (Python 3.10 or later)")
    return f"nltk {version}"


def sentence_ribes(hyp: List[str], ref: List[str], tokenize: Optional[str] = None) -> List[float]:
    """RIBES of each sentence (x 100), alpha 0.25, beta 0.10, on BLEU's tokens (see the module docstring)."""
    ribes_implementation()
    from nltk.translate.ribes_score import sentence_ribes as one

    split = str.split
    if tokenize:
        tok = _bleu(tokenize).tokenizer

        def split(text):
            return tok(text.strip()).split()

    return [100 * one([split(r)], split(h), alpha=0.25, beta=0.10) for h, r in zip(hyp, ref)]


def ribes(hyp: List[str], ref: List[str], tokenize: Optional[str] = None) -> float:
    """Corpus RIBES (x 100, as WAT reports it): the mean of the sentence scores."""
    scores = sentence_ribes(hyp, ref, tokenize)
    return sum(scores) / len(scores) if scores else 0.0


def paired_bootstrap_mean(system: Sequence[float], baseline: Sequence[float], n_samples: int = 1000) -> dict:
    """sacreBLEU's paired bootstrap test (``_paired_bs_test``: the same resamples, seed and p-value) for a
    metric that is the mean of sentence scores, e.g. RIBES."""
    import os

    import numpy as np
    from sacrebleu.significance import _compute_p_value, estimate_ci

    seed = os.environ.get("SACREBLEU_SEED", "12345")  # read as sacreBLEU's PairedTest reads it: 0 and none
    seed = None if seed.lower() == "none" else int(seed)  # leave its generator unseeded (no two runs resample
    rng = np.random.default_rng(seed if seed else None)  # alike), and ours too
    sys_s, base_s = np.asarray(system, dtype=np.float64), np.asarray(baseline, dtype=np.float64)
    idxs = rng.choice(len(sys_s), size=(n_samples, len(sys_s)), replace=True)
    scores_sys, scores_base = sys_s[idxs].mean(1), base_s[idxs].mean(1)
    out = {}
    for name, scores in (("baseline", scores_base), ("system", scores_sys)):
        mean, ci = estimate_ci(scores)
        out[name] = {"score": float((sys_s if name == "system" else base_s).mean()), "mean": float(mean),
                     "ci95": float(ci), "p_value": None}
    diffs = np.abs(scores_sys - scores_base)
    out["system"]["p_value"] = float(_compute_p_value(diffs - diffs.mean(), abs(sys_s.mean() - base_s.mean())))
    return out


def evaluate(hyp: List[str], ref: List[str], baseline: Optional[List[str]] = None, source: Optional[List[str]] = None,
             tokenize: Optional[str] = None, bounds: Sequence[int] = (10, 20, 30, 40, 50),
             bootstrap_samples: int = 1000, with_ribes: bool = False) -> dict:
    from sacrebleu.metrics import CHRF

    bleu, chrf = _bleu(tokenize), CHRF()
    result = {
        "bleu": bleu.corpus_score(hyp, [ref]).score,
        "bleu_signature": str(bleu.get_signature()),
        "chrf": chrf.corpus_score(hyp, [ref]).score,
        "chrf_signature": str(chrf.get_signature()),
        "sentences": len(hyp),
    }
    if with_ribes:
        per_sentence = sentence_ribes(hyp, ref, tokenize)
        result["ribes"] = sum(per_sentence) / max(1, len(per_sentence))
        result["ribes_tokens"] = tokenize or "whitespace"
        result["ribes_implementation"] = ribes_implementation()
        if baseline is not None:
            base_sentences = sentence_ribes(baseline, ref, tokenize)
            result["baseline_ribes"] = sum(base_sentences) / max(1, len(base_sentences))
    systems = {"system": hyp}
    if baseline is not None:
        from sacrebleu.significance import PairedTest

        test = PairedTest([("baseline", baseline), ("system", hyp)], {"BLEU": _bleu(tokenize), "chrF": CHRF()},
                          [ref], test_type="bs", n_samples=bootstrap_samples)
        _, res = test()
        result["baseline_bleu"] = _bleu(tokenize).corpus_score(baseline, [ref]).score
        result["bootstrap"] = {
            metric: {name: {"score": float(r.score), "mean": float(r.mean), "ci95": float(r.ci),
                            "p_value": None if r.p_value is None else float(r.p_value)}
                     for name, r in zip(res["System"], res[key])}
            for metric, key in (("bleu", "BLEU"), ("chrf", "chrF2"))
        }
        if with_ribes:
            result["bootstrap"]["ribes"] = paired_bootstrap_mean(per_sentence, base_sentences, bootstrap_samples)
        systems["baseline"] = baseline
    lengths = [len(s.split()) for s in (source if source is not None else ref)]
    result["length_basis"] = "source" if source is not None else "reference"
    result["by_length"] = [
        dict(bucket=label, sentences=len(idx),
             **{name: _bleu(tokenize).corpus_score([lines[i] for i in idx], [[ref[i] for i in idx]]).score
                for name, lines in systems.items()})
        for label, idx in length_buckets(lengths, bounds)
    ]
    return result


def format_report(r: dict) -> str:
    lines = [f"BLEU {r['bleu']:.2f}   ({r['bleu_signature']})", f"chrF {r['chrf']:.2f}   ({r['chrf_signature']})"]
    if "ribes" in r:
        base = f"   (baseline {r['baseline_ribes']:.2f})" if "baseline_ribes" in r else ""
        lines.append(f"RIBES {r['ribes']:.2f}{base}")
    if "bootstrap" in r:
        for metric in ("bleu", "chrf", "ribes"):
            if metric not in r["bootstrap"]:
                continue
            b = r["bootstrap"][metric]
            lines.append(f"paired bootstrap {metric}: system {b['system']['mean']:.2f} +- {b['system']['ci95']:.2f} "
                         f"vs baseline {b['baseline']['mean']:.2f} +- {b['baseline']['ci95']:.2f}, "
                         f"p = {b['system']['p_value']:.4f}")
    names = [n for n in ("system", "baseline") if n in r["by_length"][0]] if r["by_length"] else []
    lines.append(f"BLEU by {r['length_basis']} length:")
    lines.append("  bucket     sentences  " + "  ".join(f"{n:>8}" for n in names))
    for row in r["by_length"]:
        lines.append(f"  {row['bucket']:<10} {row['sentences']:>9}  " + "  ".join(f"{row[n]:8.2f}" for n in names))
    return "\n".join(lines)


def plot_by_length(r: dict, path: str) -> None:
    """BLEU per source-length bucket, one line per system (Bugliarello & Okazaki 2020, Fig. 3)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = r["by_length"]
    labels = [f"{row['bucket']}\n({row['sentences']})" for row in rows]
    fig, ax = plt.subplots(figsize=(1.1 * len(rows) + 2, 3.2))
    for name, style in (("system", "o-"), ("baseline", "s--")):
        if rows and name in rows[0]:
            ax.plot(range(len(rows)), [row[name] for row in rows], style, label=name)
    ax.set_xticks(range(len(rows)))
    ax.set_xticklabels(labels, fontsize=8)
    ax.set_xlabel(f"{r['length_basis']} length in tokens (sentences)")
    ax.set_ylabel("BLEU")
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=150)
    plt.close(fig)
