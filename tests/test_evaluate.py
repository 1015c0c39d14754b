"""The evaluation command against sacreBLEU's own command line (scores, paired bootstrap)."""
import json
import os
import random
import shutil

import pytest

from fairseq_syntax.cli.evaluate import main
from fairseq_syntax.evaluation.scores import length_buckets, ribes
from fairseq_syntax.errors import SyntaxDataError
from helpers import BIN, run


@pytest.fixture(scope="module")
def systems(data_bin, tmp_path_factory):
    """A reference (the synthetic test targets) and two degraded 'systems' (seeded word drops and swaps)."""
    ref = open(os.path.join(os.path.dirname(data_bin), "raw", "test.tgt")).read().splitlines()
    rng = random.Random(0)

    def degrade(line, p):
        words = [w for w in line.split() if rng.random() > p]
        if len(words) > 2 and rng.random() < p:
            i = rng.randrange(len(words) - 1)
            words[i], words[i + 1] = words[i + 1], words[i]
        return " ".join(words) or line

    d = tmp_path_factory.mktemp("eval")
    paths = {}
    for name, lines in (("ref", ref), ("sys", [degrade(x, 0.1) for x in ref]), ("base", [degrade(x, 0.3) for x in ref])):
        paths[name] = str(d / f"{name}.txt")
        with open(paths[name], "w") as f:
            f.write("\n".join(lines) + "\n")
    return paths


def sacrebleu_cli(*args):
    return run([os.path.join(BIN, "sacrebleu"), *args]).stdout


def test_scores_match_the_sacrebleu_command(systems):
    r = main(["--hyp", systems["sys"], "--ref", systems["ref"]])
    bleu = float(sacrebleu_cli(systems["ref"], "-i", systems["sys"], "-m", "bleu", "-b", "-w", "6"))
    chrf = float(sacrebleu_cli(systems["ref"], "-i", systems["sys"], "-m", "chrf", "-b", "-w", "6"))
    assert r["bleu"] == pytest.approx(bleu, abs=1e-5) and r["chrf"] == pytest.approx(chrf, abs=1e-5)
    assert r["bleu_signature"].startswith("nrefs:1|case:mixed|eff:no|tok:13a")


def test_paired_bootstrap_matches_sacrebleu(systems, tmp_path):
    out = str(tmp_path / "r.json")
    main(["--hyp", systems["sys"], "--ref", systems["ref"], "--baseline", systems["base"], "--json", out])
    r = json.load(open(out))
    cli = json.loads(sacrebleu_cli(systems["ref"], "-i", systems["base"], systems["sys"], "-m", "bleu",
                                   "--paired-bs", "--paired-bs-n", "1000", "-f", "json"))
    assert r["bootstrap"]["bleu"]["system"]["p_value"] == pytest.approx(cli[1]["BLEU"]["p_value"], rel=1e-9)
    assert r["bootstrap"]["bleu"]["system"]["mean"] == pytest.approx(cli[1]["BLEU"]["mean"], rel=1e-9)
    assert r["bootstrap"]["bleu"]["baseline"]["ci95"] == pytest.approx(cli[0]["BLEU"]["ci"], rel=1e-9)
    assert 0 < r["bootstrap"]["bleu"]["system"]["p_value"] < 0.05  # 10% vs 30% dropped words


def test_length_buckets(systems):
    assert length_buckets([3, 10, 11, 25, 60], [10, 20, 30]) == [("1-10", [0, 1]), ("11-20", [2]), ("21-30", [3]),
                                                                  (">30", [4])]
    r = main(["--hyp", systems["sys"], "--ref", systems["ref"], "--source", systems["ref"], "--length-buckets", "1000"])
    assert r["by_length"] == [{"bucket": "1-1000", "sentences": r["sentences"], "system": r["bleu"]}]


def test_line_count_mismatch_names_the_file(systems, tmp_path):
    short = str(tmp_path / "short.txt")
    shutil.copy(systems["sys"], short)
    with open(short) as f:
        lines = f.read().splitlines()[:-1]
    with open(short, "w") as f:
        f.write("\n".join(lines) + "\n")
    with pytest.raises(SyntaxDataError, match="short.txt"):
        main(["--hyp", short, "--ref", systems["ref"]])


