"""The text files of a preparation's sides: tokenised text from a parse or a text file, the first N sentences,
a selection of sentences, lowercasing, Moses normalisation. Each is written to a temporary name and renamed
(a write boundary, :mod:`fairseq_syntax.durable_files`); a CoNLL-U file is cut into its sentences by
:func:`fairseq_syntax.data.trees.conllu.sentence_blocks`.
"""
from __future__ import annotations

import itertools
import logging
import os
import shutil
import subprocess

from tqdm import tqdm

from fairseq_syntax.data.trees.conllu import read_conllu, sentence_blocks
from fairseq_syntax.durable_files import (
    replace_file,
    temporary_name,
)
from fairseq_syntax.errors import OptionError, SyntaxDataError
from fairseq_syntax.text_reading import count_lines, open_text

logger = logging.getLogger(__name__)


def count_lines_of(path):
    # a carriage return inside a line, which the readers downstream (BPE, fairseq-preprocess) would take as a
    # line break, is refused by every text reader here (text_reading.py)
    return count_lines(path)



def copy_text(src, dst):
    """Copy a whitespace-tokenised text file; empty lines are errors."""
    tmp = temporary_name(dst)
    try:
        with open_text(src) as fin, open(tmp, "w", encoding="utf-8") as fout:
            for i, line in enumerate(fin, 1):
                if not line.strip():
                    raise SyntaxDataError(f"{src}:{i}", "empty line: every line must hold one sentence")
                fout.write(line.rstrip("\r\n") + "\n")
    except BaseException:
        remove_file(tmp)
        raise
    return replace_file(tmp, dst)



def remove_file(path):
    if os.path.exists(path):
        os.remove(path)



def write_tokens(conllu, path, units, progress=False):
    """The whitespace-tokenised text of a CoNLL-U file (surface tokens or words)."""


    tmp = temporary_name(path)
    try:
        with open(tmp, "w", encoding="utf-8") as f:
            for s in tqdm(read_conllu(conllu), desc=f"read {os.path.basename(conllu)}", unit="sent",
                          disable=not progress, mininterval=1.0):
                f.write(" ".join(s.forms(units)) + "\n")
    except BaseException:
        remove_file(tmp)
        raise
    return replace_file(tmp, path)



def units_of(path):
    """Lines of a text file, or sentence blocks of a CoNLL-U file."""
    if path.endswith(".conllu"):
        yield from sentence_blocks(path)
        return
    with open_text(path) as f:
        yield from f



def first_units(path, n, out):
    """Copy the first n sentences of a text or CoNLL-U file to out (reading no further)."""
    tmp = temporary_name(out)  # shards of one job may write it at once
    with open(tmp, "w", encoding="utf-8") as f:
        f.writelines(itertools.islice(units_of(path), n))
    return replace_file(tmp, out)



def select_units(path, keep, out):
    """Copy the sentences of a text or CoNLL-U file whose entry in keep (booleans) is true to out (may be path)."""
    tmp = temporary_name(out)
    with open(tmp, "w", encoding="utf-8") as f:
        f.writelines(unit for unit, k in zip(units_of(path), keep) if k)
    return replace_file(tmp, out)



def lowercase_file(path):
    tmp = temporary_name(path)
    with open(path, encoding="utf-8") as f, open(tmp, "w", encoding="utf-8") as out:
        for line in f:
            out.write(line.lower())
    replace_file(tmp, path)



def map_lines(raw, out, fn):
    """``out`` holds ``fn`` of every line of ``raw`` (without its line end), written atomically."""
    tmp = temporary_name(out)
    try:
        with open_text(raw) as fin, open(tmp, "w", encoding="utf-8") as fout:
            for line in fin:
                fout.write(fn(line.rstrip("\r\n")) + "\n")
    except BaseException:
        remove_file(tmp)
        raise
    return replace_file(tmp, out)


def normalized_text(raw, out, lang):
    """``raw`` with sacremoses' punctuation normaliser applied to every line (the recipes' ``moses``
    normalisation), written to ``out``."""
    from sacremoses import MosesPunctNormalizer

    return map_lines(raw, out, MosesPunctNormalizer(lang).normalize)


def moses_tokens(raw, out, lang):
    """sacremoses' tokeniser over ``raw`` (aggressive hyphen splitting, XML escapes, as ``sacremoses tokenize
    -a``), one line per line."""
    from sacremoses import MosesTokenizer

    tok = MosesTokenizer(lang)
    return map_lines(raw, out, lambda line: tok.tokenize(line, aggressive_dash_splits=True, escape=True,
                                                         return_str=True))


def kytea_tokens(raw, out):
    """``kytea -notags`` over ``raw`` into ``out``, one line per line."""
    if shutil.which("kytea") is None:
        raise OptionError("--tokenizer kytea: no kytea on PATH (install KyTea, or give the text tokenised with "
                          "--tokenizer given)")
    tmp = temporary_name(out)
    with open(raw, "rb") as fin, open(tmp, "wb") as fout:
        done = subprocess.run(["kytea", "-notags"], stdin=fin, stdout=fout, stderr=subprocess.PIPE)
    if done.returncode != 0:
        remove_file(tmp)
        raise SyntaxDataError(raw, f"kytea -notags failed: {done.stderr.decode(errors='replace').strip()[-300:]}")
    return replace_file(tmp, out)
