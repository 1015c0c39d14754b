"""SentencePiece pieces aligned to a dependency tree by character offsets into the raw sentence.

SentencePiece segments the raw sentence (``▁`` marks a word start), the parser tokenises it its own way, so a
piece may cut across the parser's words ("don't": ``▁don`` ``'t`` against UDPipe's ``do`` ``n't``) and
Japanese has no spaces to agree on. Both are placed in the raw sentence by character offsets and combined by the
rule of docs/design.md ("SentencePiece units", :mod:`.piece_units`). Each piece gets what a BPE subword gets
(:mod:`.subword_align`): its unit (1-based), the unit's head unit (0 = root) and label, and in addition the
unit's first parser word (0-based), which the aligned-tree view names a unit by. Every parent strategy and depth
then works as it does for BPE.

:func:`iter_piece_aligned_blocks` reads a CoNLL-U file's blocks with their raw text and pieces: where a
sentence's tokens and pieces spell the same text (whitespace aside), their spans come from their lengths
alone, for the whole block at once, and its raw text is not looked at; the others are compared with their raw
text and, but for SentencePiece's one-for-one normalisation, located one by one (:mod:`.piece_spans`).
:func:`align_sentence_pieces` does one sentence (decoding raw text).
"""
from __future__ import annotations

from typing import List, Sequence, Union

import numpy as np

from fairseq_syntax.data.alignment.piece_spans import (MARK, NeedsModel, PiecesDiffer, locate_pieces, locate_sentence,
                                                       normalized_spans_of_sentences)
from fairseq_syntax.data.alignment.char_arrays import _codes, _lengths, _runs
from fairseq_syntax.data.alignment.piece_units import TreeArrays, units_from_spans
from fairseq_syntax.data.alignment.word_offsets import WordNotFound
from fairseq_syntax.data.trees.conllu_blocks import ColumnBlock, read_blocks
from fairseq_syntax.errors import SyntaxDataError
from fairseq_syntax.text_reading import open_text

__all__ = ["MARK", "TreeArrays", "align_block_pieces", "align_sentence_pieces", "iter_piece_aligned_blocks",
           "load_sentencepiece", "units_from_spans"]


def load_sentencepiece(path: str):
    """A ``SentencePieceProcessor`` of the model file ``path``; one line naming the file when it is not one."""
    import sentencepiece as spm

    try:
        return spm.SentencePieceProcessor(model_file=path)
    except (OSError, RuntimeError) as e:
        raise SyntaxDataError(path, f"not a SentencePiece model ({' '.join(str(e).split())[:200]})") from None


def align_sentence_pieces(sent, raw: str, pieces: Sequence[str], spm=None, where: str = "input"):
    """Per piece (unit, head unit, label, first word) of one :class:`~fairseq_syntax.data.trees.conllu.Sentence`
    whose raw text is ``raw`` and whose SentencePiece pieces are ``pieces``; errors name ``where``."""
    from fairseq_syntax.data.trees.tree import word_depths

    if not pieces:
        raise SyntaxDataError(where, f"no pieces, but the parse has {len(sent.words)} words")
    try:
        spans = locate_sentence(sent.tokens, raw, pieces, spm)
    except (WordNotFound, NeedsModel, PiecesDiffer) as e:
        raise SyntaxDataError(where, _explain(e)) from None
    names = list(dict.fromkeys(sent.labels))
    trees = TreeArrays(np.array([len(sent.words)]), np.asarray(sent.heads, np.int64),
                       np.asarray(word_depths(sent.heads), np.int64),
                       np.array([names.index(x) for x in sent.labels], np.int32), names, " ".join(sent.tokens),
                       np.array([len(sent.tokens)]), np.asarray(sent.token_of_word, np.int64))
    block = units_from_spans(trees, *(np.asarray(x, np.int64) for x in (spans.token_start, spans.token_end)),
                             np.array([len(pieces)]), np.asarray(spans.piece_start, np.int64),
                             np.asarray(spans.piece_end, np.int64))
    return (block.word.tolist(), block.head.tolist(), [names[i] for i in block.label.tolist()],
            block.first_word.tolist())


