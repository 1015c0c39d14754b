"""Aligned syntax files: text form, fairseq mmap binary form, loading.

Text form (written by ``preprocess/align.py``), one line per sentence and
one whitespace-separated field per BPE token of the same line:

* ``PREFIX.words``  1-based node (word) index of each subword;
* ``PREFIX.heads``  1-based head node of that word (0 = root);
* ``PREFIX.labels`` dependency label of that word.

Binary form (written by ``preprocess/binarize.py``), fairseq mmap indexed
datasets named after the token datasets of fairseq-preprocess::

    DEST/{split}.{src}-{tgt}.{lang}.words.{bin,idx}   int32
    DEST/{split}.{src}-{tgt}.{lang}.heads.{bin,idx}   int32
    DEST/{split}.{src}-{tgt}.{lang}.labels.{bin,idx}  int32 ids of
    DEST/dict.{lang}.labels.txt                       (a fairseq Dictionary)

Each syntax item has exactly one entry per BPE token, i.e. one fewer than
the token item (fairseq appends EOS); :func:`check_sizes` enforces this.

Beside them ``prepare`` writes ``DEST/{split}.{src}-{tgt}.{lang}.firstwords.{bin,idx}`` (int32): the 0-based index
of the first parser word of each subword's unit (a unit is a word, a multiword token, or words that share a
SentencePiece piece), which ``fairseq-syntax-inspect`` names units by; training does not read it.
"""
from __future__ import annotations

import logging
import os
from array import array
from typing import Iterable, List, Sequence

import numpy as np

from fairseq_syntax.durable_files import write_boundary
from fairseq_syntax.errors import SyntaxDataError
from fairseq_syntax.text_reading import open_text

FIELDS = ("words", "heads", "labels")
#: the per-subword first parser word of its unit (the aligned-tree view's names of units; not read in training)
FIRST_WORDS = "firstwords"
logger = logging.getLogger(__name__)


class AlignedCorpus:
    """Per-subword syntax of many sentences, kept flat for fast binarizing."""

    def __init__(self):
        self.words = array("i")
        self.heads = array("i")
        self.labels: List[str] = []
        self.sizes: List[int] = []
        self.first_words = array("i")  # while every sentence came with them (blocks); else None
        self.first_words_given = True

    def add(self, word: Sequence[int], head: Sequence[int], label: Sequence[str]) -> None:
        self.words.extend(word)
        self.heads.extend(head)
        self.labels.extend(label)
        self.sizes.append(len(word))
        self.first_words_given = False

    def add_block(self, block) -> None:
        """Add an :class:`~fairseq_syntax.data.alignment.subword_align.AlignedBlock` (many sentences at once)."""
        if block.first_word is None:
            self.first_words_given = False
        elif self.first_words_given:
            self.first_words.frombytes(block.first_word.astype(np.int32).tobytes())
        self.words.frombytes(block.word.astype(np.int32).tobytes())
        self.heads.frombytes(block.head.astype(np.int32).tobytes())
        self.labels.extend(np.array(block.label_names + [""], dtype=object)[block.label].tolist())
        self.sizes.extend(block.sizes.tolist())

    def __len__(self) -> int:
        return len(self.sizes)

    # --- text form -------------------------------------------------------
    def write_text(self, prefix: str) -> None:
        """Write ``PREFIX.{words,heads,labels}``; each file appears whole or not at all (temp file, rename)."""
        offs = np.concatenate([[0], np.cumsum(self.sizes, dtype=np.int64)])
        words = self.words.tolist()
        heads = self.heads.tolist()
        tmp = {f: f"{prefix}.{f}.tmp" for f in FIELDS}
        with open(tmp["words"], "w", encoding="utf-8") as fw, open(
            tmp["heads"], "w", encoding="utf-8"
        ) as fh, open(tmp["labels"], "w", encoding="utf-8") as fl:
            for k in range(len(self.sizes)):
                a, b = offs[k], offs[k + 1]
                fw.write(" ".join(map(str, words[a:b])) + "\n")
                fh.write(" ".join(map(str, heads[a:b])) + "\n")
                fl.write(" ".join(self.labels[a:b]) + "\n")
        for f in FIELDS:
            os.replace(tmp[f], f"{prefix}.{f}")
            write_boundary(f"{prefix}.{f}")

    @classmethod
    def read_text(cls, prefix: str) -> "AlignedCorpus":
        """Read ``PREFIX.{words,heads,labels}``; check they agree line by line."""
        corpus = cls()
        paths = [prefix + "." + f for f in FIELDS]
        for p in paths:
            if not os.path.exists(p):
                raise SyntaxDataError(p, "file not found (expected the output of preprocess/align.py)")
        with open_text(paths[0]) as fw, open_text(paths[1]) as fh, open_text(paths[2]) as fl:
            lineno = 0
            for lineno, (lw, lh, ll) in enumerate(zip(fw, fh, fl), 1):
                w, h, lab = lw.split(), lh.split(), ll.split()
                if not (len(w) == len(h) == len(lab)):
                    raise SyntaxDataError(
                        f"{prefix}.{{words,heads,labels}}:{lineno}",
                        f"field counts differ: {len(w)} words, {len(h)} heads, {len(lab)} labels",
                    )
                try:
                    corpus.words.extend(map(int, w))
                    corpus.heads.extend(map(int, h))
                except ValueError:
                    bad = next(x for x in w + h if not x.lstrip("-").isdigit())
                    raise SyntaxDataError(f"{prefix}.words/.heads:{lineno}", f"non-integer field {bad!r}") from None
                corpus.labels.extend(lab)
                corpus.sizes.append(len(w))
            for p, fh_ in zip(paths, (fw, fh, fl)):
                extra = fh_.readline()
                if extra:
                    raise SyntaxDataError(p, f"has more lines than the others (line {lineno + 1} is extra)")
        return corpus

    # --- binary form -----------------------------------------------------
    def write_binary(self, prefix: str, label_dict) -> None:
        """Write mmap datasets ``PREFIX.{words,heads,labels}.{bin,idx}``."""
        index = label_dict.indices
        unk = label_dict.unk()
        label_ids = array("i", [index.get(x, unk) for x in self.labels])
        unknown = sorted({x for x in self.labels if x not in index})
        if unknown:
            logger.warning(
                "%s: %d label(s) not in the label dictionary are stored as <unk>: %s",
                prefix, len(unknown), ", ".join(unknown[:20]),
            )
        fields = [("words", self.words), ("heads", self.heads), ("labels", label_ids)]
        if self.first_words_given:
            fields.append((FIRST_WORDS, self.first_words))
        for field, data in fields:
            write_mmap(prefix + "." + field, data, self.sizes)


