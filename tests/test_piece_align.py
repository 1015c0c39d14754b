"""SentencePiece pieces aligned to a tree by character offsets (fairseq_syntax/data/alignment/piece_align.py): the
rule's worked examples, the words located in raw text that a tokeniser re-wrote, the block path against the
sentence path and against a character-by-character reference (tests/piece_reference.py), the offsets of a real
SentencePiece model on text it normalises, and the head-word invariant of every parent strategy on SentencePiece
units."""
import random
import unicodedata

import numpy as np
import pytest

from fairseq_syntax.data.alignment.parent_strategies import STRATEGIES, subword_parents, subword_depths
from fairseq_syntax.data.alignment.piece_align import (
    MARK,
    TreeArrays,
    _sentence_trees,
    align_block_pieces,
    align_sentence_pieces,
)
from fairseq_syntax.data.alignment.word_offsets import WordNotFound, locate_tokens
from fairseq_syntax.data.trees.conllu import Sentence
from fairseq_syntax.errors import SyntaxDataError
from piece_reference import plain_spans, reference_alignment

DONT = dict(words=["Two", "dogs", "do", "n't", "play", "."], heads=[2, 5, 5, 5, 0, 5],
            labels=["nummod", "nsubj", "aux", "advmod", "root", "punct"])


def _align(sent, raw, pieces, spm=None):
    return align_sentence_pieces(sent, raw, pieces.split(), spm)


def test_a_piece_that_cuts_across_two_words_makes_them_one_unit():
    """"don't" as UDPipe's tokens do + n't, SentencePiece's ▁don + 't: ▁don reaches into n't, so do and n't are one
    unit; its head is that of its member nearest the root (do and n't both hang from play: do, the first), its
    label do's, and it is named by its first word (2)."""
    sent = Sentence(**DONT)
    word, head, label, first = _align(sent, "Two dogs don't play.", "▁Two ▁dogs ▁don 't ▁play .")
    assert word == [1, 2, 3, 3, 4, 5]
    assert head == [2, 4, 4, 4, 0, 4]
    assert label == ["nummod", "nsubj", "aux", "aux", "root", "punct"]
    assert first == [0, 1, 2, 2, 4, 5]


def test_a_multiword_token_is_one_unit_as_with_bpe():
    """UDPipe's multiword token don't (= do + n't) is one surface token: one unit, whatever the pieces."""
    sent = Sentence(**DONT, tokens=["Two", "dogs", "don't", "play", "."], token_of_word=[0, 1, 2, 2, 3, 4])
    assert _align(sent, "Two dogs don't play.", "▁Two ▁dog s ▁d on ' t ▁play .")[:2] == (
        [1, 2, 2, 3, 3, 3, 3, 4, 5], [2, 4, 4, 4, 4, 4, 4, 0, 4])


def test_pieces_inside_words_and_a_bare_mark_change_nothing():
    """Pieces that split words (T + wo) keep the words apart; a piece that is only ▁ goes with the next one."""
    word, head, _, first = _align(Sentence(**DONT), "Two dogs don't play.", "▁T wo ▁dog s ▁do n't ▁ play .")
    assert word == [1, 1, 2, 2, 3, 4, 5, 5, 6]
    assert head == [2, 2, 5, 5, 5, 5, 0, 0, 5] and first == [0, 0, 1, 1, 2, 3, 4, 4, 5]


def test_japanese_without_spaces():
    """私 は 学生 です (GiNZA's words) in pieces ▁私は / 学 / 生です: 私 and は share a piece, and 学生 and です
    do; the first unit hangs from the second, which is the root."""
    sent = Sentence(["私", "は", "学生", "です"], [3, 1, 0, 3], ["nsubj", "case", "root", "cop"])
    assert _align(sent, "私は学生です", "▁私は 学 生です") == ([1, 2, 2], [2, 0, 0], ["nsubj", "root", "root"],
                                                      [0, 2, 2])


def test_the_unit_head_is_its_member_nearest_the_root():
    """Words 2 and 3 share a piece; word 3 heads word 2 and hangs from the root's word 1: the unit's head is word
    3's (word 1) and its label word 3's."""
    sent = Sentence(["a", "b", "c", "d"], [0, 3, 1, 3], ["root", "x", "y", "z"])
    word, head, label, _ = _align(sent, "a bc d", "▁a ▁bc ▁d")
    assert word == [1, 2, 3] and head == [0, 1, 2] and label == ["root", "y", "z"]


