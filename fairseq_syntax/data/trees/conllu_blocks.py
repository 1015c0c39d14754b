"""CoNLL-U read in blocks of sentences as arrays, for align + binarize at corpus scale.

:func:`~fairseq_syntax.data.trees.conllu.read_conllu` builds one :class:`Sentence`
per sentence from ten Python strings per line and checks each tree word by
word; at millions of sentences that is most of the cost of aligning and
binarizing. Here a file is cut into blocks at empty lines (where the line
reader holds no sentence) and each block is read as one byte array: lines and
columns are found from the positions of newlines and tabs, IDs and HEADs are
parsed as digits, labels are told apart with one ``np.unique``, and the forms
are gathered into the text they must re-join to (one line per sentence).
No string is made per word except for sentences with multiword tokens.

The checks ``read_conllu`` makes (word IDs 1..n in order, integer HEADs in
range, one root, no cycle, multiword-token ranges) are made on the whole
block. The tree check follows every word's head pointer by doubling (after k
rounds each word points 2**k steps up, a root at itself, and knows the
distance it skipped): in a tree every word then points at its sentence's
root and the distance is its depth; a word on or above a cycle never does.

A block outside this plain shape (a malformed line, a failed check, a digit
outside ASCII, whitespace inside a form, a line of spaces) comes back as a
:class:`LineBlock`: its text, which ``read_conllu`` itself reads, raising the
error that names file and line, or reading whatever the array reader declined.
So a block always says what ``read_conllu`` says; tests compare the two on
random texts, valid and broken.
"""
from __future__ import annotations

import io
import re
from dataclasses import dataclass, field
from typing import Dict, Iterator, List, Tuple, Union

import numpy as np

from fairseq_syntax.data.trees.conllu import Sentence, normalize_form, read_conllu
from fairseq_syntax.data.trees.depths import jump_to_roots
from fairseq_syntax.text_reading import open_text

OTHER_WHITESPACE = re.compile(r"[^\S \n]")  # what str.split() splits at, but for space and newline


@dataclass
class ColumnBlock:
    """The sentences of one block as arrays over their words.

    ``starts[k]:starts[k + 1]`` are sentence k's words. ``heads`` are 1-based
    within the sentence (0 = root); ``depths`` count the arcs to the root;
    ``labels`` index ``label_names``. ``forms`` is the sentences' words, one
    line per sentence, joined by single spaces. ``multiword`` maps the index
    of each sentence with multiword tokens to its (tokens, token_of_word), as
    in :class:`Sentence`. ``text`` (with ``first_line``, ``first_sentence``
    and ``path``) lets a later step re-read the block for its messages.
    """

    forms: str
    heads: np.ndarray
    labels: np.ndarray
    label_names: List[str]
    starts: np.ndarray
    depths: np.ndarray
    multiword: Dict[int, Tuple[List[str], List[int]]]
    text: str = ""
    first_line: int = 1
    first_sentence: int = 0
    path: str = "<conllu>"

    def __len__(self) -> int:
        return len(self.starts) - 1

    def read(self) -> Iterator[Sentence]:
        """The block's sentences as ``read_conllu`` reads them."""
        return _read_text(self)


@dataclass
class LineBlock:
    """A block left to ``read_conllu``: its text, whose lines are numbered from ``first_line``. :meth:`read`
    yields its sentences (raising read_conllu's errors when it reaches them) and counts them."""

    text: str
    first_line: int
    first_sentence: int
    path: str
    count: int = field(default=-1)  # sentences, once read to the end

    def read(self) -> Iterator[Sentence]:
        count = 0
        for sent in _read_text(self):
            count += 1
            yield sent
        self.count = count


def _read_text(block) -> Iterator[Sentence]:
    """``read_conllu`` over a block's text, its lines numbered as in the file."""
    return read_conllu(io.StringIO(block.text, newline="\n"), block.path, block.first_line, block.first_sentence)


def read_blocks(path: str, block_chars: int = 1 << 20) -> Iterator[Union[ColumnBlock, LineBlock]]:
    """Yield the blocks of a CoNLL-U file in order, each about ``block_chars`` of text and ending at an
    empty line (the last one at the end of the file). A :class:`LineBlock` must be read to its end before
    the next block is asked for (the next block's sentence numbers follow from its count)."""
    first_line, first_sentence = 1, 0
    carry = ""
    with open_text(path) as fh:
        while True:
            chunk = fh.read(block_chars)
            if chunk:
                text = carry + chunk if carry else chunk
                cut = text.rfind("\n\n", max(0, len(carry) - 1))
                if cut < 0:  # no empty line in the new text: read on
                    carry = text
                    continue
                text, carry = text[: cut + 2], text[cut + 2:]
            elif carry:
                text, carry = carry, ""
            else:
                return
            block = columns_from_text(text, path, first_line, first_sentence)
            yield block
            count = block.count if isinstance(block, LineBlock) else len(block)
            if count < 0:
                raise RuntimeError(f"{path}: a LineBlock was not read to its end before the next block")
            first_line += text.count("\n")
            first_sentence += count


