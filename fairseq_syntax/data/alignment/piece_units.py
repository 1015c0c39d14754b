"""The rule that makes SentencePiece pieces and a parser's tokens one tree (docs/design.md, "SentencePiece units"),
for many sentences at once, from the character spans of both in their raw sentences.

A piece belongs to the token that holds its first non-space character (a piece that is only ``▁`` goes with the
next one); tokens that share a piece, and a token no piece belongs to, become one *unit* with their neighbour; a
unit's head is the head of its member nearest the root (the first on ties: the member whose own head lies outside
the unit), its label that member's, as multiword tokens are collapsed
(:func:`fairseq_syntax.data.trees.tree.token_tree`). Array operations only, no loop over sentences or characters;
the spans come from :mod:`.piece_spans` or, for a whole block, from lengths (:mod:`.piece_align`).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import List

import numpy as np

from fairseq_syntax.data.alignment.subword_align import AlignedBlock


@dataclass
class TreeArrays:
    """The trees of consecutive sentences over their words, flat (sentence k's words follow the words of the
    sentences before it): ``heads`` 1-based within the sentence (0 = root), ``depths`` arcs to the root,
    ``labels`` ids into ``label_names``; ``surface`` the surface tokens, a line per sentence joined by single
    spaces, ``token_sizes`` the tokens per sentence and ``token_of_word`` each word's 0-based token within its
    sentence (a multiword token covers several words)."""

    word_sizes: np.ndarray
    heads: np.ndarray
    depths: np.ndarray
    labels: np.ndarray
    label_names: List[str]
    surface: str
    token_sizes: np.ndarray
    token_of_word: np.ndarray

    def tokens(self, k: int) -> List[str]:
        """Sentence k's surface tokens."""
        return self.lines()[k].split(" ")

    def lines(self) -> List[str]:
        if not hasattr(self, "_lines"):
            self._lines = self.surface.split("\n")
        return self._lines


def units_from_spans(trees: TreeArrays, token_start, token_end, piece_sizes, piece_start, piece_end) -> AlignedBlock:
    """Per piece: unit, head unit, label and first word (the rule of the module docstring) for many sentences.

    ``token_start`` / ``token_end``: each surface token's characters ``[start, end)``, ``piece_start`` the first
    non-space character of each piece (a piece that is only ``▁``: the next piece's), ``piece_end`` the end of
    its characters; all as keys that order the block (a sentence's offsets plus a base past every key of the
    sentences before it), so no span reaches into another sentence. ``piece_sizes``: pieces per sentence (each
    sentence has at least one)."""
    n = len(trees.word_sizes)
    tok_first = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.asarray(trees.token_sizes, dtype=np.int64), out=tok_first[1:])
    piece_sent = np.repeat(np.arange(n), piece_sizes)
    # a piece belongs to the token holding its first character (in a gap: the next token; after the last: the last)
    token_of_piece = np.minimum(_rank(token_end, piece_start), tok_first[1:][piece_sent] - 1)
    unit_of_token = _token_units(tok_first, token_start, token_end, piece_start, piece_end, token_of_piece)
    unit_of_piece = unit_of_token[token_of_piece]
    local, head, label, first_word = _unit_trees(trees, tok_first, unit_of_token)
    return AlignedBlock((local[unit_of_piece] + 1).astype(np.int32), head[unit_of_piece].astype(np.int32),
                        label[unit_of_piece].astype(np.int32), list(trees.label_names),
                        np.asarray(piece_sizes, dtype=np.int64), first_word[unit_of_piece].astype(np.int32))


def _rank(keys: np.ndarray, queries: np.ndarray) -> np.ndarray:
    """``np.searchsorted(keys, queries, "right")`` (how many keys are at most each query) for ascending keys and
    queries of at least 0: by counting the keys at every value where the values are few against the keys and
    queries (a block's keys are about as many as its characters), else by binary search."""
    if len(keys) and len(queries):
        top = max(int(keys[-1]), int(queries.max())) + 1
        if top <= 2 * (len(keys) + len(queries)):
            return np.cumsum(np.bincount(keys, minlength=top))[queries]
    return np.searchsorted(keys, queries, "right")


def _token_units(tok_first, token_start, token_end, piece_start, piece_end, token_of_piece) -> np.ndarray:
    """The block-wide unit of each token: token t joins t - 1's unit when the piece holding t - 1's last character
    reaches into t; a unit no piece belongs to then joins the unit before it (a sentence's first, the one after)."""
    starts_sentence = np.zeros(len(token_start), dtype=bool)
    starts_sentence[tok_first[:-1][tok_first[1:] > tok_first[:-1]]] = True
    holder = np.maximum(_rank(piece_start, token_end - 1) - 1, 0)
    shared = np.zeros(len(token_start), dtype=bool)
    shared[1:] = piece_end[holder[:-1]] > token_start[1:]
    new_unit = starts_sentence | ~shared
    unit_of_token = np.cumsum(new_unit) - 1
    for _ in range(len(token_start)):  # rare (no piece starts in or reaches the token): a few rounds at most
        units = int(unit_of_token[-1]) + 1 if len(unit_of_token) else 0
        empty = np.flatnonzero(np.bincount(unit_of_token[token_of_piece], minlength=units) == 0)
        if not len(empty):
            break
        first_token = np.flatnonzero(new_unit)
        for u in empty.tolist():
            t = first_token[u]
            if not starts_sentence[t]:
                new_unit[t] = False
            elif u + 1 < len(first_token) and not starts_sentence[first_token[u + 1]]:
                new_unit[first_token[u + 1]] = False
        unit_of_token = np.cumsum(new_unit) - 1
    return unit_of_token


def _unit_trees(trees: TreeArrays, tok_first, unit_of_token):
    """Per block-wide unit: its index in its sentence, its head unit (1-based, 0 = root) and label, which are
    those of its member word nearest the root (the first on ties), and its first word (0-based)."""
    n = len(trees.word_sizes)
    word_first = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(trees.word_sizes, out=word_first[1:])
    word_sent = np.repeat(np.arange(n), trees.word_sizes)
    unit_of_word = unit_of_token[tok_first[:-1][word_sent] + trees.token_of_word]
    # a unit's words are contiguous: its first word, and its member nearest the root (the least depth, then
    # position, as one key per word)
    first_words = np.flatnonzero(np.r_[True, unit_of_word[1:] != unit_of_word[:-1]]) if len(unit_of_word) \
        else np.zeros(0, np.int64)
    stride = len(unit_of_word) + 1
    key = trees.depths.astype(np.int64) * stride + np.arange(len(unit_of_word))
    rep = np.minimum.reduceat(key, first_words) % stride if len(first_words) else first_words
    unit_sent = word_sent[rep]
    unit_base = unit_of_word[word_first[:-1]] if n else np.zeros(0, np.int64)  # each sentence's first unit
    rep_head = trees.heads[rep].astype(np.int64)
    head_word = word_first[:-1][unit_sent] + np.maximum(rep_head, 1) - 1
    head = np.where(rep_head > 0, unit_of_word[head_word] - unit_base[unit_sent] + 1, 0)
    first_word = first_words - word_first[:-1][word_sent[first_words]]
    return np.arange(len(rep)) - unit_base[unit_sent], head, trees.labels[rep], first_word
