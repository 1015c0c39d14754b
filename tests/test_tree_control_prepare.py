"""``prepare --tree-control`` on real trees (UD English and German PUD's gold parses, skipped without the shared data):
each kind's trees reach the data-bin as the control makes them (fairseq-syntax-inspect), the record names the
control, its seed and the UAS against the trees it replaced, as the kind implies; a checkpoint trained on other
trees than the data-bin's is refused."""
import json

import pytest
from conftest import require_shared
from helpers import run, tool

from fairseq_syntax.data.trees.conllu import read_conllu, write_conllu
from fairseq_syntax.data.trees.tree_controls import TreeControl
from fairseq_syntax.errors import SyntaxDataError
from fairseq_syntax.preparation.databin_record import PreparationRecord
from fairseq_syntax.preparation.trained_on import check_tree_control, tree_control_name


@pytest.fixture(scope="module")
def pud(tmp_path_factory):
    en = require_shared("data", "UD_English-PUD", "en_pud-ud-test.conllu")
    de = require_shared("data", "UD_German-PUD", "de_pud-ud-test.conllu")
    c = tmp_path_factory.mktemp("pud")
    sents = {"en": list(read_conllu(en))[:360], "de": list(read_conllu(de))[:360]}
    for split, part in (("train", slice(0, 300)), ("valid", slice(300, 360))):
        for lang in ("en", "de"):
            with open(c / f"{split}.{lang}.conllu", "w", encoding="utf-8") as f:
                write_conllu(sents[lang][part], f)
    return c, sents


#: (kind, the UAS against the gold trees it must fall in)
KINDS = [("noise:0.3", (64, 76)),
         pytest.param("random", (0, 20), marks=pytest.mark.slow),
         pytest.param("left-chain", (0, 45), marks=pytest.mark.slow),
         pytest.param("right-chain", (0, 45), marks=pytest.mark.slow)]


@pytest.mark.parametrize("kind, uas", KINDS)
def test_the_controlled_trees_reach_the_data_bin_and_the_record(pud, tmp_path, kind, uas):
    c, sents = pud
    run([tool("fairseq-syntax-prepare"), "-s", "en", "-t", "de", "--trainpref", str(c / "train"), "--validpref",
         str(c / "valid"), "--destdir", str(tmp_path / "bin"), "--bpe-merges", "0", "--tree-control", kind,
         "--tree-control-seed", "3", "--no-progress"])
    record = PreparationRecord.load(str(tmp_path / "bin"))
    assert (record.tree_control["kind"], record.tree_control["seed"]) == (kind, 3)
    for split in ("train", "valid"):
        for lang in ("en", "de"):
            assert uas[0] <= record.tree_control["uas"][split][lang] <= uas[1], record.tree_control
    control = TreeControl.parse(kind, 3)
    shown = 0
    for k, sent in enumerate(sents["en"][:300]):
        if sent.has_multiword_tokens() or shown == 8:
            continue  # a unit a word: its head is the controlled head
        heads, labels = control.apply(sent.heads, sent.labels, f"train:en:{k}")
        view = json.loads(run([tool("fairseq-syntax-inspect"), str(tmp_path / "bin"), "--split", "train",
                               "--index", str(k), "--json"]).stdout)
        rows = view["source"]
        assert [r["word"] for r in rows] == list(range(len(sent.words)))
        assert [r["head"] for r in rows] == [h - 1 for h in heads], (k, kind)
        assert [r["label"] for r in rows] == labels
        shown += 1
    assert shown == 8


def test_a_control_is_refused_where_no_data_bin_is_made(pud, tmp_path):
    c, _ = pud
    p = run([tool("fairseq-syntax-prepare"), "-s", "en", "-t", "de", "--trainpref", str(c / "train"),
             "--workdir", str(tmp_path / "t"), "--text-only", "--tree-control", "random"], check=False)
    assert p.returncode != 0 and "--tree-control is applied when the data-bin is made" in p.stderr
    p = run([tool("fairseq-syntax-prepare"), "-s", "en", "-t", "de", "--trainpref", str(c / "train"),
             "--destdir", str(tmp_path / "b"), "--tree-control", "noise:2"], check=False)
    assert p.returncode != 0 and "noise:P takes a probability" in p.stderr


def test_a_checkpoint_of_other_trees_than_the_data_bins_is_refused(tmp_path):
    record = PreparationRecord(tree_control={"kind": "random", "seed": 1, "uas": {}})
    assert tree_control_name(record) == "random, seed 1"
    assert tree_control_name(PreparationRecord()) == tree_control_name(None) == "none"
    check_tree_control("random, seed 1", "random, seed 1", str(tmp_path))
    check_tree_control(None, "random, seed 1", str(tmp_path))  # a checkpoint saved before the key
    with pytest.raises(SyntaxDataError, match="trained on --tree-control random, seed 1"):
        check_tree_control("random, seed 1", "none", str(tmp_path))
    with pytest.raises(SyntaxDataError, match="its trees are --tree-control noise:0.3, seed 2"):
        check_tree_control("none", "noise:0.3, seed 2", str(tmp_path))