def columns_from_text(text: str, path: str = "<conllu>", first_line: int = 1, first_sentence: int = 0):
    """The :class:`ColumnBlock` of a piece of CoNLL-U that starts where ``read_conllu`` holds no sentence
    (the start of a file, or after an empty line) and ends at an empty line or at the end of the file; a
    :class:`LineBlock` when any line or check is outside the plain shape."""
    block = _plain_columns(text)
    if block is None:
        return LineBlock(text, first_line, first_sentence, path)
    block.text, block.first_line, block.first_sentence, block.path = text, first_line, first_sentence, path
    return block


def _plain_columns(text: str):
    """The :class:`ColumnBlock` of ``text`` read as bytes, or None where read_conllu must decide. Lines: empty,
    comments (``#``) or ten columns starting with an ASCII digit (a word, a range "a-b" or an empty node
    "a.b"); the paragraphs between empty lines that hold words are the sentences."""
    buf = text.encode("utf-8")
    if not buf or b"\0" in buf:
        return None
    a = np.frombuffer(buf, dtype=np.uint8)
    ends = np.flatnonzero(a == 10)
    if a[-1] != 10:  # the file's last line
        ends = np.append(ends, len(a))
    begins = np.zeros(len(ends), dtype=np.int64)
    begins[1:] = ends[:-1] + 1
    empty = ends == begins
    first = a[np.minimum(begins, len(a) - 1)]
    columned = ~empty & (first >= 48) & (first <= 57)  # read_conllu's word lines (ASCII digits here)
    if not (empty | columned | (~empty & (first == 35))).all():  # any other line: read_conllu decides
        return None
    tabs = np.flatnonzero(a == 9)
    line_begin, line_end = begins[columned], ends[columned]
    t0 = np.searchsorted(tabs, line_begin)
    if not np.array_equal(np.searchsorted(tabs, line_end) - t0, np.full(len(t0), 9)):
        return None
    wid, wid_ok = _digits(a, line_begin, tabs[t0])
    if wid is None:
        return None
    paragraph = np.cumsum(empty)[columned]  # empty lines before each line
    word = wid_ok  # the word lines among the columned ones
    n_words = int(word.sum())
    if not n_words:
        return None
    special = np.flatnonzero(~wid_ok)
    idents = [buf[b:e].decode("utf-8") for b, e in zip(line_begin[special].tolist(), tabs[t0[special]].tolist())]
    is_range = []
    for ident in idents:  # read_conllu: a range "a-b", an empty node "a.b"; digits outside ASCII: its int() decides
        if ident.isdigit() or ("-" not in ident and "." not in ident):
            return None
        is_range.append("-" in ident)
    # sentences: the paragraphs with words, in order
    para_w = paragraph[word]
    new = np.ones(n_words, dtype=bool)
    new[1:] = para_w[1:] != para_w[:-1]
    sentence = np.cumsum(new) - 1
    sizes = np.bincount(sentence)
    starts = np.zeros(len(sizes) + 1, dtype=np.int64)
    np.cumsum(sizes, out=starts[1:])
    if not np.array_equal(wid[word], np.arange(n_words) - starts[sentence] + 1):
        return None
    tw = t0[word]
    heads, heads_ok = _digits(a, tabs[tw + 5] + 1, tabs[tw + 6])
    if heads is None or not heads_ok.all():
        return None
    depths = forest_depths(heads, starts, sizes, sentence)
    if depths is None:
        return None
    forms = _joined_forms(a, tabs[tw] + 1, tabs[tw + 1], starts)
    if forms is None:
        return None
    labels, label_names = _labels(a, tabs[tw + 6] + 1, tabs[tw + 7])
    if labels is None:
        return None
    multiword = {}
    if any(is_range):
        rows = special[is_range]
        para_ids = para_w[new]
        k = np.minimum(np.searchsorted(para_ids, paragraph[rows]), len(para_ids) - 1)
        if not np.array_equal(para_ids[k], paragraph[rows]):  # a range in a paragraph without words
            return None
        position = (np.cumsum(word) - word)[rows] - starts[k]  # words before the range line, in its sentence
        form_begin, form_end = tabs[t0[rows]] + 1, tabs[t0[rows] + 1]
        by_sentence: Dict[int, list] = {}
        for k_, pos, ident, b, e in zip(k.tolist(), position.tolist(), [i for i, r in zip(idents, is_range) if r],
                                        form_begin.tolist(), form_end.tolist()):
            by_sentence.setdefault(k_, []).append((pos, ident, buf[b:e].decode("utf-8")))
        lines = forms.split("\n")
        for k_, rs in by_sentence.items():
            built = multiword_tokens(lines[k_].split(" "), rs)
            if built is None:
                return None
            multiword[k_] = built
    return ColumnBlock(forms, heads.astype(np.int32), labels, label_names, starts, depths.astype(np.int32),
                       multiword)