def _explain(e) -> str:
    if isinstance(e, WordNotFound):
        return f"{e}: the parse's words and its raw text differ (give the text the parser read)"
    if isinstance(e, NeedsModel):
        return ("the pieces do not spell the raw sentence (SentencePiece normalised it): aligning them needs the "
                "SentencePiece model's offsets")
    return f"the pieces are not the SentencePiece model's encoding of the raw sentence ({e})"


# --- a CoNLL-U file with its raw text and pieces ------------------------------------------------------------------
def _block_trees(block: ColumnBlock) -> TreeArrays:
    n = len(block)
    word_sizes = np.diff(block.starts)
    local = np.arange(int(block.starts[-1])) - np.repeat(block.starts[:-1], word_sizes)
    token_sizes = word_sizes.copy()
    surface = block.forms[:-1] if block.forms.endswith("\n") else block.forms
    if block.multiword:  # their surface tokens in place of their words
        lines = surface.split("\n")
        for k, (toks, token_of_word) in block.multiword.items():
            lines[k] = " ".join(toks)
            token_sizes[k] = len(toks)
            a = int(block.starts[k])
            local[a:a + len(token_of_word)] = token_of_word
        surface = "\n".join(lines)
    assert len(token_sizes) == n
    return TreeArrays(word_sizes, block.heads.astype(np.int64), block.depths.astype(np.int64), block.labels,
                      block.label_names, surface, token_sizes, local)


def _sentence_trees(sents) -> TreeArrays:
    from fairseq_syntax.data.trees.tree import word_depths

    names: dict = {}
    labels = [names.setdefault(x, len(names)) for s in sents for x in s.labels]
    return TreeArrays(np.array([len(s.words) for s in sents], np.int64),
                      np.array([h for s in sents for h in s.heads], np.int64),
                      np.array([d for s in sents for d in word_depths(s.heads)], np.int64),
                      np.array(labels, np.int32), list(names), "\n".join(" ".join(s.tokens) for s in sents),
                      np.array([len(s.tokens) for s in sents], np.int64),
                      np.array([t for s in sents for t in s.token_of_word], np.int64))


def _lines_differ(a: np.ndarray, b: np.ndarray, ea: np.ndarray = None, eb: np.ndarray = None) -> np.ndarray:
    """Per line, whether two texts of as many lines (code points, each line ended by a line end) differ there;
    ``ea``, ``eb``: their line ends, where known."""
    ea = np.flatnonzero(a == 10) if ea is None else ea
    eb = np.flatnonzero(b == 10) if eb is None else eb
    if len(a) == len(b) and np.array_equal(ea, eb):  # lines of the same lengths: where the characters differ
        differ = np.zeros(len(ea), bool)
        differ[np.searchsorted(ea, np.flatnonzero(a != b))] = True
        return differ
    la, lb = np.diff(ea, prepend=-1), np.diff(eb, prepend=-1)
    differ = la != lb
    same = np.flatnonzero(~differ)
    size = la[same]
    start_a, start_b = (ea - la + 1)[same], (eb - lb + 1)[same]
    at = _runs(start_a, size)
    unequal = a[at] != b[at + np.repeat(start_b - start_a, size)]
    differ[same[np.unique(np.repeat(np.arange(len(same)), size)[unequal])]] = True
    return differ


def _replaced_one_for_one(a: np.ndarray, b: np.ndarray, lines: np.ndarray, spm) -> np.ndarray:
    """Per line of two texts of as many lines (code points, each line ended by a line end), whether it is one of
    ``lines`` and b's line is a's with characters replaced one for one by what the SentencePiece model ``spm``
    normalises each of them to (full-width digits and marks under NFKC): then b's characters sit at a's
    offsets."""
    ea, eb = np.flatnonzero(a == 10), np.flatnonzero(b == 10)
    la, lb = np.diff(ea, prepend=-1), np.diff(eb, prepend=-1)
    out = np.zeros(len(ea), bool)
    lines = lines[la[lines] == lb[lines]]
    if not len(lines):
        return out
    size = la[lines]
    at = _runs(ea[lines] - la[lines] + 1, size)
    ca, cb = a[at], b[at + np.repeat(eb[lines] - ea[lines], size)]
    differ = ca != cb
    chars, which = np.unique(ca[differ], return_inverse=True)
    normalised = _normalised_characters(chars.tolist(), spm)
    wrong = normalised[which] != cb[differ]
    ok = np.ones(len(lines), bool)
    ok[np.repeat(np.arange(len(lines)), size)[differ][wrong]] = False
    out[lines[ok]] = True
    return out


