"""Where each SentencePiece piece of one sentence lies in its raw text, as character spans (first non-space
character, end), beside the parser's tokens located by :mod:`.word_offsets`: by the pieces' own characters where
SentencePiece left the text as it was, else by the model's offsets into the text it normalised (NFKC: full-width
digits and marks). :mod:`.piece_units` makes units of the spans.
"""
from __future__ import annotations

from dataclasses import dataclass
from itertools import chain
from typing import List, Optional, Sequence, Tuple

import numpy as np

from fairseq_syntax.data.alignment.word_offsets import locate_tokens

#: SentencePiece's word-start mark (U+2581), which stands for the whitespace before a piece
MARK = "\u2581"


def plain_piece_spans(pieces: Sequence[str], raw: str) -> Optional[Tuple[List[int], List[int]]]:
    """(first non-space character, end) of each piece in ``raw`` when the pieces' characters are the raw text's
    (SentencePiece changed nothing but whitespace), else None."""
    starts: List[int] = []
    ends: List[int] = []
    pos, n = 0, len(raw)
    for piece in pieces:
        text = piece.replace(MARK, "")
        if not text:
            starts.append(-1)  # only the mark: the next piece's start
            ends.append(-1)
            continue
        while pos < n and raw[pos].isspace():
            pos += 1
        if not raw.startswith(text, pos):
            return None
        starts.append(pos)
        ends.append(pos + len(text))
        pos += len(text)
    return _fill_marks(starts, ends, n)


def proto_piece_spans(proto, raw: str) -> Tuple[List[str], List[int], List[int]]:
    """(pieces, first non-space character, end) of SentencePiece's encoding of ``raw`` with offsets (a
    ``SentencePieceText``: ``encode(raw, out_type="proto")``; its offsets are UTF-8 bytes of the text it was
    given, ``surface`` the piece's raw characters, which follow one another from the first piece's offset)."""
    data = raw.encode("utf-8")
    pieces, starts, ends = [], [], []
    pos = byte = None
    for p in proto.pieces:
        if p.begin != byte:  # the first piece, or a gap in the surfaces: its offset in characters
            byte, pos = p.begin, len(data[:p.begin].decode("utf-8", errors="ignore"))
        pieces.append(p.piece)
        surface = p.surface
        lead = len(surface) - len(surface.lstrip())
        begin, pos, byte = pos, pos + len(surface), p.end
        if lead == len(surface):
            starts.append(-1)
            ends.append(-1)
        else:
            starts.append(begin + lead)
            ends.append(pos)
    starts, ends = _fill_marks(starts, ends, len(raw))
    return pieces, starts, ends


def normalized_piece_spans(pieces: Sequence[str], normalized: str, offsets: Sequence[int],
                           n: int) -> Optional[Tuple[List[int], List[int]]]:
    """(first non-space character, end) in the raw text of each piece, from SentencePiece's normalisation of the
    raw text (``Normalize(raw, with_offsets=True)``: the normalised text, ``▁`` for its whitespace, and the raw
    character each of its characters came from), which the pieces spell; None when they do not."""
    if "".join(pieces) != normalized:
        return None
    starts: List[int] = []
    ends: List[int] = []
    at = 0
    for piece in pieces:
        lead = len(piece) - len(piece.lstrip(MARK))
        at_end = at + len(piece)
        if lead == len(piece):
            starts.append(-1)
            ends.append(-1)
        else:
            starts.append(offsets[at + lead])
            ends.append(offsets[at_end])
        at = at_end
    return _fill_marks(starts, ends, n)


