"""Subword parent strategies and depths, from (word, head) per subword.

Input for one sentence of n subwords (the aligned syntax data, see
:mod:`fairseq_syntax.data.subword_align`): ``word[i]`` the 1-based node of
subword i, ``head[i]`` that node's head node (0 = root). Words occupy
contiguous subword spans in order. Output positions are 0-based subword
positions within the sentence (no padding, no EOS); the collater shifts them
into model coordinates.

Strategies (DESIGN.md):

``chain``  Deguchi et al. (2019), Sec. 3.3 and Fig. 4: a non-final subword's
           parent is the next subword ("Fing@@ -> er@@ -> print"); a word's
           final subword points to the FIRST subword of the head word (as in
           the authors' released code); the root's final subword points to
           itself (the paper's self-loop for ROOT, Sec. 3.1).
``middle`` Bugliarello & Okazaki (2020), Sec. 3: every subword gets the mean
           position of its head word's subwords ("positions 6, 7, 8 -> 7";
           even splits give x.5); the root word's subwords get their own
           word's mean.
``first``  SISA baseline of Bugliarello & Okazaki (2020), Sec. 4: every
           subword points to the head word's first subword; the root word's
           subwords point to their own word's first subword (root = own head).

Depth (Omote et al. 2019, Sec. 3): word depth with root = 0; subwords
inherit their word's depth.
"""
from __future__ import annotations

import numpy as np

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
    """Tree depth of every subword (its word's depth, root = 0), int64."""
    word = np.asarray(word, dtype=np.int64)
    head = np.asarray(head, dtype=np.int64)
    first, _ = word_spans(word)
    wh = head[first]  # 1-based head of each word, 0 = root
    depth = np.zeros(len(first), dtype=np.int64)
    cur = wh.copy()
    for _ in range(len(first)):  # at most W steps up; stops at the root
        up = cur > 0
        if not up.any():
            break
        depth += up
        cur = np.where(up, wh[np.maximum(cur - 1, 0)], 0)
    else:
        if (cur > 0).any():
            raise ValueError("heads contain a cycle")
    return depth[word - 1]