@pytest.mark.parametrize("form, raw", [("&apos;s", "'s"), ("parce_que", "parce que"), ("A", "\uff21"),
                                       ("ガ", "\uff76\uff9e"), ("&amp;", "&")])
def test_words_a_tokeniser_rewrote_are_found_in_the_raw_text(form, raw):
    """Moses' escapes, a FORM with a space written with '_', and compatibility forms (NFKC: a full-width letter,
    a half-width kana with its sound mark) are located in the raw text they stand for."""
    starts, ends = locate_tokens(f"x {raw} y", ["x", form, "y"])
    assert (starts[1], ends[1]) == (2, 2 + len(raw)) and starts[2] == ends[1] + 1


def test_a_word_not_in_the_raw_text_is_named():
    with pytest.raises(WordNotFound) as e:
        locate_tokens("two dogs", ["two", "cats"])
    assert e.value.index == 1 and e.value.at == 4 and "'cats'" in str(e.value)
    with pytest.raises(SyntaxDataError) as e:
        align_sentence_pieces(Sentence(["two", "cats"], [2, 0], ["nummod", "root"]), "two dogs", ["▁two", "▁dogs"],
                              where="in.conllu:3")
    assert str(e.value).startswith("in.conllu:3: the parser's word 'cats' (token 2)")


def test_pieces_that_do_not_spell_the_raw_text_need_the_model():
    with pytest.raises(SyntaxDataError, match="needs the SentencePiece model's offsets"):
        align_sentence_pieces(Sentence(["ＡＢ"], [0], ["root"]), "ＡＢ", ["▁AB"])


def _random_sentence(rng, n, letters="abcdefgh"):
    """A random tree over n words with random forms, some of them glued to the next (no space between), some
    multiword tokens; its raw text and a random cut of that text into pieces (▁ where whitespace was, some bare)."""
    heads = [0] * n
    order = list(range(n))
    rng.shuffle(order)
    for k, w in enumerate(order[1:], 1):
        heads[w] = order[rng.randrange(k)] + 1
    words = ["".join(rng.choice(letters) for _ in range(rng.randint(1, 4))) for _ in range(n)]
    tokens, token_of_word, w = [], [], 0
    while w < n:
        if w + 1 < n and rng.random() < 0.1:  # a multiword token covering two words
            tokens.append(words[w] + words[w + 1])
            token_of_word += [len(tokens) - 1] * 2
            w += 2
        else:
            tokens.append(words[w])
            token_of_word.append(len(tokens) - 1)
            w += 1
    raw = ""
    for k, t in enumerate(tokens):
        raw += t + ("" if k + 1 == len(tokens) or rng.random() < 0.3 else rng.choice([" ", "  ", "\u3000"]))
    pieces, piece = [], ""
    for k, ch in enumerate(raw):
        if ch.isspace():
            if piece:
                pieces.append(piece)
            piece = MARK if not raw[k - 1].isspace() else piece
            if rng.random() < 0.2 and piece == MARK:
                pieces.append(MARK)
                piece = ""
            continue
        if piece and piece != MARK and rng.random() < 0.4:
            pieces.append(piece)
            piece = ""
        piece += ch
    pieces.append(piece)
    pieces[0] = MARK + pieces[0] if not pieces[0].startswith(MARK) else pieces[0]
    labels = [rng.choice(["nsubj", "obj", "amod", "det"]) if h else "root" for h in heads]
    return Sentence(words, heads, labels, tokens, token_of_word), raw, pieces


