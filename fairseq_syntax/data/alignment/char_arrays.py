"""A block's text as arrays of code points, for the vectorised SentencePiece alignment (piece_align.py): the
narrowest array that holds a text's characters, the lengths of its space-separated items (``\u2581`` not
counted), and runs of consecutive positions. No per-character Python loop: each is a few numpy calls."""
from __future__ import annotations

import numpy as np

from fairseq_syntax.data.alignment.piece_spans import MARK


def _lengths(text: str):
    """(lengths of the space-separated items of ``text``'s lines, without ``▁``; items per line; the text's code
    points), or None when a line is empty or not single-spaced."""
    c = _codes(text)
    ends = np.flatnonzero((c == 32) | (c == 10))
    lengths = np.diff(ends, prepend=-1) - 1
    if not len(ends) or lengths.min() < 1:  # an empty item: two separators in a row, or one first
        return None
    marks = text.count(MARK)
    if marks:  # ▁ does not count: each one taken from the item it is in (SentencePiece's: an item's first)
        first = c[ends - lengths] == ord(MARK)  # each item's first character (every item has one)
        if int(first.sum()) == marks:
            lengths -= first
        else:
            lengths -= np.bincount(np.searchsorted(ends, np.flatnonzero(c == ord(MARK))), minlength=len(ends))
    newline = c[ends] == 10
    per_line = np.diff(np.flatnonzero(newline), prepend=-1)
    return lengths, per_line, c


def _runs(start: np.ndarray, size: np.ndarray) -> np.ndarray:
    """The positions start[i], start[i] + 1, ... (size[i] of them) of every i, in a row."""
    return np.repeat(start - (np.cumsum(size) - size), size) + np.arange(int(size.sum()))


def _codes(text: str) -> np.ndarray:
    """A code point each, in the narrowest array that holds them: a byte each for ASCII, two bytes where every
    character is in the Basic Multilingual Plane (UTF-16 then has no surrogates: Japanese, most scripts), else
    four (the array is compared and searched character by character: narrower is faster)."""
    if text.isascii():
        return np.frombuffer(text.encode("ascii"), dtype=np.uint8)
    utf16 = text.encode("utf-16-le")
    if len(utf16) == 2 * len(text):
        return np.frombuffer(utf16, dtype=np.uint16)
    return np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32)