def _normalised_characters(chars: List[int], spm) -> np.ndarray:
    """The one character the model ``spm`` normalises each of ``chars`` to (-1 where it is not one): each after a
    letter, in one call, so that the ``▁`` a model adds at a text's start (its dummy prefix) is not counted."""
    prefix = spm.Normalize("a")
    out = spm.Normalize(["a" + chr(c) for c in chars]) if chars else []
    return np.array([ord(t[-1]) if len(t) == len(prefix) + 1 and t.startswith(prefix) else -1 for t in out],
                    np.int64)


def _spaces_per_line(c: np.ndarray, space: np.ndarray) -> np.ndarray:
    ends = np.flatnonzero(c == 10)
    return np.bincount(np.searchsorted(ends, np.flatnonzero(space)), minlength=len(ends))


class _Failure(Exception):
    def __init__(self, k, error):
        self.k, self.error = k, error


def align_block_pieces(trees: TreeArrays, raw_lines: Union[str, List[str]], piece_lines: Union[str, List[str]],
                       spm=None):
    """:func:`units_from_spans` for the sentences of ``trees``: the spans of every sentence whose tokens and pieces
    spell the same text (whitespace aside), or its raw text but for SentencePiece's one-for-one normalisation,
    from their lengths, all at once; the others located one by one (:func:`locate_sentence`); :class:`_Failure`
    names the first sentence that cannot be aligned. ``raw_lines`` and ``piece_lines``: a line per sentence, as
    a list or as one text of whole lines; the raw text is split into lines only where tokens and pieces differ."""
    n = len(trees.token_sizes)
    piece_text = _text(piece_lines)
    surface = trees.surface + "\n"
    tok = _lengths(surface)
    got = _lengths(piece_text) if tok is not None else None
    if got is None or len(got[1]) != n or len(tok[1]) != n:  # an empty or irregular line: one by one
        pieces = piece_text[:-1].split("\n")
        for k, line in enumerate(pieces):
            if not line.split():
                raise _Failure(k, "no pieces")
        tok_len = np.array([len(x) for x in surface.split()], np.int64)
        piece_sizes = np.array([len(p.split()) for p in pieces], np.int64)
        slow = list(range(n))
        piece_len = np.zeros(int(piece_sizes.sum()), np.int64)
        spelled_line = np.zeros(n, bool)  # not compared: every sentence is located
        normalised_line = np.ones(n, bool)
        raw = _text(raw_lines)[:-1].split("\n")
    else:
        tok_len, _, tok_c = tok
        piece_len, piece_sizes, piece_c = got
        # the whole block at once where the tokens and the pieces spell the same text (whitespace and marks
        # aside: the common case), their offsets in it those in the raw sentence less its whitespace; the raw
        # text is read only where they differ, to tell a re-written word (located one by one) from text that
        # SentencePiece normalised
        # (np.compress: several times faster here than a boolean index)
        keep = piece_c != 32
        keep &= piece_c != ord(MARK)
        tok_ns, piece_ns = np.compress(tok_c != 32, tok_c), np.compress(keep, piece_c)
        tok_ends, piece_ends = np.flatnonzero(tok_ns == 10), np.flatnonzero(piece_ns == 10)
        differ = np.flatnonzero(_lines_differ(tok_ns, piece_ns, tok_ends, piece_ends))
        slow = []
        if len(differ):
            raw = _text(raw_lines)[:-1].split("\n")
            raw_c = _codes("".join(raw[k] + "\n" for k in differ.tolist()))
            tok_ns, piece_ns = _take_lines(tok_ns, tok_ends, differ), _take_lines(piece_ns, piece_ends, differ)
            space = raw_c == 32
            raw_ns = np.compress(~space, raw_c)
            raw_tok = _lines_differ(raw_ns, tok_ns)
            if raw_tok.any():  # other whitespace than spaces (tabs, ideographic spaces), or another text
                space = np.isin(raw_c, _WHITESPACE_CODES)
                raw_ns = np.compress(~space, raw_c)
                raw_tok = _lines_differ(raw_ns, tok_ns)
            raw_piece = _lines_differ(raw_ns, piece_ns)
            if spm is not None and raw_piece.any():  # NFKC's one-for-one replacements keep the offsets of lengths
                raw_piece &= ~_replaced_one_for_one(raw_ns, piece_ns, np.flatnonzero(raw_piece & ~raw_tok), spm)
            slow = differ[raw_tok | raw_piece].tolist()
            # tokens that spell a raw text without whitespace keep their spans from lengths (they are its
            # offsets); the pieces of the sentences SentencePiece normalised are placed by its offsets
            spelled_line, normalised_line = np.zeros(n, bool), np.zeros(n, bool)
            spelled_line[differ] = ~raw_tok & (_spaces_per_line(raw_c, space) == 0)
            normalised_line[differ] = raw_piece
    tok_first = np.zeros(n + 1, np.int64)
    np.cumsum(trees.token_sizes, out=tok_first[1:])
    piece_first = np.zeros(n + 1, np.int64)
    np.cumsum(piece_sizes, out=piece_first[1:])
    # spans from lengths: the characters of a sentence's tokens (and of its pieces), whitespace aside, in a row
    tok_sent = np.repeat(np.arange(n), trees.token_sizes)
    piece_sent = np.repeat(np.arange(n), piece_sizes)
    tok_at = np.cumsum(tok_len) - tok_len
    piece_at = np.cumsum(piece_len) - piece_len
    # a key per character that orders the block: a sentence's offsets plus the extents of the sentences before it
    # (one past its characters: its tokens', its pieces', its raw text's where it is located one by one), so that
    # the keys are about as many as the block's characters
    extent = np.zeros(n, np.int64)
    if n:
        extent = np.maximum((tok_at + tok_len)[tok_first[1:] - 1] - tok_at[tok_first[:-1]],
                            (piece_at + piece_len)[piece_first[1:] - 1] - piece_at[piece_first[:-1]]) + 2
        for k in slow:
            extent[k] = max(extent[k], len(raw[k]) + 2)
    base = np.cumsum(extent) - extent
    tok_at -= tok_at[tok_first[:-1]][tok_sent] if len(tok_at) else 0
    piece_at -= piece_at[piece_first[:-1]][piece_sent] if len(piece_at) else 0
    tok_start, tok_end = tok_at, tok_at + tok_len
    piece_start, piece_end = piece_at, piece_at + piece_len
    piece_lines_of = piece_text.split("\n") if slow else None
    normalized = {}  # the model's normalisation, in one call, of the sentences whose pieces do not spell them
    if slow and spm is not None:
        which = [k for k in slow if normalised_line[k]]
        if which:
            normalized = dict(zip(which, spm.Normalize([raw[k] for k in which], with_offsets=True)))
    spelled = [bool(spelled_line[k]) for k in slow]
    # of those, the ones SentencePiece normalised (NFKC: full-width digits and marks), all at once
    group = [k for k, ok in zip(slow, spelled) if ok and k in normalized]
    done = set()
    if group:
        spells, starts, ends = normalized_spans_of_sentences([piece_lines_of[k] for k in group],
                                                             [normalized[k] for k in group],
                                                             [len(raw[k]) for k in group])
        ok = np.asarray(group, np.int64)[spells]
        sizes = piece_sizes[ok]
        if int(sizes.sum()) == len(starts):  # (else each is placed, and its error named, one by one below)
            at = _runs(piece_first[ok], sizes)
            piece_start[at], piece_end[at] = starts, ends
            done = set(ok.tolist())
    for k, spelled_k in zip(slow, spelled):
        if k in done:
            continue
        pieces_k = piece_lines_of[k].split()
        try:
            if spelled_k:
                starts, ends = locate_pieces(raw[k], pieces_k, spm, normalized.get(k))
            else:
                spans = locate_sentence(trees.tokens(k), raw[k], pieces_k, spm, normalized.get(k))
                a, b = tok_first[k], tok_first[k + 1]
                tok_start[a:b], tok_end[a:b] = spans.token_start, spans.token_end
                starts, ends = spans.piece_start, spans.piece_end
        except (WordNotFound, NeedsModel, PiecesDiffer) as e:
            raise _Failure(k, e) from None
        if len(starts) != piece_sizes[k]:
            raise _Failure(k, "pieces")
        a, b = piece_first[k], piece_first[k + 1]
        piece_start[a:b], piece_end[a:b] = starts, ends
    offset_t, offset_p = base[tok_sent], base[piece_sent]
    return units_from_spans(trees, tok_start + offset_t, tok_end + offset_t, piece_sizes, piece_start + offset_p,
                            piece_end + offset_p)