def _digits(a: np.ndarray, begin: np.ndarray, end: np.ndarray, widest: int = 12):
    """(value, ok) of each field a[begin:end]: ok where it is 1..``widest`` ASCII digits. (None, None) when a
    field is wider than ``widest`` (read_conllu then decides)."""
    width = end - begin
    value = np.zeros(len(width), dtype=np.int64)
    ok = width > 0
    most = int(width.max()) if len(width) else 0
    if most > widest:
        return None, None
    last = len(a) - 1
    for k in range(most):
        inside = k < width
        d = a[np.minimum(begin + k, last)].astype(np.int64) - 48
        ok &= ~inside | ((d >= 0) & (d <= 9))
        value = np.where(inside, value * 10 + d, value)
    return value, ok


def _joined_forms(a, begin, end, starts):
    """The forms joined by spaces, a newline after each sentence's last; None when a form holds whitespace
    (read_conllu replaces it)."""
    width = end - begin
    seg = width + 1  # the form and the tab after it
    offset = np.cumsum(seg) - seg
    out = a[np.arange(int(seg.sum())) - np.repeat(offset - begin, seg)]
    if (out == 32).any():
        return None
    out[offset + width] = 32
    out[offset[starts[1:] - 1] + width[starts[1:] - 1]] = 10
    forms = out.tobytes().decode("utf-8")
    if not forms.replace(" ", "").replace("\n", "").isprintable() and OTHER_WHITESPACE.search(forms):
        return None
    return forms


def _labels(a, begin, end, widest: int = 64):
    """(index of each label into the names, names) of the fields a[begin:end]. A label of up to 16 bytes is
    held exactly by two 64-bit words of its bytes; the labels are grouped by a key mixed from the two and
    every label is checked against its group's representative, so two labels never share a name. Longer
    labels (or a key shared by two labels) are sorted as strings instead."""
    width = end - begin
    n = len(width)
    most = int(width.max())
    if most > widest:
        return None, None
    last = len(a) - 1
    if most <= 16:
        words = [np.zeros(n, dtype=np.uint64), np.zeros(n, dtype=np.uint64)]
        for k in range(most):
            byte = np.where(k < width, a[np.minimum(begin + k, last)], 0).astype(np.uint64)
            words[k // 8] |= byte << np.uint64(8 * (k % 8))
        key = words[0] * np.uint64(0x9E3779B97F4A7C15) ^ words[1]
        known = np.unique(key[:1024])
        index = np.minimum(np.searchsorted(known, key), len(known) - 1)
        missing = known[index] != key
        if missing.any():
            known = np.unique(np.concatenate([known, key[missing]]))
            index = np.searchsorted(known, key)
        rep = np.zeros(len(known), dtype=np.int64)
        rep[index] = np.arange(n)  # some label of each key
        if np.array_equal(words[0][rep][index], words[0]) and np.array_equal(words[1][rep][index], words[1]):
            return index.astype(np.int32), [a[begin[i]:end[i]].tobytes().decode("utf-8") for i in rep.tolist()]
    k = np.arange(max(1, most))
    ch = np.where(k < width[:, None], a[np.minimum(begin[:, None] + k, last)], 0).astype(np.uint8)
    names, index = np.unique(ch.view(f"S{max(1, most)}").ravel(), return_inverse=True)
    return index.astype(np.int32).ravel(), [x.decode("utf-8") for x in names.tolist()]


def forest_depths(head: np.ndarray, starts: np.ndarray, sizes: np.ndarray, sent: np.ndarray):
    """Each word's depth (arcs to its root; depths.py) when every sentence has words and HEADs (1-based, 0 = root) in
    range that form one tree, else None."""
    if not len(sizes) or not sizes.all():
        return None
    if (head > sizes[sent]).any():
        return None
    root = head == 0
    if not np.array_equal(np.bincount(sent[root], minlength=len(sizes)), np.ones(len(sizes), np.int64)):
        return None
    parent = np.where(root, np.arange(len(head)), starts[sent] + head - 1)
    depth, top = jump_to_roots(parent, (~root).astype(np.int64), longest=int(sizes.max()))
    return depth if root[top].all() else None


def multiword_tokens(words: List[str], ranges) -> Tuple[List[str], List[int]]:
    """(tokens, token_of_word) of one sentence as ``read_conllu`` builds them from its words and its range
    lines (word position before the line, ID, FORM), or None if a range is malformed: a range "a-b" stands
    before word a, covers words a..b with b > a, and starts after the previous range's end."""
    n = len(words)
    tokens: List[str] = []
    token_of_word: List[int] = []
    w = 0  # next word not yet given a token
    for pos, ident, form in ranges:
        a, _, b = ident.partition("-")
        if not (a.isdigit() and b.isdigit()):
            return None
        a, b = int(a), int(b)
        if a != pos + 1 or b <= a or pos < w or b > n:
            return None
        token_of_word.extend(range(len(tokens), len(tokens) + pos - w))
        tokens.extend(words[w:pos])
        tokens.append(normalize_form(form) if " " in form or not form.isprintable() else form)
        token_of_word.extend([len(tokens) - 1] * (b - pos))
        w = b
    token_of_word.extend(range(len(tokens), len(tokens) + n - w))
    tokens.extend(words[w:])
    return tokens, token_of_word
