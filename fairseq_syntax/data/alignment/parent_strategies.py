"""Subword parent strategies and depths, from (word, head) per subword.

Input for one sentence of n subwords (:mod:`fairseq_syntax.data.alignment.subword_align`): ``word[i]`` the 1-based
node of subword i, ``head[i]`` that node's head node (0 = root); words occupy contiguous subword spans in order.
Output: 0-based subword positions within the sentence (no padding, no EOS), shifted by the collater.

Strategies (docs/design.md, "Index conventions"):

``chain``  Deguchi et al. (2019), Sec. 3.3 and Fig. 4: a non-final subword's parent is the next subword
           ("Fing@@ -> er@@ -> print"); a word's final subword points to the FIRST subword of the head word (as
           in the authors' released code); the root's final subword points to itself (the paper's self-loop for
           ROOT, Sec. 3.1).
``middle`` Bugliarello & Okazaki (2020), Sec. 3: every subword gets the mean position of its head word's subwords
           ("positions 6, 7, 8 -> 7"; even splits give x.5); the root word's subwords get their own word's mean.
``first``  SISA baseline of Bugliarello & Okazaki (2020), Sec. 4: every subword points to the head word's first
           subword; the root word's subwords point to their own word's first subword (root = own head).

Invariant of every strategy, which a mechanism that walks the tree from subword parents relies on:
``floor(parent)`` of a subword lies in its own word or in its head word (the root word: its own). Under
``middle`` and ``first`` every subword of a non-root word points into its head word; under ``chain`` only a
word's final subword does, the others into their own word. So, under any strategy, the head word of a word is
the word of its final subword's rounded-down parent. The collater shifts positions by whole numbers, so this
holds in batch coordinates too (with the collated ``words``).

Depth (Omote et al. 2019, Sec. 3): word depth with root = 0; subwords inherit their word's depth.
"""
from __future__ import annotations

import numpy as np

from fairseq_syntax.data.trees.depths import jump_to_roots

STRATEGIES = ("chain", "middle", "first")


def word_spans(word: np.ndarray):
    """First and last subword position of each word (arrays of length W)."""
    n = len(word)
    change = np.empty(n, dtype=bool)
    change[0] = True
    np.not_equal(word[1:], word[:-1], out=change[1:])
    first = np.flatnonzero(change)
    last = np.empty_like(first)
    last[:-1] = first[1:] - 1
    last[-1] = n - 1
    return first, last


def subword_parents(word: np.ndarray, head: np.ndarray, strategy: str) -> np.ndarray:
    """Parent position of every subword (int64; float64 for ``middle``)."""
    word = np.asarray(word, dtype=np.int64)
    head = np.asarray(head, dtype=np.int64)
    first, last = word_spans(word)
    own = word - 1  # 0-based word of each subword
    hw = np.where(head > 0, head - 1, own)  # 0-based head word (root: itself)
    if strategy == "chain":
        pos = np.arange(len(word), dtype=np.int64)
        is_last = np.zeros(len(word), dtype=bool)
        is_last[last] = True
        parent = pos + 1
        fin = is_last & (head > 0)
        parent[fin] = first[hw[fin]]
        root_fin = is_last & (head == 0)
        parent[root_fin] = pos[root_fin]
        return parent
    if strategy == "middle":
        mean = (first + last) / 2.0
        return mean[hw]
    if strategy == "first":
        return first[hw].astype(np.int64)
    raise ValueError(f"unknown parent strategy {strategy!r}; expected one of {STRATEGIES}")


def subword_depths(word: np.ndarray, head: np.ndarray) -> np.ndarray:
    """Tree depth of every subword (its word's depth, root = 0), int64; a ValueError if the heads have a cycle."""
    word = np.asarray(word, dtype=np.int64)
    return ConcatenatedTrees(word, head, [len(word)]).depths()