def test_the_rule_against_a_character_by_character_reference():
    """On 600 random sentences: the sentence path and the block path (all at once, sentences of several shapes,
    spans from lengths) give what the reference gives."""
    rng = random.Random(11)
    cases = [_random_sentence(rng, rng.randint(1, 14)) for _ in range(600)]
    merged = 0
    for sent, raw, pieces in cases:
        expected = reference_alignment(sent, raw, plain_spans(raw, pieces))
        got = align_sentence_pieces(sent, raw, pieces)
        assert list(zip(*got)) == expected, (sent.tokens, raw, pieces)
        merged += len(sent.tokens) - max(got[0])
    assert merged > 300  # the cases do merge units
    block = align_block_pieces(_sentence_trees([s for s, _, _ in cases]), [r for _, r, _ in cases],
                               [" ".join(p) for _, _, p in cases])
    a = 0
    for (sent, raw, pieces), n in zip(cases, block.sizes.tolist()):
        names = block.label_names
        rows = list(zip(block.word[a:a + n].tolist(), block.head[a:a + n].tolist(),
                        [names[i] for i in block.label[a:a + n].tolist()], block.first_word[a:a + n].tolist()))
        assert rows == reference_alignment(sent, raw, plain_spans(raw, pieces))
        a += n


@pytest.mark.parametrize("letters", ["abcdefgh", "日本語のはを", "日本語の\U00020bb7\U0001f600"])
def test_the_block_path_whatever_width_its_characters_take(letters):
    """The block path compares the texts as arrays of one, two or four bytes a character (ASCII; the Basic
    Multilingual Plane; beyond it, where UTF-16 would need two units for one character): each gives the
    reference's alignment."""
    rng = random.Random(3)
    cases = [_random_sentence(rng, rng.randint(1, 9), letters) for _ in range(200)]
    block = align_block_pieces(_sentence_trees([s for s, _, _ in cases]), [r for _, r, _ in cases],
                               [" ".join(p) for _, _, p in cases])
    a = 0
    for (sent, raw, pieces), n in zip(cases, block.sizes.tolist()):
        assert list(zip(block.word[a:a + n].tolist(), block.head[a:a + n].tolist())) == \
            [row[:2] for row in reference_alignment(sent, raw, plain_spans(raw, pieces))]
        a += n


def test_a_block_mixes_sentences_spelled_out_and_sentences_located():
    """Sentences whose words are Moses-escaped (located one by one) among plain ones, in one block: each as the
    sentence path aligns it."""
    rng = random.Random(5)
    cases = []
    for k in range(200):
        sent, raw, pieces = _random_sentence(rng, rng.randint(2, 9))
        if k % 3 == 0:  # an apostrophe in the raw text, its word escaped as sacremoses writes it
            raw = raw.replace(sent.tokens[0], sent.tokens[0] + "'", 1)
            pieces = [p.replace(sent.tokens[0], sent.tokens[0] + "'", 1) if i == 0 else p
                      for i, p in enumerate(pieces)] if pieces[0].replace(MARK, "").startswith(sent.tokens[0]) \
                else None
            if pieces is None:
                continue
            sent.tokens[0] = sent.tokens[0] + "&apos;"
        cases.append((sent, raw, pieces))
    block = align_block_pieces(_sentence_trees([s for s, _, _ in cases]), [r for _, r, _ in cases],
                               [" ".join(p) for _, _, p in cases])
    a = 0
    for (sent, raw, pieces), n in zip(cases, block.sizes.tolist()):
        assert block.word[a:a + n].tolist() == align_sentence_pieces(sent, raw, pieces)[0]
        a += n


def test_a_real_model_on_text_it_normalises(tmp_path):
    """A SentencePiece model (NFKC: full-width letters and half-width kana become other characters in its pieces)
    places its pieces by its own offsets; the tree's words, written as the raw text is, are found there."""
    import sentencepiece as spm

    lines = ["ｶﾞｷﾞ 全角ＡＢＣ テスト", "Two dogs don't play.", "ガギ ABC テスト"] * 30
    spm.SentencePieceTrainer.train(sentence_iterator=iter(lines), model_prefix=str(tmp_path / "m"), vocab_size=40,
                                   hard_vocab_limit=False, num_threads=1, minloglevel=2)
    sp = spm.SentencePieceProcessor(model_file=str(tmp_path / "m.model"))
    raw = "ｶﾞｷﾞ 全角ＡＢＣ テスト"
    pieces = sp.encode(raw, out_type=str)
    assert MARK + "ガ" in pieces or "ガ" in pieces  # normalised
    sent = Sentence(["ｶﾞｷﾞ", "全角", "ＡＢＣ", "テスト"], [0, 3, 1, 1], ["root", "compound", "nmod", "obj"])
    word, head, label, first = align_sentence_pieces(sent, raw, pieces, sp)
    proto = sp.encode(raw, out_type="proto")
    spans = []
    char_of = {len(raw[:i].encode("utf-8")): i for i in range(len(raw) + 1)}
    for p in proto.pieces:
        spans.append((char_of[p.begin], char_of[p.end]))
    assert list(zip(word, head, label, first)) == reference_alignment(sent, raw, spans)
    with pytest.raises(SyntaxDataError, match="not the SentencePiece model's encoding"):
        align_sentence_pieces(sent, raw, ["▁x"] + pieces[1:], sp)