def _take_lines(c: np.ndarray, ends: np.ndarray, lines: np.ndarray) -> np.ndarray:
    """The code points of lines ``lines`` (ascending) of a text ``c`` whose line ends are at ``ends``, each with
    its line end, in a row."""
    size = np.diff(ends, prepend=-1)[lines]
    start = ends[lines] - size + 1
    return c[_runs(start, size)]


def _text(lines) -> str:
    """Lines (with or without their line ends; or a text of whole lines) as one text, a line end after each."""
    if isinstance(lines, str):
        return lines if lines.endswith("\n") else lines + "\n"
    text = "".join(lines)
    if text.count("\n") == len(lines) and text.endswith("\n"):
        return text
    return "".join(line.rstrip("\n") + "\n" for line in lines)


#: whitespace but the line break (the raw text of a block, a sentence a line, without its spaces)
_WHITESPACE_CODES = np.array([c for c in range(0x3001) if chr(c).isspace() and c != 10], np.uint32)


def iter_piece_aligned_blocks(conllu_path: str, raw_path: str, pieces_path: str, spm=None, progress: bool = True,
                              block_chars: int = 1 << 20, total: int = None):
    """Yield :class:`~fairseq_syntax.data.alignment.subword_align.AlignedBlock` s (with ``first_word``) covering
    every sentence of a CoNLL-U file in order, aligned to the SentencePiece pieces of its raw text: line k of
    ``raw_path`` is sentence k's raw text (the text its parser read), line k of ``pieces_path`` its pieces, which
    the model ``spm`` made of it (needed only for sentences SentencePiece normalised). Streaming; errors name the
    file and line."""
    from tqdm import tqdm

    lineno = 0
    with open_text(raw_path) as raw, open_text(pieces_path) as pieces, \
            tqdm(desc=f"align {pieces_path}", unit="sent", total=total, disable=not progress, mininterval=1.0) as bar:
        for block in read_blocks(conllu_path, block_chars):
            if isinstance(block, ColumnBlock):
                sents = None
                trees = _block_trees(block)
            else:
                sents = list(block.read())
                trees = _sentence_trees(sents)
            n = len(trees.token_sizes)
            (raw_lines, raw_got), (piece_lines, pieces_got) = raw.next_text(n), pieces.next_text(n)
            for path, got in ((raw_path, raw_got), (pieces_path, pieces_got)):
                if got < n:
                    raise SyntaxDataError(path, f"line count mismatch: {conllu_path} has more sentences than this "
                                          f"file has lines ({lineno + got})")
            try:
                out = align_block_pieces(trees, raw_lines, piece_lines, spm)
            except _Failure as f:
                sent = (sents or list(block.read()))[f.k]
                raise _located_error(f, sent, conllu_path, raw_path, pieces_path, lineno + f.k + 1) from None
            lineno += n
            bar.update(n)
            yield out
        for path, fh in ((raw_path, raw), (pieces_path, pieces)):
            if fh.readline():
                raise SyntaxDataError(path, f"line count mismatch: {conllu_path} has {lineno} sentences but this "
                                      f"file has more lines (line {lineno + 1} has no parse)")


def _located_error(f, sent, conllu_path, raw_path, pieces_path, line) -> SyntaxDataError:
    e = f.error
    if isinstance(e, WordNotFound):
        word = sent.token_of_word.index(e.index)
        where = f"{conllu_path}:{sent.word_lines[word]}" if sent.word_lines else f"{conllu_path}:{sent.line}"
        return SyntaxDataError(where, f"{e}: its raw text ({raw_path}:{line}, the CoNLL-U's # text) and its words "
                               "differ; give the text the parser read")
    if e == "no pieces":
        return SyntaxDataError(f"{pieces_path}:{line}", f"empty line, but the parse (CoNLL-U line {sent.line}) has "
                               f"{len(sent.words)} words")
    return SyntaxDataError(f"{pieces_path}:{line}", f"{_explain(e) if not isinstance(e, str) else e} ({raw_path}:"
                           f"{line})")
