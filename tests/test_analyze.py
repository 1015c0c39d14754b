"""fairseq-syntax-analyze: BLEU and chrF per bucket of source length, depth and longest dependency, the source
trees read off the data-bin; a bucket's BLEU is sacreBLEU's on that bucket's lines; the features are the trees';
inputs that do not match the reference or the data-bin are one line each."""
import json

import numpy as np
import pytest
from helpers import run, tool

from fairseq_syntax.evaluation.tree_buckets import buckets, source_tree_features, tree_features


def test_the_features_of_a_tree_of_units():
    # units 1..4 (unit 2 in two subwords); heads: 1 root, 2 <- 1, 3 <- 2, 4 <- 1
    assert tree_features([1, 2, 2, 3, 4], [0, 1, 1, 2, 1]) == {"length": 4, "depth": 2, "distance": 3}
    assert tree_features([1], [0]) == {"length": 1, "depth": 0, "distance": 0}


def test_small_buckets_join_their_neighbour():
    values = np.array([1] * 30 + [5] * 3 + [9] * 25)
    got = [(label, len(idx)) for label, idx in buckets(values, (2, 6, 8))]
    assert got == [("<=6", 33), (">8", 25)]  # 3-6 (3 sentences) joins the one before it; 7-8 is empty
    got = [(label, len(idx)) for label, idx in buckets(np.array([1] * 5 + [4] * 40), (2,))]
    assert got == [("all", 45)]  # the first joins the one after it


@pytest.fixture(scope="module")
def systems(data_bin, tmp_path_factory):
    """The test split's references (its target side, as prepare wrote it) and two systems: the references
    themselves and the references with every third word dropped."""
    import os

    d = tmp_path_factory.mktemp("analyze")
    ref = open(os.path.join(data_bin, "work", "test.tok.tgt"), encoding="utf-8").read().splitlines()
    worse = [" ".join(w for k, w in enumerate(line.split()) if k % 3 != 2) for line in ref]
    for name, lines in (("ref.txt", ref), ("good.txt", ref), ("worse.txt", worse), ("short.txt", ref[:-1])):
        (d / name).write_text("\n".join(lines) + "\n", encoding="utf-8")
    return d, ref, worse


def test_a_buckets_bleu_is_sacrebleus_on_its_lines(data_bin, systems):
    import sacrebleu

    d, ref, worse = systems
    run([tool("fairseq-syntax-analyze"), "--data", data_bin, "--ref", str(d / "ref.txt"), "--system",
         f"worse={d / 'worse.txt'}", "--system", f"good={d / 'good.txt'}", "--tokenize", "none",
         "--length-buckets", "4,8", "--bootstrap-samples", "200", "--json", str(d / "a.json"),
         "--plot", str(d / "a.png")])
    result = json.loads((d / "a.json").read_text())
    features = source_tree_features(data_bin, "test")
    assert sorted(result["features"]) == ["depth", "distance", "length"]
    for row, (label, idx) in zip(result["features"]["length"]["buckets"], buckets(features["length"], (4, 8))):
        assert row["bucket"] == label and row["sentences"] == len(idx)
        want = sacrebleu.corpus_bleu([worse[i] for i in idx], [[ref[i] for i in idx]], tokenize="none").score
        assert row["scores"]["bleu"]["systems"]["worse"] == pytest.approx(want)
        good = row["scores"]["bleu"]["against_first"]["good"]
        assert good["difference"] > 0 and good["ci95"][0] <= good["difference"] <= good["ci95"][1]
    assert (d / "a.png").read_bytes()[:4] == b"\x89PNG"


def test_inputs_that_do_not_match_are_one_line_each(data_bin, systems, tmp_path):
    d, _, _ = systems
    base = [tool("fairseq-syntax-analyze"), "--data", data_bin, "--tokenize", "none"]
    p = run(base + ["--ref", str(d / "ref.txt"), "--system", f"a={d / 'good.txt'}", "--system",
                    f"b={d / 'short.txt'}"], check=False)
    assert p.returncode != 0 and "short.txt" in p.stderr and "translations for the" in p.stderr
    p = run(base + ["--ref", str(d / "short.txt"), "--system", f"a={d / 'short.txt'}", "--system",
                    f"b={d / 'short.txt'}"], check=False)
    assert p.returncode != 0 and "give the reference of the split translated" in p.stderr
    p = run(base + ["--ref", str(d / "ref.txt"), "--system", f"a={d / 'good.txt'}"], check=False)
    assert p.returncode != 0 and "two or more" in p.stderr