def write_mmap(prefix: str, data: array, sizes: Sequence[int]) -> None:
    """Write an int32 fairseq MMapIndexedDataset (same format as its builder)."""
    from fairseq.data.indexed_dataset import MMapIndexedDataset

    with open(prefix + ".bin", "wb") as f:
        f.write(np.frombuffer(data, dtype=np.int32).tobytes() if len(data) else b"")
    with MMapIndexedDataset.Index.writer(prefix + ".idx", np.int32) as idx:
        idx.write(list(sizes))


def build_label_dictionary(labels: Iterable[str]):
    """A fairseq Dictionary of dependency labels (by frequency)."""
    counts = {}
    for x in labels:
        counts[x] = counts.get(x, 0) + 1
    return label_dictionary_from_counts(counts)


def label_dictionary_from_counts(counts: dict):
    """A fairseq Dictionary of dependency labels from label -> count (by frequency, then name)."""
    from fairseq.data import Dictionary

    d = Dictionary()
    for x, c in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
        d.add_symbol(x, n=c)
    return d


class StreamingSyntaxWriter:
    """Writes aligned syntax sentence by sentence, in memory that does not grow with the corpus (beyond one
    int per sentence for the index): ``PREFIX.{words,heads,labels}.{bin,idx}`` exactly as
    :meth:`AlignedCorpus.write_binary` writes them, and optionally the text form ``TEXT.{words,heads,labels}``.

    Labels are stored under provisional ids while streaming; :meth:`finish` builds the label dictionary from
    their counts (or takes a given one) and maps the ids. Binary files appear under their names only once
    complete (and once the sizes passed ``check``).
    """

    FLUSH = 1 << 20

    def __init__(self, prefix: str, text_prefix: str = None):
        self.prefix = prefix
        self.tmp = {f: open(f"{prefix}.{f}.bin.tmp", "wb") for f in FIELDS}
        self.text = {f: open(f"{text_prefix}.{f}", "w", encoding="utf-8") for f in FIELDS} if text_prefix else None
        self.buf = {f: array("i") for f in FIELDS}
        self.first = open(f"{prefix}.{FIRST_WORDS}.bin.tmp", "wb")  # while every block carries its first words
        self.first_buf = array("i")
        self.label_ids = {}
        self.counts = np.zeros(0, dtype=np.int64)
        self.sizes = array("i")

    def add(self, word: Sequence[int], head: Sequence[int], label: Sequence[str]) -> None:
        ids = self.label_ids
        for x in label:
            if x not in ids:
                ids[x] = len(ids)
        self.buf["words"].extend(word)
        self.buf["heads"].extend(head)
        self.buf["labels"].extend([ids[x] for x in label])
        self._no_first_words()
        self.sizes.append(len(word))
        if self.text:
            self.text["words"].write(" ".join(map(str, word)) + "\n")
            self.text["heads"].write(" ".join(map(str, head)) + "\n")
            self.text["labels"].write(" ".join(label) + "\n")
        if len(self.buf["words"]) >= self.FLUSH:
            self._flush()

    def add_block(self, block) -> None:
        """Add an :class:`~fairseq_syntax.data.alignment.subword_align.AlignedBlock`: the same files as :meth:`add` for
        each of its sentences."""
        ids = self.label_ids
        used = np.bincount(block.label, minlength=len(block.label_names)) > 0  # a name may cover no subword
        mapping = np.array([ids.setdefault(x, len(ids)) if u else 0 for x, u in zip(block.label_names, used)] + [0],
                           dtype=np.int32)
        labels = mapping[block.label]
        self.buf["words"].frombytes(block.word.astype(np.int32).tobytes())
        self.buf["heads"].frombytes(block.head.astype(np.int32).tobytes())
        self.buf["labels"].frombytes(labels.tobytes())
        if block.first_word is None:
            self._no_first_words()
        elif self.first is not None:
            self.first_buf.frombytes(block.first_word.astype(np.int32).tobytes())
        self.sizes.frombytes(block.sizes.astype(np.int32).tobytes())
        if self.text:
            last = np.zeros(len(block.word), dtype=bool)
            last[np.cumsum(block.sizes) - 1] = True
            self.text["words"].write(text_lines(block.word, number_strings(block.word), last))
            self.text["heads"].write(text_lines(block.head, number_strings(block.head), last))
            self.text["labels"].write(text_lines(block.label, block.label_names, last))
        if len(self.buf["words"]) >= self.FLUSH:
            self._flush()

    def _flush(self):
        lab = np.frombuffer(self.buf["labels"], dtype=np.int32) if len(self.buf["labels"]) else np.zeros(0, np.int32)
        counts = np.bincount(lab, minlength=len(self.label_ids))
        if len(self.counts) < len(counts):
            self.counts = np.concatenate([self.counts, np.zeros(len(counts) - len(self.counts), np.int64)])
        self.counts[: len(counts)] += counts
        for f in FIELDS:
            self.tmp[f].write(self.buf[f].tobytes())
            self.buf[f] = array("i")
        if self.first is not None:
            self.first.write(self.first_buf.tobytes())
            self.first_buf = array("i")

    def _no_first_words(self):
        """A sentence given without its first words: the data-bin gets no first-words dataset."""
        if self.first is not None:
            self.first.close()
            os.remove(self.first.name)
            self.first = None

    def close(self):
        for fh in list(self.tmp.values()) + list((self.text or {}).values()) + [self.first]:
            if fh is not None:
                fh.close()

    def label_counts(self) -> dict:
        self._flush()
        return {x: int(self.counts[i]) for x, i in self.label_ids.items()}

    def finish(self, label_dict=None, check=None):
        """Close the files, map provisional label ids to ``label_dict`` (built from the counts when None;
        unknown labels become <unk> with a warning), call ``check(sizes)``, write the .idx files and move
        the .bin files into place. Returns the label dictionary."""
        counts = self.label_counts()
        self.close()
        if label_dict is None:
            label_dict = label_dictionary_from_counts(counts)
        index, unk = label_dict.indices, label_dict.unk()
        by_id = sorted(self.label_ids, key=self.label_ids.get)
        mapping = np.array([index.get(x, unk) for x in by_id] or [0], dtype=np.int32)
        unknown = sorted(x for x in by_id if x not in index)
        if unknown:
            logger.warning("%s: %d label(s) not in the label dictionary are stored as <unk>: %s",
                           self.prefix, len(unknown), ", ".join(unknown[:20]))
        if check is not None:
            check(np.frombuffer(self.sizes, dtype=np.int32) if len(self.sizes) else np.zeros(0, np.int32))
        tmp_labels = f"{self.prefix}.labels.bin.tmp"
        with open(tmp_labels, "rb") as fin, open(tmp_labels + ".mapped", "wb") as fout:
            while True:
                block = fin.read(1 << 24)
                if not block:
                    break
                fout.write(mapping[np.frombuffer(block, dtype=np.int32)].astype(np.int32).tobytes())
        os.replace(tmp_labels + ".mapped", tmp_labels)
        sizes = np.frombuffer(self.sizes, dtype=np.int32) if len(self.sizes) else np.zeros(0, np.int32)
        fields = FIELDS + ((FIRST_WORDS,) if self.first is not None else ())
        for ext in (".bin", ".idx") if self.first is None else ():  # an earlier run's, of other sentences
            if os.path.exists(f"{self.prefix}.{FIRST_WORDS}{ext}"):
                os.remove(f"{self.prefix}.{FIRST_WORDS}{ext}")
        for f in fields:
            write_mmap_index(f"{self.prefix}.{f}.idx", sizes)
            os.replace(f"{self.prefix}.{f}.bin.tmp", f"{self.prefix}.{f}.bin")
            write_boundary(f"{self.prefix}.{f}.bin")
        return label_dict