def test_lines_differ_as_the_lines_compared_one_by_one():
    """The block's line comparison (code points, no loop over lines) against the lines compared as strings, on
    texts whose lines are of the same lengths and of other lengths."""
    from fairseq_syntax.data.alignment.piece_align import _codes, _lines_differ

    rng = random.Random(7)
    for trial in range(200):
        a = ["".join(rng.choice("ab１") for _ in range(rng.randint(0, 4))) for _ in range(rng.randint(1, 8))]
        b = [x if rng.random() < 0.5 else "".join(rng.choice("ab１") for _ in range(len(x) if trial % 2 else
                                                                                 rng.randint(0, 4))) for x in a]
        got = _lines_differ(_codes("".join(x + "\n" for x in a)), _codes("".join(x + "\n" for x in b)))
        assert got.tolist() == [x != y for x, y in zip(a, b)], (a, b)


def test_piece_lengths_leave_out_every_mark_wherever_it_stands():
    """A piece's length in the raw text leaves out its ``▁``: the first character (SentencePiece's place for it,
    counted at once) or any other (a user-defined piece such as ``New▁York``, counted one by one)."""
    from fairseq_syntax.data.alignment.piece_align import _lengths

    rng = random.Random(3)
    for trial in range(300):
        marks_inside = trial % 3 == 0
        lines = [[("▁" if rng.random() < 0.5 else "") + "".join(rng.choice("ab語▁" if marks_inside else "ab語")
                                                                 for _ in range(rng.randint(0 if k else 1, 3)))
                  for k in range(rng.randint(1, 5))] for _ in range(rng.randint(1, 6))]
        lines = [[x for x in line if x] or ["a"] for line in lines]
        lengths, per_line, _ = _lengths("".join(" ".join(line) + "\n" for line in lines))
        assert lengths.tolist() == [len(x.replace("▁", "")) for line in lines for x in line], lines
        assert per_line.tolist() == [len(line) for line in lines]


def test_lines_replaced_one_for_one_by_the_models_normalisation():
    """The block's shortcut for sentences NFKC rewrote character for character (full-width digits): their pieces
    keep the offsets of their lengths; any other difference, or a line not asked about, is not one."""
    from fairseq_syntax.data.alignment.piece_align import _codes, _replaced_one_for_one

    class Nfkc:  # as a SentencePiece model normalises: NFKC, a text (or each of a list) with its dummy prefix
        def Normalize(self, text):
            if isinstance(text, list):
                return [self.Normalize(x) for x in text]
            return "▁" + unicodedata.normalize("NFKC", text)

    a = ["猫１２匹", "犬ＡＢ", "ｶﾞｷﾞ", "猫１匹", "abc", "猫１２匹"]
    b = ["猫12匹", "犬AX", "ガギ", "猫1匹", "abc", "猫12匹"]
    got = _replaced_one_for_one(_codes("".join(x + "\n" for x in a)), _codes("".join(x + "\n" for x in b)),
                                np.array([0, 1, 2, 3, 4]), Nfkc())
    assert got.tolist() == [True, False, False, True, True, False]


