"""Align a word-level dependency tree to the BPE tokens fairseq binarizes.

For every subword token we store (docs/design.md, "Index conventions"):

* ``word``: the 1-based index of the tree node (word) the subword belongs to;
* ``head``: the 1-based index of that node's head node (0 = root);
* ``label``: that node's dependency label.

From these three sequences every subword parent strategy (``chain``,
``middle``, ``first``; see :mod:`fairseq_syntax.data.alignment.parent_strategies`) and
every depth is derived at loading time, so one preprocessing run serves all
models.

The nodes are either the surface tokens (multiword tokens such as ``zum``
collapsed to one node, see :func:`fairseq_syntax.data.trees.tree.token_tree`) or
the syntactic words (``zu dem``), whichever the BPE'd text was made from;
``units="auto"`` picks the one whose forms the subwords re-join to and
raises an error if neither matches.
"""
from __future__ import annotations

from dataclasses import dataclass
from itertools import accumulate
from typing import List, Optional, Tuple

import numpy as np

from fairseq_syntax.data.trees.conllu import Sentence
from fairseq_syntax.data.trees.conllu_blocks import OTHER_WHITESPACE, ColumnBlock, read_blocks
from fairseq_syntax.data.alignment.syntax_io import AlignedCorpus
from fairseq_syntax.data.trees.tree import token_tree, unit_tree
from fairseq_syntax.errors import SyntaxDataError
from fairseq_syntax.text_reading import open_text

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


@dataclass
class AlignedBlock:
    """Per-subword (word, head, label) of consecutive sentences, flat: sentence k's subwords are the
    ``sizes[k]`` entries after those of the sentences before it; ``label`` indexes ``label_names``.
    ``first_word``: the 0-based index of the first parser word of each subword's unit (a unit is a word, a
    multiword token, or the words that share a SentencePiece piece), which the aligned-tree view names units by."""

    word: np.ndarray
    head: np.ndarray
    label: np.ndarray
    label_names: List[str]
    sizes: np.ndarray
    first_word: Optional[np.ndarray] = None

    def __len__(self) -> int:
        return len(self.sizes)

    def sentences(self):
        """(word, head, label) lists per sentence, as :func:`align_sentence` returns them."""
        word, head = self.word.tolist(), self.head.tolist()
        names = self.label_names
        label = [names[i] for i in self.label.tolist()]
        a = 0
        for n in self.sizes.tolist():
            yield word[a:a + n], head[a:a + n], label[a:a + n]
            a += n

    @classmethod
    def from_sentences(cls, aligned, first_words=None) -> "AlignedBlock":
        """From (word, head, label) per sentence (:func:`align_sentence`), and each sentence's first words."""
        names, labels = _local_ids([x for _, _, label in aligned for x in label])
        n = len(labels)
        first = None if first_words is None else np.fromiter((f for fw in first_words for f in fw), np.int32, n)
        return cls(np.fromiter((w for word, _, _ in aligned for w in word), np.int32, n),
                   np.fromiter((h for _, head, _ in aligned for h in head), np.int32, n),
                   labels, names, np.array([len(word) for word, _, _ in aligned], dtype=np.int64), first)


def first_words_of(sent: Sentence, word: List[int], units: str) -> List[int]:
    """The 0-based first parser word of each subword's unit (``word``: 1-based units, as aligned): the unit
    itself where units are words, a multiword token's first word where they are surface tokens."""
    if units == "words" or not sent.has_multiword_tokens():
        return [w - 1 for w in word]
    first = {}
    for k, t in enumerate(sent.token_of_word):
        first.setdefault(t, k)
    return [first[w - 1] for w in word]


def _local_ids(labels: List[str]):
    """(names in order of first appearance, int32 index of each label into them)."""
    names = list(dict.fromkeys(labels))
    index = dict(zip(names, range(len(names))))
    return names, np.fromiter(map(index.__getitem__, labels), np.int32, len(labels))


