"""fairseq-syntax-plot: each picture is a PNG of the right sentence, with the data's arcs where they belong.

A tiny DBSA model (encoder and decoder parse heads, 2 updates) on the shared
synthetic data-bin; each mode's PNG is checked for being a real image and,
through the JSON record the tool stores in the PNG's metadata, for showing
the tokens, words and arcs of the requested sentence of the split.
"""
import math
import os

import numpy as np
import pytest

from helpers import run, tool, train_cmd

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def dbsa_checkpoint(data_bin, tmp_path_factory):
    save = str(tmp_path_factory.mktemp("plot-ck"))
    run(train_cmd(data_bin, save, updates=2, arch=["--arch", "transformer_dbsa_tiny"],
                  extra=["--criterion", "label_smoothed_cross_entropy_with_dependency"]))
    return os.path.join(save, "checkpoint_last.pt")


def _line(data_bin, name, index):
    with open(os.path.join(data_bin, "work", name), encoding="utf-8") as f:
        return f.read().splitlines()[index]


def _ints(data_bin, name, index):
    return np.array([int(x) for x in _line(data_bin, name, index).split()])


def _gold_word_heads(data_bin, side, index):
    words, heads = _ints(data_bin, f"test.{side}.words", index), _ints(data_bin, f"test.{side}.heads", index)
    first = np.flatnonzero(np.r_[True, words[1:] != words[:-1]])
    return heads[first].tolist()


def _check_png(path):
    assert os.path.getsize(path) > 5_000
    with open(path, "rb") as f:
        assert f.read(8) == PNG_MAGIC
    from PIL import Image

    with Image.open(path) as im:
        assert im.size[0] > 150 and im.size[1] > 150


def _plot(argv):
    from fairseq_syntax.analysis.plots import read_metadata
    from fairseq_syntax.cli.plot import main

    record = main(argv + ["--dpi", "60"])  # small images: fast
    out = argv[argv.index("-o") + 1]
    _check_png(out)
    meta = read_metadata(out)
    assert meta == {k: v for k, v in record.items() if k != "matrices"}
    return meta, record


def test_heads(data_bin, dbsa_checkpoint, tmp_path):
    from fairseq_syntax.data.alignment.parent_strategies import subword_parents

    png = str(tmp_path / "heads3.png")
    meta, record = _plot(["heads", data_bin, "--path", dbsa_checkpoint, "--split", "test", "--index", "3",
                          "-o", png, "--json", str(tmp_path / "heads3.json")])
    assert os.path.getsize(tmp_path / "heads3.json") > 1000
    enc, dec = meta["panels"]
    assert (enc["side"], dec["side"], dec["rows"]) == ("encoder", "decoder", "predicting")
    src_bpe, tgt_bpe = _line(data_bin, "test.bpe.src", 3).split(), _line(data_bin, "test.bpe.tgt", 3).split()
    assert enc["tokens"] == src_bpe + ["</s>"] and dec["tokens"] == tgt_bpe + ["</s>"]
    assert enc["words"] == _line(data_bin, "test.tok.src", 3).split()
    assert dec["words"] == _line(data_bin, "test.tok.tgt", 3).split()
    assert meta["source"] == _line(data_bin, "test.tok.src", 3) and meta["index"] == 3
    assert "sentence 3" in meta["title"] and meta["source"] in meta["title"].replace("\n", " ")
    for side, panel in (("src", enc), ("tgt", dec)):
        assert panel["gold_heads"] == _gold_word_heads(data_bin, side, 3)
        # the data's chain parents, in model coordinates (no padding: one sentence), on every real token's row
        words, heads = _ints(data_bin, f"test.{side}.words", 3), _ints(data_bin, f"test.{side}.heads", 3)
        assert panel["gold_parents"] == subword_parents(words, heads, "chain").tolist() + [None]
        assert len(panel["induced_heads"]) == len(panel["words"]) and 0 <= panel["uas"] <= 1
    enc_p, dec_p = (np.array(m) for m in record["matrices"])
    assert enc_p.shape == (len(src_bpe) + 1,) * 2 and np.allclose(enc_p.sum(1), 1, atol=1e-3)
    assert np.allclose(np.triu(dec_p, 1), 0)  # the decoder head is future-masked
    assert dec["argmax"] == dec_p.argmax(1).tolist()
    # another index draws another sentence
    other, _ = _plot(["heads", data_bin, "--path", dbsa_checkpoint, "--index", "4", "--side", "encoder",
                      "-o", str(tmp_path / "heads4.png")])
    assert [p["side"] for p in other["panels"]] == ["encoder"]
    assert other["panels"][0]["tokens"] == _line(data_bin, "test.bpe.src", 4).split() + ["</s>"] != enc["tokens"]


def test_heads_input_rows(data_bin, dbsa_checkpoint, tmp_path):
    """--decoder-rows input: row j is the state whose input is y_j (row 0 the start symbol); parents shift by 1."""
    from fairseq_syntax.data.alignment.parent_strategies import subword_parents

    meta, _ = _plot(["heads", data_bin, "--path", dbsa_checkpoint, "--index", "3", "--side", "decoder",
                     "--decoder-rows", "input", "--decode", "argmax", "-o", str(tmp_path / "in.png")])
    (dec,) = meta["panels"]
    assert dec["rows"] == "input" and dec["decode"] == "argmax"
    assert dec["tokens"] == ["</s>"] + _line(data_bin, "test.bpe.tgt", 3).split()
    words, heads = _ints(data_bin, "test.tgt.words", 3), _ints(data_bin, "test.tgt.heads", 3)
    assert dec["gold_parents"] == [None] + (subword_parents(words, heads, "chain") + 1).tolist()


