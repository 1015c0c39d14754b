"""Tree controls: the parser's trees replaced by trees that carry less or no syntax, to ask whether a model's gain
is the tree's (docs/data.md, "Tree controls").

``random``       a uniformly random rooted tree over the sentence's words (a uniform Pruefer sequence, a uniform
                 root: each of the n^(n-1) rooted trees equally likely)
``left-chain``   each word headed by the word before it (the first word the root)
``right-chain``  each word headed by the word after it (the last word the root): the trivial tree nearest a
                 head-final language's
``noise:P``      each word but the root, in a random order, with probability P given another head, drawn uniformly
                 from the words outside its own subtree (so that the tree stays a tree); the root keeps its place

A label stays where its arc is (the word keeps its head); a new arc is labelled ``dep``, a new root ``root``. Each
sentence's draw is seeded by the control's seed and the sentence's place (split, side, index), so that workers and
shards make the same trees as one process.
"""
from __future__ import annotations

import heapq
import random
from dataclasses import dataclass
from typing import List, Sequence, Tuple

from fairseq_syntax.errors import OptionError

KINDS = ("random", "left-chain", "right-chain", "noise:P")


@dataclass(frozen=True)
class TreeControl:
    """One control: its kind (``random``, ``left-chain``, ``right-chain``, ``noise``), the noise probability and
    the seed."""

    kind: str
    p: float = 0.0
    seed: int = 1

    @classmethod
    def parse(cls, text: str, seed: int = 1) -> "TreeControl":
        """``random`` | ``left-chain`` | ``right-chain`` | ``noise:P`` (0 < P <= 1); an OptionError otherwise."""
        kind, _, p = text.partition(":")
        if kind in ("random", "left-chain", "right-chain") and not p:
            return cls(kind, 0.0, seed)
        if kind == "noise":
            try:
                value = float(p)
            except ValueError:
                value = -1.0
            if 0.0 < value <= 1.0:
                return cls("noise", value, seed)
            raise OptionError(f"--tree-control {text}: noise:P takes a probability 0 < P <= 1 (e.g. noise:0.3)")
        raise OptionError(f"--tree-control {text!r}: one of {', '.join(KINDS)}")

    @property
    def name(self) -> str:
        return f"noise:{self.p:g}" if self.kind == "noise" else self.kind

    def heads(self, heads: Sequence[int], where: str) -> List[int]:
        """The controlled heads (1-based, 0 = root) of a sentence whose parser's heads are ``heads``; ``where``
        names the sentence's place (split, side, index), which seeds its draw with the control's seed."""
        n = len(heads)
        if self.kind == "left-chain":
            return list(range(n))
        if self.kind == "right-chain":
            return [i + 2 for i in range(n - 1)] + [0] if n else []
        rng = random.Random(f"{self.seed}:{where}")
        if self.kind == "random":
            return random_tree(n, rng)
        return noisy_tree(heads, self.p, rng)

    def apply(self, heads: Sequence[int], labels: Sequence[str], where: str) -> Tuple[List[int], List[str]]:
        """(heads, labels) of the controlled tree: a label kept where its arc is, ``dep`` on a new arc, ``root``
        on a new root."""
        new = self.heads(heads, where)
        return new, [old_label if h == old else ("root" if h == 0 else "dep")
                     for h, old, old_label in zip(new, heads, labels)]


def random_tree(n: int, rng: random.Random) -> List[int]:
    """Heads of a uniformly random rooted tree over ``n`` words: the tree of a uniform Pruefer sequence, rooted at
    a uniform word."""
    if n <= 1:
        return [0] * n
    sequence = [rng.randrange(n) for _ in range(n - 2)]
    degree = [1] * n
    for v in sequence:
        degree[v] += 1
    leaves = [v for v in range(n) if degree[v] == 1]
    heapq.heapify(leaves)
    neighbours: List[List[int]] = [[] for _ in range(n)]
    for v in sequence:
        leaf = heapq.heappop(leaves)
        neighbours[leaf].append(v)
        neighbours[v].append(leaf)
        degree[v] -= 1
        if degree[v] == 1:
            heapq.heappush(leaves, v)
    a, b = heapq.heappop(leaves), heapq.heappop(leaves)
    neighbours[a].append(b)
    neighbours[b].append(a)
    root = rng.randrange(n)
    heads = [0] * n
    seen, stack = {root}, [root]
    while stack:
        v = stack.pop()
        for w in neighbours[v]:
            if w not in seen:
                seen.add(w)
                heads[w] = v + 1
                stack.append(w)
    return heads


def noisy_tree(heads: Sequence[int], p: float, rng: random.Random) -> List[int]:
    """``heads`` with each word but the root, in a random order, given with probability ``p`` another head drawn
    uniformly from the words outside its subtree (none there: it keeps its head)."""
    heads = list(heads)
    n = len(heads)
    order = list(range(n))
    rng.shuffle(order)
    for w in order:
        if heads[w] == 0 or rng.random() >= p:
            continue
        inside = _subtree(heads, w)
        candidates = [v for v in range(n) if v not in inside and v + 1 != heads[w]]
        if candidates:
            heads[w] = rng.choice(candidates) + 1
    return heads


def _subtree(heads: Sequence[int], w: int) -> set:
    children: List[List[int]] = [[] for _ in heads]
    for v, h in enumerate(heads):
        if h:
            children[h - 1].append(v)
    inside, stack = {w}, [w]
    while stack:
        for c in children[stack.pop()]:
            if c not in inside:
                inside.add(c)
                stack.append(c)
    return inside