def iter_aligned_blocks(conllu_path: str, bpe_path: str, units: str = "auto", marker: str = "@@",
                        progress: bool = True, block_chars: int = 1 << 20, total: int = None):
    """Yield :class:`AlignedBlock` s covering every sentence of a CoNLL-U file in order, aligned to the lines
    of its BPE'd text (streaming: memory does not grow with the corpus). The two files must hold the same
    number of sentences, in the same order.

    Blocks in the plain shape (:mod:`fairseq_syntax.data.trees.conllu_blocks`, canonical BPE lines) are aligned
    with array operations; any other block goes sentence by sentence through :func:`align_sentence`, so the
    output and the errors (naming file and line) are the same either way. ``total`` (the number of sentences,
    if known) gives the progress bar its time left."""
    from itertools import chain, islice

    from tqdm import tqdm


    if units not in UNITS:
        raise ValueError(f"units must be one of {UNITS}, not {units!r}")
    lineno = 0  # BPE lines consumed
    with open_text(bpe_path) as bpe, tqdm(desc=f"align {bpe_path}", unit="sent", total=total,
                                                       disable=not progress, mininterval=1.0) as bar:
        for block in read_blocks(conllu_path, block_chars):
            if isinstance(block, ColumnBlock):
                lines = list(islice(bpe, len(block)))
                out = _align_columns(block, lines, units, marker) if len(lines) == len(block) else None
                if out is None:
                    out, lineno = _align_sentences(block.read(), chain(lines, bpe), lineno, conllu_path, bpe_path,
                                                   units, marker)
                else:
                    lineno += len(lines)
            else:
                out, lineno = _align_sentences(block.read(), bpe, lineno, conllu_path, bpe_path, units, marker)
            bar.update(len(out))
            yield out
        if bpe.readline():
            raise SyntaxDataError(
                bpe_path, f"line count mismatch: {conllu_path} has {lineno} sentences but this file has more "
                f"lines (line {lineno + 1} has no parse)"
            )


def _align_sentences(sents, bpe_lines, lineno, conllu_path, bpe_path, units, marker):
    """Align sentence by sentence, one BPE line each; returns (AlignedBlock, BPE lines consumed so far)."""
    out, firsts = [], []
    for sent in sents:
        line = next(bpe_lines, None)
        if line is None:
            raise SyntaxDataError(
                conllu_path, f"line count mismatch: {bpe_path} has {lineno} lines but this file has more sentences "
                f"(the sentence at line {sent.line} has no text line)"
            )
        lineno += 1
        aligned = align_sentence(sent, line, f"{bpe_path}:{lineno}", units, marker)
        out.append(aligned)
        firsts.append(first_words_of(sent, aligned[0], _units_of(sent, line, units, marker)))
    return AlignedBlock.from_sentences(out, firsts), lineno


def _units_of(sent: Sentence, line: str, units: str, marker: str) -> str:
    """The units a BPE line was aligned to (``auto`` resolved as :func:`align_sentence` resolves it)."""
    if units != "auto":
        return units
    return "surface" if split_subwords(line, marker)[1] == sent.tokens else "words"


def _canonical(text: str, marker: str) -> bool:
    """Whether every line is its subwords joined by single spaces (what ``line.split()`` gives back) with no
    subword that is the bare marker: then re-joining is one replace over the whole text."""
    if ("  " in text or " \n" in text or "\n " in text or "\n\n" in text or text[:1] in (" ", "\n")
            or any(f"{a}{marker}{b}" in text for a in " \n" for b in " \n")
            or text.startswith(marker + " ") or text.startswith(marker + "\n")):
        return False

    return text.replace("\n", "").isprintable() or OTHER_WHITESPACE.search(text) is None