def normalized_spans_of_sentences(piece_lines: Sequence[str], normalized: Sequence[Tuple[str, Sequence[int]]],
                                  raw_lengths: Sequence[int]):
    """:func:`normalized_piece_spans` for many sentences at once: ``piece_lines[i]`` (pieces separated by spaces)
    against ``normalized[i]`` (the model's normalisation of raw sentence i, ``raw_lengths[i]`` characters, with its
    offsets). Returns (spells, starts, ends): which sentences' pieces spell their normalisation, and the spans of
    the pieces of those sentences, in order, as arrays (the others are left to the caller)."""
    spells = np.array([line.replace(" ", "") == text for line, (text, _) in zip(piece_lines, normalized)], bool)
    kept = np.flatnonzero(spells)
    if not len(kept):
        return spells, np.zeros(0, np.int64), np.zeros(0, np.int64)
    joined = "".join(piece_lines[i] + "\n" for i in kept)
    if "  " in joined or " \n" in joined or joined[0] == " " or "\n " in joined:  # not single-spaced
        joined = "".join(" ".join(piece_lines[i].split()) + "\n" for i in kept)
    c = np.frombuffer(joined.encode("utf-32-le"), np.uint32)
    sep = (c == 32) | (c == 10)
    piece_of = np.cumsum(sep) - sep  # each piece is followed by one separator
    n_pieces = int(sep.sum())
    content = ~sep
    piece_of, ismark = piece_of[content], c[content] == ord(MARK)
    length = np.bincount(piece_of, minlength=n_pieces)
    first = np.cumsum(length) - length  # of each piece, among the characters of the normalised texts in a row
    other = ~ismark
    before = np.cumsum(other) - other  # characters other than the mark before each character
    leading = ismark & (before == before[first[piece_of]])
    lead = np.bincount(piece_of[leading], minlength=n_pieces)
    sent = _sentence_of_pieces(c, sep)
    offsets = np.fromiter(chain.from_iterable(normalized[i][1] for i in kept), np.int64)
    # a sentence's offsets have one entry more than its text: character g of sentence s is entry g + s
    starts = offsets[first + sent + lead]
    ends = offsets[first + sent + length]
    # a piece that is only the mark takes the start of the sentence's next piece with characters, else the end
    valid = lead < length
    at = np.where(valid, np.arange(n_pieces), n_pieces)
    nxt = np.minimum.accumulate(at[::-1])[::-1]
    same = nxt < n_pieces
    same[same] = sent[nxt[same]] == sent[same]
    fill = np.where(same, starts[np.minimum(nxt, n_pieces - 1)],
                    np.asarray(raw_lengths, np.int64)[kept][sent])
    return spells, np.where(valid, starts, fill), np.where(valid, ends, fill)


def _sentence_of_pieces(c, sep):
    """The sentence (0-based) of each piece of a text of lines of pieces (``sep``: its spaces and line ends)."""
    line_ends = c[sep] == 10
    return np.cumsum(line_ends) - line_ends


def _fill_marks(starts, ends, n):
    """A piece without characters (-1) takes the start of the next piece that has some (the end of the text
    after the last), and ends there."""
    nxt = n
    for k in range(len(starts) - 1, -1, -1):
        if starts[k] < 0:
            starts[k] = ends[k] = nxt
        else:
            nxt = starts[k]
    return starts, ends


@dataclass
class SentenceSpans:
    """One sentence's surface tokens and pieces located in its raw text (character offsets)."""

    token_start: List[int]
    token_end: List[int]
    piece_start: List[int]
    piece_end: List[int]


def locate_sentence(tokens: Sequence[str], raw: str, pieces: Sequence[str], spm=None,
                    normalized=None) -> SentenceSpans:
    """The spans of one sentence: its tokens located in ``raw`` (:func:`locate_tokens`; :class:`WordNotFound`
    when one is not there) and its pieces (:func:`locate_pieces`)."""
    token_start, token_end = locate_tokens(raw, tokens)
    return SentenceSpans(token_start, token_end, *locate_pieces(raw, pieces, spm, normalized))


def locate_pieces(raw: str, pieces: Sequence[str], spm=None, normalized=None) -> Tuple[List[int], List[int]]:
    """The spans of a sentence's pieces in ``raw``: by their characters, or, where SentencePiece normalised the
    text, by the offsets of the model ``spm`` (a ``SentencePieceProcessor``): of its normalisation
    (``normalized``, made already, or made here) when the pieces spell it, else of its encoding of ``raw``,
    which must be ``pieces`` (:class:`PiecesDiffer` otherwise; :class:`NeedsModel` without a model)."""
    spans = plain_piece_spans(pieces, raw) if normalized is None else None
    if spans is None and (spm is not None or normalized is not None):
        text, offsets = normalized or spm.Normalize(raw, with_offsets=True)
        spans = normalized_piece_spans(pieces, text, offsets, len(raw))
    if spans is not None:
        return spans
    if spm is None:
        raise NeedsModel()
    made, starts, ends = proto_piece_spans(spm.encode(raw, out_type="proto"), raw)
    if made != list(pieces):
        raise PiecesDiffer(made)
    return starts, ends


class NeedsModel(ValueError):
    """The pieces do not spell the raw text (SentencePiece normalised it): only the model's offsets place them."""


class PiecesDiffer(ValueError):
    """The model's encoding of the raw text is not the given pieces."""

    def __init__(self, made):
        self.made = made
        super().__init__(f"the model makes {' '.join(made[:12])!r} of it")