def test_heads_errors(data_bin, dbsa_checkpoint, tmp_path):
    from fairseq_syntax.cli.plot import main

    from fairseq_syntax.errors import SyntaxDataError

    with pytest.raises(SyntaxDataError, match="split 'test': has 21 sentences"):
        main(["heads", data_bin, "--path", dbsa_checkpoint, "--index", "21", "-o", str(tmp_path / "x.png")])
    with pytest.raises(SyntaxDataError, match="no PASCAL heads"):
        main(["pascal", data_bin, "--path", dbsa_checkpoint, "-o", str(tmp_path / "x.png")])
    assert not os.path.exists(tmp_path / "x.png")


def test_pascal(data_bin, tmp_path):
    from fairseq_syntax.data.alignment.parent_strategies import subword_parents

    meta, record = _plot(["pascal", data_bin, "--index", "2", "--variance", "2", "-o", str(tmp_path / "dp.png")])
    bpe = _line(data_bin, "test.bpe.src", 2).split()
    assert meta["tokens"] == bpe + ["</s>"] and meta["source"] == _line(data_bin, "test.tok.src", 2)
    assert meta["words"] == _line(data_bin, "test.tok.src", 2).split()
    words, heads = _ints(data_bin, "test.src.words", 2), _ints(data_bin, "test.src.heads", 2)
    assert meta["parents"] == subword_parents(words, heads, "middle").tolist() + [len(bpe)]  # EOS: itself
    assert meta["gold_heads"] == _gold_word_heads(data_bin, "src", 2) and meta["variance"] == 2
    dp = np.array(record["matrices"][0])
    t, j = 1, 0
    p = meta["parents"][t]
    assert dp[t, j] == pytest.approx(math.exp(-(j - p) ** 2 / 4) / math.sqrt(4 * math.pi), abs=1e-6)  # Eq. 6
    only, _ = _plot(["pascal", data_bin, "--index", "5", "--weights", "parent-only", "-o", str(tmp_path / "po.png")])
    assert only["tokens"] == _line(data_bin, "test.bpe.src", 5).split() + ["</s>"] != meta["tokens"]


def test_conllu_of_induced_parses(data_bin, dbsa_checkpoint, tmp_path):
    from fairseq_syntax.cli.induce_parses import main as induce
    from fairseq_syntax.data.trees.conllu import read_conllu

    induce([data_bin, "--path", dbsa_checkpoint, "--split", "test", "--output-prefix", str(tmp_path / "pred")])
    pred = str(tmp_path / "pred.src.conllu")
    gold = os.path.join(os.path.dirname(data_bin), "raw", "test.src.conllu")
    meta, _ = _plot(["conllu", pred, "--gold", gold, "--index", "6", "-o", str(tmp_path / "arcs.png")])
    sent = list(read_conllu(pred))[6]
    assert meta["words"] == _line(data_bin, "test.tok.src", 6).split() == sent.words
    assert meta["heads"] == sent.heads and meta["gold_heads"] == list(read_conllu(gold))[6].heads
    assert meta["uas"] == sum(a == b for a, b in zip(meta["heads"], meta["gold_heads"])) / len(sent.words)
    assert "sentence 6" in meta["title"] and meta["text"] in meta["title"].replace("\n", " ")
    from fairseq_syntax.cli.plot import cli_main, main
    from fairseq_syntax.errors import SyntaxDataError

    with pytest.raises(SyntaxDataError, match="--index 21: the file has 21 sentences"):
        main(["conllu", gold, "-i", "21", "-o", str(tmp_path / "x.png")])
    with pytest.raises(SystemExit) as e:  # the command: one line, exit status 1
        cli_main(["conllu", gold, "-i", "21", "-o", str(tmp_path / "x.png")])
    assert e.value.code == 1


def test_console_script(data_bin, tmp_path):
    """The installed command: a gold CoNLL-U file alone (sentence 7, labels on the arcs)."""
    gold = os.path.join(os.path.dirname(data_bin), "raw", "test.src.conllu")
    out = str(tmp_path / "gold7.png")
    p = run([tool("fairseq-syntax-plot"), "conllu", gold, "-i", "7", "-o", out, "--dpi", "60"])
    assert "wrote" in p.stdout
    _check_png(out)
    from fairseq_syntax.analysis.plots import read_metadata

    meta = read_metadata(out)
    assert meta["words"] == _line(data_bin, "test.tok.src", 7).split() and meta["gold_heads"] is None


@pytest.mark.parametrize("mode,options", [
    (None, ["heads", "pascal", "conllu"]),
    ("heads", ["--path", "--side", "--decode", "--decoder-rows", "--index", "--split", "--json", "--dpi", "--cpu"]),
    ("pascal", ["--variance", "--weights", "--path", "--source-lang"]),
    ("conllu", ["--gold", "--no-labels", "--index"]),
])
def test_help_explains_every_option(mode, options, capsys):
    from fairseq_syntax.cli.plot import get_parser

    with pytest.raises(SystemExit) as e:
        get_parser().parse_args(([mode] if mode else []) + ["--help"])
    assert e.value.code == 0
    text = capsys.readouterr().out
    assert all(o in text for o in options), text
    parser = get_parser()
    subparsers = [a for a in parser._actions if a.dest == "mode"][0].choices
    for action in (subparsers[mode] if mode else parser)._actions:
        assert action.help, f"{mode}: {action.option_strings or action.dest} has no help"