def test_ribes_by_hand_and_in_the_report(systems, tmp_path):
    # one swap of four aligned words: Kendall's tau (5 - 1) / 6, NKT (tau + 1) / 2 = 5/6, P = BP = 1
    assert ribes(["a c b d"], ["a b c d"]) == pytest.approx(100 * 5 / 6)
    assert ribes(["d c b a"], ["a b c d"]) == 0  # reversed order
    # a shorter hypothesis: P = 1, BP = exp(1 - 4/3), NKT = 1
    assert ribes(["a b d"], ["a b c d"]) == pytest.approx(100 * 2.718281828 ** ((1 - 4 / 3) * 0.10), rel=1e-6)
    png = str(tmp_path / "len.png")
    r = main(["--hyp", systems["sys"], "--ref", systems["ref"], "--baseline", systems["base"], "--ribes",
              "--plot", png, "--bootstrap-samples", "50"])
    assert 0 < r["baseline_ribes"] < r["ribes"] < 100
    with open(png, "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"


def test_ribes_bootstrap_uses_sacrebleus_resamples_and_p_value(systems):
    """RIBES's paired bootstrap: sacreBLEU's resampling (seed, indices) and p-value formula applied to the mean
    of sentence scores; checked by hand on the same resamples."""
    import numpy as np

    from fairseq_syntax.evaluation.scores import paired_bootstrap_mean, sentence_ribes

    ref = open(systems["ref"]).read().splitlines()
    sys_s = sentence_ribes(open(systems["sys"]).read().splitlines(), ref)
    base_s = sentence_ribes(open(systems["base"]).read().splitlines(), ref)
    r = paired_bootstrap_mean(sys_s, base_s, n_samples=200)
    idx = np.random.default_rng(12345).choice(len(sys_s), size=(200, len(sys_s)), replace=True)
    a, b = np.asarray(sys_s)[idx].mean(1), np.asarray(base_s)[idx].mean(1)
    d = np.abs(a - b)
    expected = (np.sum(d - d.mean() > abs(np.mean(sys_s) - np.mean(base_s))) + 1) / 201
    assert r["system"]["p_value"] == pytest.approx(expected) and r["system"]["mean"] == pytest.approx(a.mean())
    assert r["system"]["p_value"] < 0.05  # 10% vs 30% dropped words


def test_ribes_on_sacrebleus_japanese_tokens(tmp_path):
    """--tokenize ja-mecab: BLEU and RIBES on MeCab's tokens of detokenised Japanese, whatever segmentation
    the system wrote; the same sentence segmented otherwise scores the same."""
    pytest.importorskip("MeCab")
    ref = tmp_path / "ref.ja"
    ref.write_text("私はテニス部員です。\n彼はつらい人生を送った。\n", encoding="utf-8")
    hyp = tmp_path / "hyp.ja"
    hyp.write_text("私はテニス部員です。\n人生を彼はつらい送った。\n", encoding="utf-8")
    r = main(["--hyp", str(hyp), "--ref", str(ref), "--tokenize", "ja-mecab", "--ribes", "--bootstrap-samples", "20",
              "--baseline", str(ref)])
    assert "tok:ja-mecab" in r["bleu_signature"] and r["ribes_tokens"] == "ja-mecab"
    assert 0 < r["ribes"] < 100 and r["baseline_ribes"] == pytest.approx(100)
    assert "ribes" in r["bootstrap"]
    # the recipe removes the system's own spaces first: two segmentations of one output score the same
    for segmented in ("私 は テニス 部員 です 。\n人生 を 彼 は つらい 送っ た 。\n",
                      "私は テニス部 員です 。\n人生を 彼は つらい送っ た。\n"):
        joined = tmp_path / "joined.ja"
        joined.write_text(segmented.replace(" ", ""), encoding="utf-8")
        again = main(["--hyp", str(joined), "--ref", str(ref), "--tokenize", "ja-mecab", "--ribes"])
        assert again["bleu"] == pytest.approx(r["bleu"]) and again["ribes"] == pytest.approx(r["ribes"])


def test_a_split_compound_comes_back_whole(tmp_path):
    """UDPipe writes T-Shirt as 'T - Shirt'; the detokeniser joins an in-word hyphen, not a dash between
    clauses or next to punctuation, and keeps Moses' own @-@ marks working."""
    from fairseq_syntax.cli.detokenize import main as detok_main
    from fairseq_syntax.evaluation.detokenize import detokenize, join_hyphens

    assert list(detokenize(["Ein Mann im T - Shirt , rot - weiß gestreift .", "Ein E @-@ Gitarrist ."], "de")) == \
        ["Ein Mann im T-Shirt, rot-weiß gestreift.", "Ein E-Gitarrist."]
    assert join_hyphens('Ein " Boston " - Schild') == 'Ein " Boston " - Schild'  # no word character before it
    assert join_hyphens("Kinder - drei") == "Kinder-drei"  # the rule's known error: a spaced dash between words
    src, out = tmp_path / "hyp.tok", tmp_path / "hyp.txt"
    src.write_text("Eine Frau im T - Shirt .\n", encoding="utf-8")
    detok_main(["-l", "de", "-i", str(src), "-o", str(out)])
    assert out.read_text(encoding="utf-8") == "Eine Frau im T-Shirt.\n"


def test_the_scores_do_not_wait_on_matplotlib(systems, tmp_path, monkeypatch, capsys):
    """A bare GPU machine has no matplotlib: --json is written and --plot is left out with a line saying so
    (the scores do not wait on the plot)."""
    import sys

    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib -> ImportError
    out, png = tmp_path / "scores.json", tmp_path / "len.png"
    main(["--hyp", systems["sys"], "--ref", systems["ref"], "--bootstrap-samples", "10", "--plot", str(png),
          "--json", str(out)])
    assert json.load(open(out))["bleu"] > 0 and not png.exists()
    assert "no plot" in capsys.readouterr().err


def test_ribes_counts_every_pair_and_refuses_an_nltk_that_does_not(monkeypatch):
    """b a d c f e against a b c d e f: 3 of the 15 pairs discordant, Kendall's tau 0.6, NKT 0.8, P = BP = 1:
    RIBES 80 (NLTK before 3.10.4 counted pairs inside runs of consecutive ranks only and gave 0: refused)."""
    import nltk

    from fairseq_syntax.errors import OptionError
    from fairseq_syntax.evaluation.scores import ribes_implementation

    assert ribes(["b a d c f e"], ["a b c d e f"]) == pytest.approx(80)
    assert ribes_implementation() == f"nltk {nltk.__version__}"
    monkeypatch.setattr(nltk, "__version__", "3.9.1")
    with pytest.raises(OptionError, match="nltk>=3.10.4"):
        ribes(["a b"], ["a b"])


def test_an_unseeded_bootstrap_is_unseeded_for_ribes_too(systems, monkeypatch):
    """SACREBLEU_SEED=0: sacreBLEU's PairedTest leaves its generator unseeded (a falsy seed); RIBES's test
    reads the seed the same way (it had seeded with 0: reproducible, and on resamples BLEU's were not)."""
    import numpy as np

    from fairseq_syntax.evaluation import scores

    seen = []
    real = np.random.default_rng
    monkeypatch.setattr(np.random, "default_rng", lambda seed=None: seen.append(seed) or real(seed))
    monkeypatch.setenv("SACREBLEU_SEED", "0")
    scores.paired_bootstrap_mean([1.0, 2.0, 3.0], [1.0, 2.0, 2.5], n_samples=10)
    monkeypatch.setenv("SACREBLEU_SEED", "7")
    scores.paired_bootstrap_mean([1.0, 2.0, 3.0], [1.0, 2.0, 2.5], n_samples=10)
    assert seen == [None, 7]
