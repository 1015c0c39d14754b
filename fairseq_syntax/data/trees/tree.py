"""Dependency-tree utilities: validity and depths, the surface-token tree, attachment scores.

Conventions (docs/design.md, "Index conventions"): heads are 1-based word IDs with 0 = root; depth is
the number of arcs from a word to the root (root depth 0), as used by the
dependency-relative positions of Omote et al. (2019), Sec. 3.
"""
from __future__ import annotations

from typing import List, Sequence, Tuple

import numpy as np

from fairseq_syntax.data.trees.depths import jump_to_roots
from fairseq_syntax.errors import SyntaxDataError


def check_tree(heads: Sequence[int], where: str) -> List[int]:
    """Check that ``heads`` is a tree (one root, no cycle); return depths (depths.py).

    ``heads[i]`` is the 1-based head of word i+1 (0 = root). Raises
    :class:`SyntaxDataError` naming ``where`` and the offending words.
    """
    n = len(heads)
    if heads.count(0) != 1:
        roots = [i + 1 for i, h in enumerate(heads) if h == 0]
        if not roots:
            raise SyntaxDataError(where, "no root: no word has HEAD 0")
        raise SyntaxDataError(where, f"{len(roots)} roots (words {roots}); a sentence must be one tree")
    if n and (min(heads) < 0 or max(heads) > n):
        i, h = next((i, h) for i, h in enumerate(heads) if h < 0 or h > n)
        raise SyntaxDataError(where, f"HEAD {h} of word {i + 1} is out of range 0..{n}")
    h = np.asarray(heads, dtype=np.int64)
    depth, top = jump_to_roots(np.where(h > 0, h - 1, np.arange(n)), (h > 0).astype(np.int64))
    off_tree = h[top] != 0
    if off_tree.any():
        _raise_cycle(heads, int(np.flatnonzero(off_tree)[0]) + 1, where)
    return depth.tolist()


def _raise_cycle(heads, start, where):
    seen = []
    w = start
    while w not in seen:
        seen.append(w)
        w = heads[w - 1]
    cyc = seen[seen.index(w):]
    if len(cyc) == 1:
        raise SyntaxDataError(where, f"word {cyc[0]} is its own head")
    raise SyntaxDataError(where, f"cycle through words {sorted(cyc)}")


def word_depths(heads: Sequence[int]) -> List[int]:
    """Depth of each word (root = 0), for a valid tree."""
    return check_tree(heads, "<tree>")


def token_tree(
    heads: Sequence[int], labels: Sequence[str], token_of_word: Sequence[int], depths: Sequence[int] = None
) -> Tuple[List[int], List[str]]:
    """Collapse a word tree onto surface tokens (multiword tokens as one node).

    A multiword token such as German ``zum`` = ``zu dem`` becomes one node. Its
    representative is the word of the span nearest the root (smallest depth,
    first on ties); the node's head is the token holding that word's head and
    its label is that word's label. Words outside pointing into the span point
    to the node. Because the representative's head is strictly shallower than
    every word of the span, the result is again a tree (no cycle can appear).

    Returns (token heads, 1-based with 0 = root; token labels).
    """
    if depths is None:
        depths = word_depths(heads)
    n_tok = token_of_word[-1] + 1 if len(token_of_word) else 0
    rep = [-1] * n_tok
    for w, t in enumerate(token_of_word):
        r = rep[t]
        if r < 0 or depths[w] < depths[r]:
            rep[t] = w
    t_heads = []
    t_labels = []
    for t in range(n_tok):
        w = rep[t]
        if w < 0:
            raise ValueError(f"token {t + 1} covers no word")
        h = heads[w]
        t_heads.append(0 if h == 0 else token_of_word[h - 1] + 1)
        t_labels.append(labels[w])
    return t_heads, t_labels


def unlabeled_attachment(gold_heads: Sequence[Sequence[int]], pred_heads: Sequence[Sequence[int]]) -> Tuple[int, int]:
    """(correct heads, words) over sentences; every word counts, punctuation too.

    Raises ValueError if a sentence's word counts differ (the trees must be
    over the same words).
    """
    correct = total = 0
    for k, (g, p) in enumerate(zip(gold_heads, pred_heads)):
        if len(g) != len(p):
            raise ValueError(f"sentence {k}: {len(g)} gold words but {len(p)} predicted")
        correct += sum(a == b for a, b in zip(g, p))
        total += len(g)
    if len(gold_heads) != len(pred_heads):
        raise ValueError(f"{len(gold_heads)} gold sentences but {len(pred_heads)} predicted")
    return correct, total


def unit_tree(sent, units: str) -> Tuple[List[str], List[int], List[str]]:
    """(forms, heads, labels) of a :class:`~fairseq_syntax.data.trees.conllu.Sentence` over its text units.

    ``words``: the word tree as parsed. ``surface``: one node per surface
    token, multiword tokens collapsed by :func:`token_tree`.
    """
    forms = sent.forms(units)
    if units == "surface" and sent.has_multiword_tokens():
        heads, labels = token_tree(sent.heads, sent.labels, sent.token_of_word, word_depths(sent.heads))
        return forms, heads, labels
    return forms, sent.heads, sent.labels
