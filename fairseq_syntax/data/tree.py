"""Dependency-tree utilities: validity, depths, and the surface-token tree.

Conventions (docs/design.md, "Index conventions"): heads are 1-based word IDs with 0 = root; depth is
the number of arcs from a word to the root (root depth 0), as used by the
dependency-relative positions of Omote et al. (2019), Sec. 3.
"""
from __future__ import annotations

from typing import List, Sequence, Tuple

import numpy as np

from fairseq_syntax.errors import SyntaxDataError


def check_tree(heads: Sequence[int], where: str) -> List[int]:
    """Check that ``heads`` is a tree (one root, no cycle); return depths.

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
    depth = [-1] * (n + 1)  # depth[w] for 1-based w; depth[0] (the virtual root) = -1
    for start in range(1, n + 1):
        if depth[start] >= 0:
            continue
        path = []
        w = start
        while w and depth[w] < 0:
            path.append(w)
            if len(path) > n:
                _raise_cycle(heads, start, where)
            w = heads[w - 1]
        d = depth[w] if w else -1
        for node in reversed(path):
            d += 1
            depth[node] = d
    return depth[1:]


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


_NEG = -1e9  # an arc the scores rule out (e.g. future-masked attention)
_NEVER = -1e18  # an arc no tree may use (self-loops, arcs into the root)


def _find_cycle(heads):
    n = len(heads)
    color = [0] * n  # 0 new, 1 on the current path, 2 done
    for start in range(1, n):
        path = []
        v = start
        while v > 0 and color[v] == 0:
            color[v] = 1
            path.append(v)
            v = heads[v]
        if v > 0 and color[v] == 1:
            return path[path.index(v):]
        for u in path:
            color[u] = 2
    return None


def _chu_liu_edmonds(s):
    """Maximum spanning arborescence rooted at node 0 of a dense score matrix s[dep, head]."""
    n = len(s)
    heads = s.argmax(axis=1)
    heads[0] = -1
    cycle = _find_cycle(heads)
    if cycle is None:
        return heads
    in_cycle = set(cycle)
    rest = [v for v in range(n) if v not in in_cycle]  # keeps the root first
    idx = {v: k for k, v in enumerate(rest)}
    c = len(rest)
    cyc = np.array(cycle)
    kept = s[cyc, heads[cyc]]
    sub = np.full((c + 1, c + 1), _NEVER)
    enter, leave = {}, {}
    for h in rest:  # arcs into the contracted cycle: break the cycle where it costs least
        gain = s[cyc, h] - kept
        k = int(gain.argmax())
        sub[c, idx[h]] = gain[k] + kept.sum()
        enter[h] = cycle[k]
    for d in rest[1:]:  # arcs out of the cycle, and arcs among the other nodes
        k = int(s[d, cyc].argmax())
        sub[idx[d], c] = s[d, cycle[k]]
        leave[d] = cycle[k]
        for h in rest:
            sub[idx[d], idx[h]] = s[d, h]
    np.fill_diagonal(sub, _NEVER)
    sub[0] = _NEVER
    sub_heads = _chu_liu_edmonds(sub)
    out = heads.copy()
    for d in rest[1:]:
        hd = sub_heads[idx[d]]
        out[d] = leave[d] if hd == c else rest[hd]
    h_cycle = rest[sub_heads[c]]
    out[enter[h_cycle]] = h_cycle
    return out


def max_spanning_tree(scores: np.ndarray) -> List[int]:
    """Highest-scoring dependency tree with exactly one root (Chu-Liu-Edmonds).

    ``scores[w, h]`` (shape (n+1, n+1), index 0 = the root) is the score of h
    being the head of word w (rows and columns 1..n are words; column 0 is
    "w is the root"). Non-finite scores are treated as ruled out. Returns the
    1-based heads of words 1..n (0 = root).
    """
    s = np.where(np.isfinite(scores), scores, _NEG).astype(np.float64)
    np.fill_diagonal(s, _NEVER)
    s[0] = _NEVER
    n = len(s) - 1
    if n == 1:
        return [0]
    best, best_score = None, -np.inf
    first = _chu_liu_edmonds(s.copy())
    roots = [w for w in range(1, n + 1) if first[w] == 0]
    candidates = roots if len(roots) == 1 else range(1, n + 1)
    for r in candidates:  # one root: try each word as the root's only dependent
        t = s.copy()
        t[1:, 0] = _NEVER
        t[r, 0] = s[r, 0]
        heads = first if len(roots) == 1 else _chu_liu_edmonds(t)
        total = sum(s[w, heads[w]] for w in range(1, n + 1))
        if total > best_score:
            best, best_score = heads, total
    return [int(h) for h in best[1:]]


def unit_tree(sent, units: str) -> Tuple[List[str], List[int], List[str]]:
    """(forms, heads, labels) of a :class:`~fairseq_syntax.data.conllu.Sentence` over its text units.

    ``words``: the word tree as parsed. ``surface``: one node per surface
    token, multiword tokens collapsed by :func:`token_tree`.
    """
    forms = sent.forms(units)
    if units == "surface" and sent.has_multiword_tokens():
        heads, labels = token_tree(sent.heads, sent.labels, sent.token_of_word, word_depths(sent.heads))
        return forms, heads, labels
    return forms, sent.heads, sent.labels
