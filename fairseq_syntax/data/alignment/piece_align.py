"""SentencePiece pieces aligned to a dependency tree by character offsets into the raw sentence.

SentencePiece segments the raw sentence (``▁`` marks a word start), the parser tokenises it its own way, so a
piece may cut across the parser's words ("don't": ``▁don`` ``'t`` against UDPipe's ``do`` ``n't``) and
Japanese has no spaces to agree on. Both are placed in the raw sentence by character offsets and combined by the
rule of docs/design.md ("SentencePiece units", :mod:`.piece_units`). Each piece gets what a BPE subword gets
(:mod:`.subword_align`): its unit (1-based), the unit's head unit (0 = root) and label, and in addition the
unit's first parser word (0-based), which the aligned-tree view names a unit by. Every parent strategy and depth
then works as it does for BPE.

:func:`iter_piece_aligned_blocks` reads a CoNLL-U file's blocks with their raw text and pieces: where a
sentence's tokens and pieces spell its raw text exactly (whitespace aside), their spans come from their lengths
alone, for the whole block at once; the other sentences (a re-written word, text that SentencePiece normalised)
are located one by one (:mod:`.piece_spans`). :func:`align_sentence_pieces` does one sentence (decoding raw
text).
"""
from __future__ import annotations

import re
from typing import List, Sequence

import numpy as np

from fairseq_syntax.data.alignment.piece_spans import MARK, NeedsModel, PiecesDiffer, locate_pieces, locate_sentence
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


def _lengths(text: str):
    """(lengths of the space-separated items of ``text``'s lines, without ``▁``; items per line), or None when a
    line is empty or not single-spaced."""
    if not text or "  " in text or " \n" in text or "\n " in text or "\n\n" in text or text[0] in " \n":
        return None
    b = np.frombuffer(text.encode("utf-8"), dtype=np.uint8)
    sep = (b == 32) | (b == 10)
    ends = np.flatnonzero(sep)
    # a character is a byte that does not continue one (10xxxxxx); ▁ (E2 96 81) and the separators do not count
    content = ((b & 0xC0) != 0x80) & ~sep
    if MARK in text:
        content[np.flatnonzero((b[:-2] == 0xE2) & (b[1:-1] == 0x96) & (b[2:] == 0x81))] = False
    counted = np.cumsum(content)
    lengths = np.diff(counted[ends], prepend=0)
    newline = b[ends] == 10
    per_line = np.diff(np.flatnonzero(newline), prepend=-1)
    return lengths, per_line


class _Failure(Exception):
    def __init__(self, k, error):
        self.k, self.error = k, error


def align_block_pieces(trees: TreeArrays, raw_lines: List[str], piece_lines: List[str], spm=None):
    """:func:`units_from_spans` for the sentences of ``trees``: the spans of every sentence whose tokens and pieces
    spell its raw text (whitespace aside) from their lengths, all at once; the others located one by one
    (:func:`locate_sentence`); :class:`_Failure` names the first sentence that cannot be aligned."""
    n = len(trees.token_sizes)
    raw_text, piece_text = (_text(lines) for lines in (raw_lines, piece_lines))
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
        slow = range(n)
        piece_len = np.zeros(int(piece_sizes.sum()), np.int64)
        raw_ns = piece_ns = None  # not compared: every sentence is located
    else:
        tok_len, _ = tok
        piece_len, piece_sizes = got
        # the whole block at once when it spells its raw text (the common case), else sentence by sentence
        tok_ns = surface.replace(" ", "")
        piece_ns = piece_text.replace(" ", "").replace(MARK, "")
        raw_ns = raw_text.replace(" ", "")
        if raw_ns != tok_ns:  # other whitespace than spaces (tabs, ideographic spaces), or another text
            raw_ns = _WHITESPACE.sub("", raw_ns)
        if raw_ns == tok_ns == piece_ns:
            slow = []
        else:
            raw_ns, tok_ns, piece_ns = (x.split("\n") for x in (raw_ns, tok_ns, piece_ns))
            slow = [k for k in range(n) if not raw_ns[k] == tok_ns[k] == piece_ns[k]]
    raw = raw_text.split("\n") if slow else None
    stride = (max((len(x) for x in raw), default=0) if slow else len(raw_text)) + 2
    tok_first = np.zeros(n + 1, np.int64)
    np.cumsum(trees.token_sizes, out=tok_first[1:])
    piece_first = np.zeros(n + 1, np.int64)
    np.cumsum(piece_sizes, out=piece_first[1:])
    # spans from lengths: the characters of a sentence's tokens (and of its pieces), whitespace aside, in a row
    tok_sent = np.repeat(np.arange(n), trees.token_sizes)
    piece_sent = np.repeat(np.arange(n), piece_sizes)
    tok_at = np.cumsum(tok_len) - tok_len
    tok_at -= tok_at[tok_first[:-1]][tok_sent] if len(tok_at) else 0
    piece_at = np.cumsum(piece_len) - piece_len
    piece_at -= piece_at[piece_first[:-1]][piece_sent] if len(piece_at) else 0
    tok_start, tok_end = tok_at, tok_at + tok_len
    piece_start, piece_end = piece_at, piece_at + piece_len
    piece_lines_of = piece_text.split("\n") if slow else None
    normalized = {}  # the model's normalisation, in one call, of the sentences whose pieces do not spell them
    if slow and spm is not None:
        which = [k for k in slow if piece_ns[k] != raw_ns[k]] if isinstance(raw_ns, list) else list(slow)
        if which:
            normalized = dict(zip(which, spm.Normalize([raw[k] for k in which], with_offsets=True)))
    for k in slow:
        # tokens that spell a raw text without whitespace keep their spans from lengths (they are its offsets)
        spelled = isinstance(raw_ns, list) and raw_ns[k] == tok_ns[k] and len(raw_ns[k]) == len(raw[k])
        pieces_k = piece_lines_of[k].split()
        try:
            if spelled:
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
    offset_t, offset_p = tok_sent * stride, piece_sent * stride
    return units_from_spans(trees, tok_start + offset_t, tok_end + offset_t, piece_sizes, piece_start + offset_p,
                            piece_end + offset_p)


def _text(lines: List[str]) -> str:
    """Lines (with or without their line ends) as one text, a line end after each."""
    text = "".join(lines)
    if text.count("\n") == len(lines) and text.endswith("\n"):
        return text
    return "".join(line.rstrip("\n") + "\n" for line in lines)


#: whitespace but the line break (the raw text of a block, a sentence a line, without its spaces)
_WHITESPACE = re.compile(r"[^\S\n]+")


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
            raw_lines = raw.next_lines(n)
            piece_lines = pieces.next_lines(n)
            for path, got in ((raw_path, raw_lines), (pieces_path, piece_lines)):
                if len(got) < n:
                    raise SyntaxDataError(path, f"line count mismatch: {conllu_path} has more sentences than this "
                                          f"file has lines ({lineno + len(got)})")
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