def number_strings(values: np.ndarray) -> List[str]:
    """``str(i)`` for i in 0..max(values)."""
    return [str(i) for i in range(int(values.max()) + 1)] if len(values) else []


def text_lines(values: np.ndarray, names: List[str], last: np.ndarray) -> str:
    """``names[v]`` for each value, separated by spaces, with a newline after each ``last`` one: the text
    form of a block's sentences, as ``" ".join(...) + "\\n"`` per sentence writes it."""
    if not len(values):
        return ""
    spaced = np.array([x + " " for x in names], dtype=object)
    ended = np.array([x + "\n" for x in names], dtype=object)
    return "".join(np.where(last, ended[values], spaced[values]).tolist())


def write_mmap_index(path: str, sizes: np.ndarray) -> None:
    """The .idx of an int32 fairseq MMapIndexedDataset, byte for byte as its Index.writer writes it, with
    numpy arrays instead of its Python list of pointers (which costs about 70 bytes per sentence)."""
    import struct

    from fairseq.data.indexed_dataset import MMapIndexedDataset, _dtype_header_code

    sizes = np.asarray(sizes, dtype=np.int32)
    pointers = np.zeros(len(sizes), dtype=np.int64)
    if len(sizes) > 1:
        np.cumsum(sizes[:-1], dtype=np.int64, out=pointers[1:])
    pointers *= np.dtype(np.int32).itemsize
    with open(path, "wb") as f:
        f.write(MMapIndexedDataset.Index._HDR_MAGIC)
        f.write(struct.pack("<Q", 1))
        f.write(struct.pack("<B", _dtype_header_code(np.int32)))
        f.write(struct.pack("<Q", len(sizes)))
        f.write(sizes.tobytes(order="C"))
        f.write(pointers.tobytes(order="C"))