# ---------------------------------------------------------------------------------------------------------------
# Whole batches at once (the collater): the same strategies on many sentences concatenated
# ---------------------------------------------------------------------------------------------------------------
class CycleError(ValueError):
    """Heads with no path to a root; ``rows`` are the concatenated sentences (0-based) that have one."""

    def __init__(self, rows):
        self.rows = rows
        super().__init__("heads contain a cycle")


def concatenation_layout(lengths: np.ndarray):
    """(starts, row) of sentences of these lengths concatenated: each sentence's first position, and the
    sentence (row) of each position."""
    lengths = np.asarray(lengths, dtype=np.int64)
    starts = np.zeros(len(lengths), dtype=np.int64)
    np.cumsum(lengths[:-1], out=starts[1:])
    return starts, np.repeat(np.arange(len(lengths), dtype=np.int64), lengths)


class ConcatenatedTrees:
    """Word spans of many sentences concatenated into one array, for batch-wide parents and depths.

    ``word`` / ``head``: the per-subword arrays of every sentence (as in
    :func:`subword_parents`: 1-based word of each subword, that word's head,
    0 = root) concatenated; ``lengths``: subwords per sentence (0 allowed).
    Each sentence must be well formed (word indices run 1..W in order, heads
    in 0..W; the dataset checks that when it reads a sentence). Positions are
    global positions in the concatenation; one pass finds every word span
    across the sentence boundaries, with no loop over sentences.
    """

    def __init__(self, word: np.ndarray, head: np.ndarray, lengths: np.ndarray):
        self.word = word = np.asarray(word, dtype=np.int64)
        self.head = head = np.asarray(head, dtype=np.int64)
        lengths = np.asarray(lengths, dtype=np.int64)
        n = len(word)
        starts, self.row = concatenation_layout(lengths)  # row: sentence of each subword
        self.starts = starts
        is_first = np.empty(n, dtype=bool)
        if n:
            is_first[0] = True
            np.not_equal(word[1:], word[:-1], out=is_first[1:])
            is_first[starts[lengths > 0]] = True  # a sentence's first subword starts a word even if word[] repeats
        self.first = first = np.flatnonzero(is_first)  # global position of each (global) word's first subword
        self.last = last = np.empty_like(first)
        if len(first):
            last[:-1] = first[1:] - 1
            last[-1] = n - 1
        self.gword = np.cumsum(is_first) - 1  # global word of each subword
        # global word of each subword's head word (the root word: itself)
        self.ghead = np.where(head > 0, self.gword + (head - word), self.gword)
        self._is_last = None

    @property
    def is_last(self) -> np.ndarray:
        if self._is_last is None:
            self._is_last = np.zeros(len(self.word), dtype=bool)
            self._is_last[self.last] = True
        return self._is_last

    def parents(self, strategy: str) -> np.ndarray:
        """Global parent position of every subword (int64; float64 for ``middle``), as :func:`subword_parents`."""
        if strategy == "chain":
            parent = np.arange(1, len(self.word) + 1, dtype=np.int64)
            is_last = self.is_last
            fin = is_last & (self.head > 0)
            parent[fin] = self.first[self.ghead[fin]]
            root_fin = np.flatnonzero(is_last & (self.head == 0))
            parent[root_fin] = root_fin
            return parent
        if strategy == "middle":
            return ((self.first + self.last) / 2.0)[self.ghead]
        if strategy == "first":
            return self.first[self.ghead]
        raise ValueError(f"unknown parent strategy {strategy!r}; expected one of {STRATEGIES}")

    def depths(self) -> np.ndarray:
        """Tree depth of every subword (root = 0), int64, all words of all sentences at once (depths.py);
        raises :class:`CycleError` naming the sentences whose heads never reach a root."""
        is_root = self.head[self.first] == 0  # the global words whose head is the root
        dist, top = jump_to_roots(self.ghead[self.first], (~is_root).astype(np.int64))
        if not is_root[top].all():
            bad = np.flatnonzero(~is_root[top])
            raise CycleError(np.unique(self.row[self.first[bad]]))
        return dist[self.gword]
