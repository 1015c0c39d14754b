"""The multi-replicate paired bootstrap (fairseq_syntax/evaluation/replicates.py, Clark et al. 2011): cases
worked by hand, compare() against the test written out on the text, and with one replicate per side
sacreBLEU's paired bootstrap p-value exactly (and ours for RIBES)."""
import numpy as np
import pytest

from fairseq_syntax.evaluation import replicates


def test_a_case_worked_by_hand():
    """Two sentences, two replicates a side, a mean-of-sentences metric, three resamples given:
    system replicates score (1, 3) and (3, 5) per sentence, the baseline's (1, 1) and (2, 2).
    Resample [0, 0]: system (1 + 3) / 2 = 2, baseline (1 + 2) / 2 = 1.5, diff 0.5;
    resample [1, 1]: 4 and 1.5, diff 2.5; resample [0, 1]: (2 + 4) / 2 = 3 and 1.5, diff 1.5.
    Mean diff 1.5; shifted to mean zero: -1, 1, 0. Observed: means of replicates (2 + 4) / 2 = 3 against 1.5:
    1.5. No shifted difference is 1.5 or more from zero: p = (0 + 1) / (3 + 1) = 0.25. An observed -1.0 (the
    sign does not matter): two of them are 1.0 from zero (>=, not >): p = (2 + 1) / 4."""
    idxs = np.array([[0, 0], [1, 1], [0, 1]])
    sys_scores, base_scores = [[1, 3], [3, 5]], [[1, 1], [2, 2]]
    m_sys = replicates.resampled_means(sys_scores, idxs)
    m_base = replicates.resampled_means(base_scores, idxs)
    assert m_sys.tolist() == [2.0, 4.0, 3.0] and m_base.tolist() == [1.5, 1.5, 1.5]
    assert replicates.p_value(m_sys, m_base, observed=3.0 - 1.5) == 0.25
    assert replicates.p_value(m_sys, m_base, observed=-1.0) == 0.75
    # sacreBLEU's statistic on the same resamples: |diff| 0.5, 2.5, 1.5 centred on 1.5: -1, 1, 0; strictly
    # above 0.5 once: (1 + 1) / 4
    assert replicates.sacrebleu_p_value(m_sys, m_base, observed=0.5) == 0.5


class _Ratio:
    """A corpus metric of summed statistics (matches, total): 100 * matches / total (BLEU's shape in small)."""

    @staticmethod
    def _compute_score_from_stats(stats):
        class Score:
            score = 100.0 * stats[0] / stats[1]
        return Score()


def test_a_corpus_metric_case_worked_by_hand():
    """Unequal replicates (two against one), a baseline that moves with the resample, a ratio of sums (pooling
    the replicates' statistics or averaging sentence scores gives other numbers). (matches, total) per sentence:
    system r1 (1, 2), (3, 3); r2 (2, 2), (0, 4); baseline (1, 4), (2, 2). Resamples [0, 0], [1, 1], [0, 1]:
    r1 2/4, 6/6, 4/5 -> 50, 100, 80; r2 4/4, 0/8, 2/6 -> 100, 0, 33.33; system 75, 50, 56.67 (pooled would be
    75, 42.86, 60); baseline 2/8, 4/4, 3/6 -> 25, 100, 50. Differences 50, -50, 6.67, mean 2.22, shifted
    47.78, -52.22, 4.44. Observed: (80 + 33.33) / 2 - 50 = 6.67; two shifted differences are that far from
    zero: p = (2 + 1) / 4. The same resamples for every replicate: drawing per replicate changes r2's row."""
    idxs = np.array([[0, 0], [1, 1], [0, 1]])
    r1, r2, base = np.array([[1, 2], [3, 3]]), np.array([[2, 2], [0, 4]]), np.array([[1, 4], [2, 2]])
    m_sys = replicates.resampled_corpus_scores([r1, r2], _Ratio, idxs)
    m_base = replicates.resampled_corpus_scores([base], _Ratio, idxs)
    assert m_sys == pytest.approx([75.0, 50.0, 56.6666667]) and m_base == pytest.approx([25.0, 100.0, 50.0])
    observed = (80.0 + 100.0 / 3) / 2 - 50.0
    assert replicates.p_value(m_sys, m_base, observed) == 0.75


def _outputs():
    import random

    rng = random.Random(4)
    words = "the a cat dog sat on mat ran fast slowly house tree big small red blue".split()
    refs = [" ".join(rng.choice(words) for _ in range(rng.randint(4, 12))) for _ in range(60)]

    def noisy(p):
        out = []
        for r in refs:
            toks = [w if rng.random() > p else rng.choice(words) for w in r.split()]
            out.append(" ".join(toks))
        return out

    return refs, noisy


