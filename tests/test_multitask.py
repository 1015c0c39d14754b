"""C&H multi-task baseline: linearised trees and the translate + parse corpus through the CLIs."""
import os
import re

import pytest

from fairseq_syntax.data.trees.linearize import linearize_tree
from fairseq_syntax.errors import SyntaxDataError
from helpers import TINY_TRANSFORMER, generate_cmd, preprocess, run, train_cmd


def test_linearised_tree_of_the_pascal_example():
    # Bugliarello & Okazaki (2020) Fig. 1: "The monkey eats a banana"
    got = linearize_tree("The monkey eats a banana".split(), [2, 3, 0, 5, 3], ["det", "nsubj", "root", "det", "obj"])
    assert got == "(root (nsubj (det The ) monkey ) eats (obj (det a ) banana ) )"


def test_linearisation_keeps_every_word_once_and_is_balanced():
    words = "A hearing is scheduled on the issue today".split()
    heads = [2, 4, 4, 0, 7, 7, 2, 4]  # non-projective: "on the issue" attaches to "hearing"
    lin = linearize_tree(words, heads, ["det", "nsubj", "aux", "root", "case", "det", "nmod", "obl"]).split()
    assert sorted(t for t in lin if not t.startswith("(") and t != ")") == sorted(words)
    assert sum(t.startswith("(") for t in lin) == sum(t == ")" for t in lin) == len(words)
    deep = linearize_tree(["w"] * 3000, [0] + list(range(1, 3000)), ["dep"] * 3000)  # no recursion limit
    assert deep.count("(dep") == 3000
    with pytest.raises(SyntaxDataError, match="x.conllu"):
        linearize_tree(["a", "b"], [2, 1], ["dep", "dep"], "x.conllu")


def test_multitask_corpus_trains_and_decodes(data_bin, tmp_path):
    raw = os.path.join(os.path.dirname(data_bin), "raw")
    out = str(tmp_path / "ch")
    run(preprocess("multitask") + ["-s", "src", "-t", "tgt", "--trainpref", os.path.join(raw, "train"),
                                   "--validpref", os.path.join(raw, "valid"), "--testpref", os.path.join(raw, "test"),
                                   "-o", out])
    src = open(os.path.join(out, "train.src")).read().splitlines()
    tgt = open(os.path.join(out, "train.tgt")).read().splitlines()
    n = len(open(os.path.join(raw, "train.src")).read().splitlines())
    assert len(src) == len(tgt) == 2 * n
    parse = [(s, t) for s, t in zip(src, tgt) if s.startswith("<parse> ")]
    assert len(parse) == n and all(s.endswith(" <parse>") for s, _ in parse)
    assert all(t.startswith("(root ") for _, t in parse)
    assert src[:10] != [x for x in src if x.startswith("<translate>")][:10]  # shuffled together
    test_src = open(os.path.join(out, "test.src")).read().splitlines()
    assert all(s.startswith("<translate> ") and s.endswith(" <translate>") for s in test_src)
    bin_dir = str(tmp_path / "ch-bin")
    run(preprocess("prepare") + ["-s", "src", "-t", "tgt", "--trainpref", os.path.join(out, "train"),
                                 "--validpref", os.path.join(out, "valid"), "--testpref", os.path.join(out, "test"),
                                 "--destdir", bin_dir, "--syntax", "none", "--bpe-merges", "300", "--no-progress"])
    save = str(tmp_path / "ck")
    run(train_cmd(bin_dir, save, updates=3, arch=TINY_TRANSFORMER))
    g = run(generate_cmd(bin_dir, os.path.join(save, "checkpoint_last.pt")))
    assert len(re.findall(r"^H-\d+", g.stdout, flags=re.M)) == len(test_src)
    assert "<translate>" in g.stdout  # the tagged sources were decoded