def test_a_real_models_dummy_prefix_does_not_hide_a_one_for_one_replacement(tmp_path):
    """A SentencePiece model's Normalize puts ``▁`` before a text ("１" -> "▁1"): a full-width digit is still
    one character replaced by one, so its sentence keeps the offsets of its lengths (not located one by one)."""
    import sentencepiece as spm

    from fairseq_syntax.data.alignment.piece_align import _codes, _replaced_one_for_one

    raws = ["猫が１２匹いる。", "犬がＡＢと言う。", "私は学生です。"] * 20
    spm.SentencePieceTrainer.train(sentence_iterator=iter(raws), model_prefix=str(tmp_path / "m"), vocab_size=40,
                                   hard_vocab_limit=False, num_threads=1, minloglevel=2)
    sp = spm.SentencePieceProcessor(model_file=str(tmp_path / "m.model"))
    assert sp.Normalize("１") == "▁1"
    pieces = ["".join(sp.encode(r, out_type=str)).replace("▁", "") for r in raws[:3]]
    assert pieces[:2] == ["猫が12匹いる。", "犬がABと言う。"]
    text = [_codes("".join(x + "\n" for x in lines)) for lines in (raws[:3], pieces)]
    assert _replaced_one_for_one(*text, np.array([0, 1, 2]), sp).tolist() == [True, True, True]


def test_a_block_of_sentences_the_model_normalised_is_placed_at_once_as_by_the_models_offsets(tmp_path):
    """Japanese-like sentences without spaces, some with full-width digits and letters the model's NFKC rule
    rewrites, in one block: the block places the normalised sentences' pieces all at once
    (normalized_spans_of_sentences), each as the model's own offsets place them (its proto encoding), a bare
    mark at a sentence's start and a piece of a rewritten character among them."""
    import sentencepiece as spm

    rng = random.Random(3)
    words = ["ガギ", "全角", "ＡＢＣ", "テスト", "１２３", "です", "。", "ｶﾞｷﾞ", "猫", "犬"]
    sents, raws = [], []
    for _ in range(120):
        toks = [rng.choice(words) for _ in range(rng.randint(2, 7))]
        heads = [0] + [rng.randint(1, i) for i in range(1, len(toks))]  # a tree: each head an earlier word
        sents.append(Sentence(toks, heads, ["dep"] * len(toks)))
        raws.append("".join(toks))
    spm.SentencePieceTrainer.train(sentence_iterator=iter(raws), model_prefix=str(tmp_path / "m"), vocab_size=30,
                                   hard_vocab_limit=False, num_threads=1, minloglevel=2)
    sp = spm.SentencePieceProcessor(model_file=str(tmp_path / "m.model"))
    pieces = [sp.encode(r, out_type=str) for r in raws]
    assert sum(unicodedata.normalize("NFKC", r) != r for r in raws) > 30
    block = align_block_pieces(_sentence_trees(sents), raws, [" ".join(p) for p in pieces], sp)
    a = 0
    for sent, raw, n in zip(sents, raws, block.sizes.tolist()):
        char_of = {len(raw[:i].encode("utf-8")): i for i in range(len(raw) + 1)}
        spans = [(char_of[p.begin], char_of[p.end]) for p in sp.encode(raw, out_type="proto").pieces]
        rows = list(zip(block.word[a:a + n].tolist(), block.head[a:a + n].tolist(),
                        [block.label_names[i] for i in block.label[a:a + n].tolist()],
                        block.first_word[a:a + n].tolist()))
        assert rows == reference_alignment(sent, raw, spans), raw
        a += n


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_every_strategy_keeps_the_head_word_invariant_on_sentencepiece_units(strategy):
    """docs/design.md's invariant on SentencePiece units: floor(parent) of a piece lies in its own unit or its
    head unit (the root's: its own), and the final piece's parent names the head unit; depths are the units'."""
    rng = random.Random(3)
    for _ in range(300):
        sent, raw, pieces = _random_sentence(rng, rng.randint(1, 12))
        word, head, _, _ = (np.asarray(x) for x in align_sentence_pieces(sent, raw, pieces))
        hw = np.where(head > 0, head, word)
        at = np.floor(subword_parents(word, head, strategy)).astype(np.int64)
        assert ((word[at] == word) | (word[at] == hw)).all()
        last = np.r_[word[1:] != word[:-1], True]
        assert (word[at[last]] == hw[last]).all()
        depth = subword_depths(word, head)
        assert (depth[head == 0] == 0).all() and (depth >= 0).all()


