"""The multi-replicate paired bootstrap (fairseq_syntax/evaluation/replicates.py, Clark et al. 2011): a case
worked by hand, and with one replicate per side exactly sacreBLEU's paired bootstrap (and ours for RIBES)."""
import numpy as np
import pytest

from fairseq_syntax.evaluation import replicates


def test_a_case_worked_by_hand():
    """Two sentences, two replicates a side, a mean-of-sentences metric, three resamples given:
    system replicates score (1, 3) and (3, 5) per sentence, the baseline's (1, 1) and (2, 2).
    Resample [0, 0]: system (1 + 3) / 2 = 2, baseline (1 + 2) / 2 = 1.5, |diff| 0.5;
    resample [1, 1]: 4 and 1.5, |diff| 2.5; resample [0, 1]: (2 + 4) / 2 = 3 and 1.5, |diff| 1.5.
    Mean |diff| 1.5, centred: -1, 1, 0. Observed: means of replicates (2 + 4) / 2 = 3 against 1.5: 1.5.
    No centred difference exceeds 1.5: p = (0 + 1) / (3 + 1) = 0.25."""
    idxs = np.array([[0, 0], [1, 1], [0, 1]])
    sys_scores, base_scores = [[1, 3], [3, 5]], [[1, 1], [2, 2]]
    m_sys = replicates.resampled_means(sys_scores, idxs)
    m_base = replicates.resampled_means(base_scores, idxs)
    assert m_sys.tolist() == [2.0, 4.0, 3.0] and m_base.tolist() == [1.5, 1.5, 1.5]
    assert replicates.p_value(m_sys, m_base, observed=3.0 - 1.5) == 0.25
    # an observed difference of 0.5 is exceeded by the centred 1.0 once: p = (1 + 1) / 4
    assert replicates.p_value(m_sys, m_base, observed=0.5) == 0.5


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
    assert got["bleu"]["p_value"] == res["BLEU"][1].p_value and got["chrf"]["p_value"] == res["chrF2"][1].p_value
    assert got["bleu"]["system"]["mean"] == pytest.approx(res["BLEU"][1].score)
    ribes = paired_bootstrap_mean(sentence_ribes(hyp, refs, "none"), sentence_ribes(base, refs, "none"), 300)
    assert got["ribes"]["p_value"] == ribes["system"]["p_value"]


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
