"""Align a word-level dependency tree to the BPE tokens fairseq binarizes.

For every subword token we store (DESIGN.md, "Subword level"):

* ``word``: the 1-based index of the tree node (word) the subword belongs to;
* ``head``: the 1-based index of that node's head node (0 = root);
* ``label``: that node's dependency label.

From these three sequences every subword parent strategy (``chain``,
``middle``, ``first``; see :mod:`fairseq_syntax.data.parent_strategies`) and
every depth is derived at loading time, so one preprocessing run serves all
models.

The nodes are either the surface tokens (multiword tokens such as ``zum``
collapsed to one node, see :func:`fairseq_syntax.data.tree.token_tree`) or
the syntactic words (``zu dem``), whichever the BPE'd text was made from;
``units="auto"`` picks the one whose forms the subwords re-join to and
raises an error if neither matches.
"""
from __future__ import annotations

from itertools import accumulate
from typing import List, Tuple

from fairseq_syntax.data.conllu import Sentence
from fairseq_syntax.data.tree import unit_tree
from fairseq_syntax.errors import SyntaxDataError

UNITS = ("auto", "surface", "words")


def split_subwords(line: str, marker: str = "@@") -> Tuple[List[str], List[str], List[int]]:
    """Split a BPE'd line into subwords; re-join them into units.

    Returns (subwords, units, 0-based unit index of each subword). A subword
    that ends with ``marker`` continues into the next one (subword-nmt's
    convention); a dangling marker on the last subword of a line never
    matches any word, so it surfaces as a re-join error.
    """
    subs = line.split()
    sep = marker + " "
    if marker in line and marker in subs:  # a bare marker token: join token by token
        return _split_subwords_slow(subs, marker)
    units = " ".join(subs).replace(sep, "").split()
    ends = [not x.endswith(marker) for x in subs]
    unit_of_sub = list(accumulate(ends, initial=0))
    unit_of_sub.pop()
    return subs, units, unit_of_sub


def _split_subwords_slow(subs, marker):
    """Token-by-token version, for lines where the marker stands alone."""
    units: List[str] = []
    unit_of_sub: List[int] = []
    cur = []
    mlen = len(marker)
    for x in subs:
        unit_of_sub.append(len(units))
        if x.endswith(marker) and len(x) > mlen:
            cur.append(x[:-mlen])
        else:
            cur.append(x)
            units.append("".join(cur))
            cur = []
    if cur:
        units.append("".join(cur) + marker)  # dangling continuation: never matches
    return subs, units, unit_of_sub


def align_sentence(
    sent: Sentence, bpe_line: str, where: str, units: str = "auto", marker: str = "@@"
) -> Tuple[List[int], List[int], List[str]]:
    """Per-subword (node index, head node index, label) for one sentence.

    ``where`` names the BPE line (``file:line``) for error messages. Raises
    :class:`SyntaxDataError` when the subwords do not re-join to the
    sentence's tokens/words, showing the first differing position.
    """
    subs, joined, unit_of_sub = split_subwords(bpe_line, marker)
    if not subs:
        raise SyntaxDataError(where, f"empty line, but the parse (line {sent.line}) has {len(sent.words)} words")
    if units == "auto":
        if joined == sent.tokens:
            units = "surface"
        elif joined == sent.words:
            units = "words"
        else:
            _mismatch(where, sent, joined, sent.tokens if len(sent.tokens) != len(sent.words) else sent.words,
                      "surface tokens" if sent.has_multiword_tokens() else "words")
    if units not in ("surface", "words"):
        raise ValueError(f"units must be one of {UNITS}, not {units!r}")
    if joined != sent.forms(units):
        _mismatch(where, sent, joined, sent.forms(units), "surface tokens" if units == "surface" else "syntactic words")
    _, heads, labels = unit_tree(sent, units)
    word = [u + 1 for u in unit_of_sub]
    head = [heads[u] for u in unit_of_sub]
    label = [labels[u] for u in unit_of_sub]
    return word, head, label


def _mismatch(where, sent, joined, expected, what):
    k = 0
    while k < min(len(joined), len(expected)) and joined[k] == expected[k]:
        k += 1
    got = joined[k] if k < len(joined) else "<end of line>"
    exp = expected[k] if k < len(expected) else "<end of sentence>"
    raise SyntaxDataError(
        where,
        f"subwords do not re-join to the {what} of the parse (CoNLL-U line {sent.line}): "
        f"{len(joined)} re-joined units vs {len(expected)} {what}; first difference at "
        f"position {k + 1}: {got!r} vs {exp!r}",
    )


def iter_aligned(conllu_path: str, bpe_path: str, units: str = "auto", marker: str = "@@", progress: bool = True):
    """Yield (word, head, label) per sentence, aligning a CoNLL-U file to the lines of its BPE'd text as it
    reads them (streaming: memory does not grow with the corpus). The two files must hold the same number
    of sentences, in the same order."""
    from tqdm import tqdm

    from fairseq_syntax.data.conllu import read_conllu

    sents = read_conllu(conllu_path)
    with open(bpe_path, encoding="utf-8") as bpe:
        lineno = 0
        for lineno, line in enumerate(tqdm(bpe, desc=f"align {bpe_path}", unit="sent", disable=not progress,
                                           mininterval=1.0), 1):
            sent = next(sents, None)
            if sent is None:
                raise SyntaxDataError(
                    bpe_path, f"line count mismatch: {conllu_path} has {lineno - 1} sentences but this file has more "
                    f"lines (line {lineno} has no parse)"
                )
            yield align_sentence(sent, line, f"{bpe_path}:{lineno}", units, marker)
        extra = next(sents, None)
        if extra is not None:
            raise SyntaxDataError(
                conllu_path, f"line count mismatch: {bpe_path} has {lineno} lines but this file has more sentences "
                f"(the sentence at line {extra.line} has no text line)"
            )


def align_corpus(conllu_path: str, bpe_path: str, units: str = "auto", marker: str = "@@", progress: bool = True):
    """Align every sentence of a CoNLL-U file to the lines of its BPE'd text.

    Returns an :class:`~fairseq_syntax.data.syntax_io.AlignedCorpus` (in memory; prepare streams with
    :func:`iter_aligned` instead). The two files must hold the same number of sentences, in the same order.
    """
    from fairseq_syntax.data.syntax_io import AlignedCorpus

    corpus = AlignedCorpus()
    for aligned in iter_aligned(conllu_path, bpe_path, units, marker, progress):
        corpus.add(*aligned)
    return corpus
