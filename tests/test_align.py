"""Alignment of trees to BPE lines, text/binary syntax files, and their errors."""

import numpy as np
import pytest

from fairseq_syntax.data.trees.conllu import sentence_from_heads, write_conllu
from fairseq_syntax.data.alignment.subword_align import align_corpus, align_sentence, split_subwords
from fairseq_syntax.data.alignment.syntax_io import AlignedCorpus, build_label_dictionary, check_sizes, load_field
from fairseq_syntax.errors import SyntaxDataError


def test_split_subwords():
    subs, units, unit_of = split_subwords("Fing@@ er@@ print in@@ put")
    assert units == ["Fingerprint", "input"] and unit_of == [0, 0, 0, 1, 1]


def test_rejoin_mismatch_names_line_and_position():
    s = sentence_from_heads(["the", "dog", "barks"], [2, 3, 0])
    with pytest.raises(SyntaxDataError, match=r"train.bpe:7: subwords do not re-join .* position 2: 'cat' vs 'dog'"):
        align_sentence(s, "the c@@ at barks", "train.bpe:7")


def test_dangling_marker_is_an_error():
    s = sentence_from_heads(["the", "dog"], [2, 0])
    with pytest.raises(SyntaxDataError, match="do not re-join"):
        align_sentence(s, "the dog@@", "x:1")


def test_empty_bpe_line_is_an_error():
    s = sentence_from_heads(["dog"], [0])
    with pytest.raises(SyntaxDataError, match="empty line"):
        align_sentence(s, "   ", "x:3")


def _write(tmp_path, sents, bpe_lines):
    c = tmp_path / "a.conllu"
    with open(c, "w") as f:
        write_conllu(sents, f)
    b = tmp_path / "a.bpe"
    b.write_text("".join(x + "\n" for x in bpe_lines))
    return str(c), str(b)


def test_line_count_mismatch_both_ways(tmp_path):
    sents = [sentence_from_heads(["a", "b"], [2, 0]), sentence_from_heads(["c"], [0])]
    c, b = _write(tmp_path, sents, ["a b"])
    with pytest.raises(SyntaxDataError, match="line count mismatch: .*a.bpe has 1 lines but this file has more"):
        align_corpus(c, b, progress=False)
    c, b = _write(tmp_path, sents, ["a b", "c", "d"])
    with pytest.raises(SyntaxDataError, match="line count mismatch: .*a.conllu has 2 sentences.*line 3 has no parse"):
        align_corpus(c, b, progress=False)


def test_text_roundtrip_and_binary(tmp_path):
    sents = [sentence_from_heads(["the", "dog", "barks"], [2, 3, 0], ["det", "nsubj", "root"]),
             sentence_from_heads(["hi"], [0], ["root"])]
    c, b = _write(tmp_path, sents, ["the do@@ g bar@@ ks", "hi"])
    corpus = align_corpus(c, b, progress=False)
    assert corpus.sizes == [5, 1]
    prefix = str(tmp_path / "out")
    corpus.write_text(prefix)
    assert open(prefix + ".words").read() == "1 2 2 3 3\n1\n"
    assert open(prefix + ".heads").read() == "2 3 3 0 0\n0\n"
    assert open(prefix + ".labels").read() == "det nsubj nsubj root root\nroot\n"
    again = AlignedCorpus.read_text(prefix)
    assert list(again.words) == list(corpus.words) and again.labels == corpus.labels
    d = build_label_dictionary(again.labels)
    again.write_binary(prefix, d)
    words = load_field(prefix, "words")
    assert words[0].tolist() == [1, 2, 2, 3, 3] and words.sizes.tolist() == [5, 1]
    labels = load_field(prefix, "labels")
    assert [d[i] for i in labels[0].tolist()] == ["det", "nsubj", "nsubj", "root", "root"]


def test_text_files_non_integer_and_field_counts(tmp_path):
    p = str(tmp_path / "x")
    open(p + ".words", "w").write("1 2\n1 x\n")
    open(p + ".heads", "w").write("2 0\n0 1\n")
    open(p + ".labels", "w").write("a b\nc d\n")
    with pytest.raises(SyntaxDataError, match=r"x.words/.heads:2: non-integer field 'x'"):
        AlignedCorpus.read_text(p)
    open(p + ".words", "w").write("1 2\n1\n")
    with pytest.raises(SyntaxDataError, match=r":2: field counts differ: 1 words, 2 heads"):
        AlignedCorpus.read_text(p)


def test_check_sizes_message():
    with pytest.raises(SyntaxDataError, match=r"split 'valid', source side, sentence 2: expected 4 syntax entries .* found 3"):
        check_sizes(np.array([3, 2, 5]), np.array([2, 1, 3]), "split 'valid', source side")
    with pytest.raises(SyntaxDataError, match="2 sentences in the syntax data but 3 in the token data"):
        check_sizes(np.array([3, 2, 5]), np.array([2, 1]), "w")


def test_irregular_spacing_in_bpe_line():
    s = sentence_from_heads(["foo", "bar"], [2, 0])
    w, h, _ = align_sentence(s, "fo@@  o\tbar ", "x:1")
    assert w == [1, 1, 2] and h == [2, 2, 0]
    w, h, _ = align_sentence(sentence_from_heads(["@@", "x"], [2, 0]), "@@ x", "x:2")
    assert w == [1, 2]