def _align_columns(block, lines: List[str], units: str, marker: str):
    """:func:`align_sentence` for every sentence of a ColumnBlock at once, or None when a line is not
    canonical or does not re-join to its sentence (the caller then goes sentence by sentence)."""

    if not len(block):
        empty = np.zeros(0, np.int32)
        return AlignedBlock(empty, empty, empty, [], np.zeros(0, np.int64), empty)
    text = "".join(lines)
    if not text.endswith("\n"):  # the file's last line
        text += "\n"
    if not _canonical(text, marker):
        return None
    starts = block.starts.tolist()
    joined_text = text.replace(marker + " ", "")
    expected = block.forms
    surface = []
    if block.multiword and units != "words":
        joined = joined_text.split("\n")
        exp_lines = expected.split("\n")
        for k, (tokens, _) in sorted(block.multiword.items()):
            line = " ".join(tokens)
            if units == "surface" or joined[k] == line:
                exp_lines[k] = line
                surface.append(k)
        expected = "\n".join(exp_lines)
    if expected != joined_text:
        return None
    heads, labels, names = block.heads, block.labels, block.label_names
    sizes = np.diff(block.starts)
    if surface:  # the units of these sentences are their surface tokens: collapse their trees
        index = {x: i for i, x in enumerate(names)}
        head_parts, label_parts, prev = [], [], 0
        for k in surface:
            a, b = starts[k], starts[k + 1]
            tokens, token_of_word = block.multiword[k]
            th, tl = token_tree(heads[a:b].tolist(), [names[i] for i in labels[a:b].tolist()], token_of_word,
                                block.depths[a:b].tolist())
            head_parts += [heads[prev:a], np.array(th, dtype=np.int32)]
            label_parts += [labels[prev:a], np.array([index.setdefault(x, len(index)) for x in tl], np.int32)]
            sizes[k] = len(tokens)
            prev = b
        heads = np.concatenate(head_parts + [heads[prev:]])
        labels = np.concatenate(label_parts + [labels[prev:]])
        names = list(index)
    unit_starts = np.zeros(len(sizes) + 1, dtype=np.int64)
    np.cumsum(sizes, out=unit_starts[1:])
    raw = np.frombuffer(text.encode("utf-8"), dtype=np.uint8)
    sep = np.flatnonzero((raw == 32) | (raw == 10))  # the end of every subword
    newline = raw[sep] == 10
    continues = ~newline
    mb = marker.encode("utf-8")
    for j, byte in enumerate(mb):
        at = sep - len(mb) + j
        continues &= (at >= 0) & (raw[np.maximum(at, 0)] == byte)
    unit = np.zeros(len(sep), dtype=np.int64)
    np.cumsum(~continues[:-1], out=unit[1:])
    sentence = np.zeros(len(sep), dtype=np.int64)
    np.cumsum(newline[:-1], out=sentence[1:])
    if unit[-1] + 1 != unit_starts[-1]:
        return None
    counts = np.diff(np.flatnonzero(newline), prepend=-1)
    local = (unit - unit_starts[sentence]).astype(np.int32)
    first_word = local.copy()
    if surface:  # a multiword token is named by its first word
        sub_starts = np.zeros(len(counts) + 1, dtype=np.int64)
        np.cumsum(counts, out=sub_starts[1:])
        for k in surface:
            token_of_word = block.multiword[k][1]
            first = np.searchsorted(np.asarray(token_of_word), np.arange(token_of_word[-1] + 1))
            a, b = sub_starts[k], sub_starts[k + 1]
            first_word[a:b] = first[local[a:b]]
    return AlignedBlock(local + 1, heads[unit].astype(np.int32), labels[unit], names, counts.astype(np.int64),
                        first_word)


def iter_aligned(conllu_path: str, bpe_path: str, units: str = "auto", marker: str = "@@", progress: bool = True):
    """Yield (word, head, label) per sentence (see :func:`iter_aligned_blocks`)."""
    for block in iter_aligned_blocks(conllu_path, bpe_path, units, marker, progress):
        yield from block.sentences()


def align_corpus(conllu_path: str, bpe_path: str, units: str = "auto", marker: str = "@@", progress: bool = True):
    """Align every sentence of a CoNLL-U file to the lines of its BPE'd text.

    Returns an :class:`~fairseq_syntax.data.alignment.syntax_io.AlignedCorpus` (in memory; prepare streams with
    :func:`iter_aligned_blocks` instead). The two files must hold the same number of sentences, in the same
    order.
    """

    corpus = AlignedCorpus()
    for block in iter_aligned_blocks(conllu_path, bpe_path, units, marker, progress):
        corpus.add_block(block)
    return corpus