def test_one_replicate_each_is_sacrebleus_paired_bootstrap():
    from sacrebleu.metrics import BLEU, CHRF
    from sacrebleu.significance import PairedTest

    from fairseq_syntax.evaluation.scores import paired_bootstrap_mean, sentence_ribes

    refs, noisy = _outputs()
    hyp, base = noisy(0.2), noisy(0.35)
    got = replicates.compare([hyp], [base], refs, tokenize="none", n_samples=300)
    _, res = PairedTest([("baseline", base), ("system", hyp)], {"BLEU": BLEU(tokenize="none"), "chrF": CHRF()},
                        [refs], test_type="bs", n_samples=300)()
    assert got["bleu"]["p_sacrebleu"] == res["BLEU"][1].p_value
    assert got["chrf"]["p_sacrebleu"] == res["chrF2"][1].p_value
    assert got["bleu"]["system"]["mean"] == pytest.approx(res["BLEU"][1].score)
    ribes = paired_bootstrap_mean(sentence_ribes(hyp, refs, "none"), sentence_ribes(base, refs, "none"), 300)
    assert got["ribes"]["p_sacrebleu"] == ribes["system"]["p_value"]


def test_replicates_average_and_spread():
    """Three replicates a side: the means and sample standard deviations of the corpus scores; a better system
    with small seed noise is significant."""
    from fairseq_syntax.evaluation.scores import _bleu

    refs, noisy = _outputs()
    good, bad = [noisy(0.1) for _ in range(3)], [noisy(0.4) for _ in range(3)]
    got = replicates.compare(good, bad, refs, tokenize="none", metrics=("bleu",), n_samples=200)["bleu"]
    bleus = [_bleu("none").corpus_score(h, [refs]).score for h in good]
    assert got["system"]["mean"] == pytest.approx(np.mean(bleus))
    assert got["system"]["sd"] == pytest.approx(np.std(bleus, ddof=1))
    assert got["difference"] > 10 and got["p_value"] < 0.01


def test_compare_is_the_bootstrap_written_out_on_the_text():
    """compare() against the test written out plainly: per resample, each replicate's sentences picked by the
    shared indices and scored by sacreBLEU's corpus_score, averaged per side; two replicates against three
    (every committed row has unequal counts), close systems so that the p-value is not at its floor."""
    from fairseq_syntax.evaluation.scores import _bleu

    refs, noisy = _outputs()
    systems, baselines = [noisy(0.3) for _ in range(2)], [noisy(0.25) for _ in range(3)]
    n = 60
    got = replicates.compare(systems, baselines, refs, tokenize="none", metrics=("bleu",), n_samples=n)["bleu"]
    bleu = _bleu("none", force=True)
    score = lambda hyps, idx: bleu.corpus_score([hyps[i] for i in idx], [[refs[i] for i in idx]]).score  # noqa
    everything = range(len(refs))
    observed = np.mean([score(h, everything) for h in systems]) - np.mean([score(h, everything) for h in baselines])
    diffs = np.array([np.mean([score(h, idx) for h in systems]) - np.mean([score(h, idx) for h in baselines])
                      for idx in replicates.resamples(len(refs), n)])
    expected = (np.sum(np.abs(diffs - diffs.mean()) >= abs(observed)) + 1) / (n + 1)
    assert got["difference"] == pytest.approx(observed) and got["baseline"]["replicates"] == pytest.approx(
        [score(h, everything) for h in baselines])
    assert got["p_value"] == pytest.approx(expected) and 0.2 < expected < 1  # not at the floor
    folded = np.abs(diffs)
    assert got["p_sacrebleu"] == pytest.approx((np.sum(folded - folded.mean() > abs(observed)) + 1) / (n + 1))


def test_one_run_has_no_spread():
    refs, noisy = _outputs()
    assert replicates.summarize([noisy(0.2)], refs, "none", ("bleu",))["bleu"]["sd"] is None


def test_a_replicate_short_of_a_line_is_refused_not_scored():
    """sacreBLEU scores 499 hypotheses against 500 references without a word (a dropped last line moved
    Tanaka's transformer from 29.07 to 29.09): summarize refuses, as compare does."""
    refs = ["a b c", "d e f"]
    with pytest.raises(ValueError, match="replicate 1: 1 lines for 2 references"):
        replicates.summarize([refs, refs[:1]], refs, metrics=("bleu",))
    with pytest.raises(ValueError, match="replicate 0: 3 lines for 2 references"):
        replicates.compare([refs + ["g"]], [refs], refs, metrics=("bleu",), n_samples=10)