def syntax_prefix(data_dir: str, split: str, src: str, tgt: str, lang: str) -> str:
    """Prefix of the syntax datasets next to fairseq's token dataset."""
    return os.path.join(data_dir, f"{split}.{src}-{tgt}.{lang}")


def label_dict_path(data_dir: str, lang: str) -> str:
    return os.path.join(data_dir, f"dict.{lang}.labels.txt")


def syntax_exists(prefix: str, field: str) -> bool:
    return os.path.exists(prefix + "." + field + ".idx") and os.path.exists(prefix + "." + field + ".bin")


def load_field(prefix: str, field: str):
    """Open one syntax dataset (memory-mapped; nothing is read yet)."""
    from fairseq.data.indexed_dataset import MMapIndexedDataset

    if not syntax_exists(prefix, field):
        raise SyntaxDataError(
            prefix + "." + field + ".{bin,idx}",
            "syntax dataset not found: prepare the data-bin with the syntax of this side (fairseq-syntax-prepare "
            "--syntax ...), or binarize this split's parses (fairseq-syntax-binarize)",
        )
    return MMapIndexedDataset(prefix + "." + field)


def check_sizes(token_sizes: np.ndarray, syntax_sizes: np.ndarray, where: str, offset: int = 1) -> None:
    """Every token item must be ``offset`` (EOS) longer than its syntax item.

    ``where`` describes split and side; the error names the first mismatching
    sentence index with expected and found lengths.
    """
    token_sizes = np.asarray(token_sizes)
    syntax_sizes = np.asarray(syntax_sizes)
    if len(token_sizes) != len(syntax_sizes):
        raise SyntaxDataError(
            where, f"{len(syntax_sizes)} sentences in the syntax data but {len(token_sizes)} in the token data"
        )
    bad = np.flatnonzero(token_sizes != syntax_sizes + offset)
    if len(bad):
        i = int(bad[0])
        raise SyntaxDataError(
            f"{where}, sentence {i}",
            f"expected {int(token_sizes[i]) - offset} syntax entries (one per BPE token) but found "
            f"{int(syntax_sizes[i])}; {len(bad)} sentence(s) differ in total. Was the syntax data made from "
            "the same BPE'd text as the token data?",
        )