def test_tree_arrays_of_a_block_match_the_sentences():
    """The block reader's arrays (ColumnBlock) and Sentence objects give the same trees to the rule."""
    from fairseq_syntax.data.alignment.piece_align import _block_trees
    from fairseq_syntax.data.trees.conllu import write_conllu
    from fairseq_syntax.data.trees.conllu_blocks import ColumnBlock, columns_from_text
    import io

    rng = random.Random(2)
    cases = [_random_sentence(rng, rng.randint(1, 10)) for _ in range(50)]
    buf = io.StringIO()
    write_conllu([s for s, _, _ in cases], buf)
    block = columns_from_text(buf.getvalue())
    assert isinstance(block, ColumnBlock)
    a, b = _block_trees(block), _sentence_trees([s for s, _, _ in cases])
    assert a.surface == b.surface and (a.token_sizes == b.token_sizes).all()
    assert (a.token_of_word == b.token_of_word).all() and (a.heads == b.heads).all()
    assert isinstance(a, TreeArrays) and (a.depths == b.depths).all()
    assert unicodedata.normalize("NFKC", "ｶﾞ") == "ガ"


def _files(tmp_path, sents, raws, pieces):
    from fairseq_syntax.data.trees.conllu import write_conllu

    with open(tmp_path / "x.conllu", "w", encoding="utf-8") as f:
        write_conllu(sents, f)
    (tmp_path / "x.raw").write_text("".join(r + "\n" for r in raws), encoding="utf-8")
    (tmp_path / "x.spm").write_text("".join(p + "\n" for p in pieces), encoding="utf-8")
    return str(tmp_path / "x.conllu"), str(tmp_path / "x.raw"), str(tmp_path / "x.spm")


def test_a_word_missing_from_the_raw_text_is_named_by_its_conllu_line(tmp_path):
    """Streaming a file: a parser's word that its sentence's raw text does not hold stops the alignment, naming
    the CoNLL-U line of the word and the raw text's line."""
    from fairseq_syntax.data.alignment.piece_align import iter_piece_aligned_blocks

    good = Sentence(["a", "b"], [0, 1], ["root", "dep"])
    bad = Sentence(["two", "cats"], [2, 0], ["nummod", "root"])
    c, r, p = _files(tmp_path, [good, bad], ["a b", "two dogs"], ["▁a ▁b", "▁two ▁dogs"])
    with pytest.raises(SyntaxDataError) as e:
        list(iter_piece_aligned_blocks(c, r, p, progress=False))
    assert str(e.value).startswith(f"{c}:5: the parser's word 'cats' (token 2)") and f"{r}:2" in str(e.value)


def test_a_conllu_without_its_raw_text_is_refused_for_sentencepiece(tmp_path):
    """SentencePiece cuts the raw sentence: a CoNLL-U sentence without its # text (here the second) is named."""
    from fairseq_syntax.preparation.sentencepiece_step import raw_sentences

    a = Sentence(["a", "b"], [0, 1], ["root", "dep"], comments=["# text = a b"])
    b = Sentence(["c"], [0], ["root"])
    c, _, _ = _files(tmp_path, [a, b], [], [])
    with pytest.raises(SyntaxDataError) as e:
        raw_sentences(c, str(tmp_path / "out"))
    assert str(e.value).startswith(f"{c}:5: a sentence without a '# text = ...' comment")
    assert not (tmp_path / "out").exists()


def test_byte_fallback_pieces_go_with_their_character(tmp_path):
    """A model with byte fallback writes a character it lacks as its UTF-8 bytes (<0xE9> <0xBE> <0x98>), the
    last of them carrying the character: all of them belong to the word that holds it."""
    import sentencepiece as spm

    lines = ["Two dogs play in the snow.", "A cat sleeps."] * 50
    spm.SentencePieceTrainer.train(sentence_iterator=iter(lines), model_prefix=str(tmp_path / "m"), vocab_size=300,
                                   byte_fallback=True, hard_vocab_limit=False, num_threads=1, minloglevel=2)
    sp = spm.SentencePieceProcessor(model_file=str(tmp_path / "m.model"))
    raw = "dogs x\u9f98y end"
    pieces = sp.encode(raw, out_type=str)
    assert "<0xE9>" in pieces
    sent = Sentence(["dogs", "x\u9f98y", "end"], [0, 1, 2], ["root", "dep", "dep"])
    word, _, _, _ = align_sentence_pieces(sent, raw, pieces, sp)
    k = pieces.index("<0xE9>")
    assert word[k:k + 3] == [2, 2, 2] and word[0] == 1 and word[-1] == 3 and max(word) == 3
