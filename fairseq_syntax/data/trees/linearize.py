"""Linearised dependency trees: the parse targets of the C&H multi-task baseline.

Currey & Heafield (2019), as re-implemented by Bugliarello & Okazaki (2020,
Sec. "Baselines", +C&H): a plain transformer learns to translate a source
sentence and, from a tagged copy of it, to output the sentence's linearised
parse. The linearisation here is an in-order bracketing of the dependency
tree, one bracket per word, opened with the word's relation:

    The monkey eats a banana  (eats <- root; monkey <- nsubj; ...)
    -> (root (nsubj (det The ) monkey ) eats (obj (det a ) banana ) )

Each word appears once, inside its own bracket, after its left dependents
and before its right dependents; for projective trees the words keep their
order. Tokens are whitespace-separated: ``(label``, words, ``)``.
"""
from typing import List, Sequence

from fairseq_syntax.data.trees.tree import check_tree


def linearize_tree(words: Sequence[str], heads: Sequence[int], labels: Sequence[str], where: str = "") -> str:
    check_tree(list(heads), where)
    n = len(words)
    children: List[List[int]] = [[] for _ in range(n + 1)]
    for i, h in enumerate(heads, 1):
        children[h].append(i)
    out: List[str] = []
    stack = [("open", children[0][0])]
    while stack:  # iterative: no recursion limit on deep trees
        kind, v = stack.pop()
        if kind == "open":
            out.append("(" + (labels[v - 1] if labels[v - 1] not in ("", "_") else "dep"))
            left = [c for c in children[v] if c < v]
            right = [c for c in children[v] if c > v]
            stack.append(("close", v))
            stack.extend(("open", c) for c in reversed(right))
            stack.append(("word", v))
            stack.extend(("open", c) for c in reversed(left))
        elif kind == "word":
            out.append(words[v - 1])
        else:
            out.append(")")
    return " ".join(out)
