"""Step 3 of ``prepare``: subword-nmt BPE learned on the training text (joint or separate, N merges) and applied to
every split in resumable chunks. Learned codes are reused only when their stamp vouches for them (their
SHA-256, learned from text of this SHA-256 with these settings; :mod:`fairseq_syntax.durable_files`).
"""
from __future__ import annotations

import contextlib
import io
import itertools
import logging
import os
import shutil
import sys

from fairseq_syntax.preparation.chunked import file_sha1, read_lines, run_chunked
from fairseq_syntax.durable_files import (
    file_sha256,
    replace_file,
    stamp_for,
    temporary_name,
    unstamp,
    vouched,
)
from fairseq_syntax.preparation.texts import count_lines_of, remove_file

logger = logging.getLogger(__name__)


def load_bpe(code_path):
    from subword_nmt.apply_bpe import BPE

    with open(code_path, encoding="utf-8") as fc:
        return BPE(fc)



def _bpe_chunk(bpe, first, lines):
    """One chunk of lines -> their BPE'd text (subword-nmt)."""
    return "".join(bpe.process_line(line.strip()) + "\n" for line in lines), len(lines)



#: lines per committed chunk of BPE application (BPE is fast: larger chunks, fewer fsyncs)
BPE_CHUNK_SIZE = 8192



def learn_bpe_codes(args, langs, texts, work, progress=True):
    """Learn subword-nmt BPE on the train text of langs, once: codes whose stamp vouches for them (their SHA-256,
    learned from text of this SHA-256 with these settings: :mod:`fairseq_syntax.durable_files`) are reused.
    Returns the codes path."""

    from subword_nmt.learn_bpe import learn_bpe

    name = "joint" if len(langs) == 2 else langs[0]
    code_path = os.path.join(work, f"bpe.codes.{name}")
    train_cat = temporary_name(os.path.join(work, f"train.tok.cat.{name}"))
    stride = 1
    if args.bpe_sample:  # every k-th pair: a deterministic sample spread over the whole corpus
        stride = max(1, -(-count_lines_of(texts[("train", langs[0])]) // args.bpe_sample))
    try:
        with open(train_cat, "w", encoding="utf-8") as out:
            for lang in langs:
                with open(texts[("train", lang)], encoding="utf-8") as f:
                    if stride == 1:
                        shutil.copyfileobj(f, out)
                    else:
                        out.writelines(itertools.islice(f, 0, None, stride))
        inputs = {"text_sha256": file_sha256(train_cat), "merges": args.bpe_merges, "min_frequency": 2}
        if vouched(code_path, inputs):
            logger.info("BPE %s: reusing %s (learned from the same text with the same settings)", name, code_path)
            return code_path
        tmp = temporary_name(code_path)
        quiet = io.StringIO()  # subword-nmt draws its own progress bar on stderr
        with open(train_cat, encoding="utf-8") as fin, open(tmp, "w", encoding="utf-8") as fout, \
                contextlib.redirect_stderr(sys.stderr if progress else quiet):
            learn_bpe(fin, fout, args.bpe_merges, min_frequency=2)
        unstamp(code_path)  # a kill from here until the new stamp leaves codes that nobody vouches for
        replace_file(tmp, code_path)
        stamp_for(code_path, inputs)
    finally:
        remove_file(train_cat)
    with open(code_path, encoding="utf-8") as fc:
        learned = sum(1 for line in fc if not line.startswith("#version"))
    logger.info("BPE %s: %d merges learned (asked for %d)", name, learned, args.bpe_merges)
    return code_path



def apply_bpe_file(code_path, in_path, out_path, workers=1, chunk_size=BPE_CHUNK_SIZE, progress=True, bpe=None):
    """Apply BPE codes to a text file in resumable chunks over ``workers`` processes; returns the ChunkResult."""

    return run_chunked(read_lines(in_path), out_path, _bpe_chunk, f"bpe {file_sha1(code_path)}",
                       chunk_size=chunk_size, init=load_bpe, init_args=(code_path,), state=bpe, workers=workers,
                       progress=progress, desc=f"bpe {os.path.basename(in_path)}", unit="sent")



def learn_and_apply_bpe(args, texts, work, progress=True):
    """Learn subword-nmt BPE on train; apply to all splits. Returns the BPE'd paths and each language's codes
    file ({} without BPE)."""
    if not args.bpe_merges:  # words are the units
        return {(split, lang): shutil.copyfile(path, os.path.join(work, f"{split}.bpe.{lang}"))
                for (split, lang), path in texts.items()}, {}
    src, tgt = args.source_lang, args.target_lang
    groups = [(src, tgt)] if not args.separate_bpe else [(src,), (tgt,)]
    codes = {}
    for langs in groups:
        code_path = learn_bpe_codes(args, langs, texts, work, progress)
        bpe = load_bpe(code_path) if args.workers <= 1 else None
        for lang in langs:
            codes[lang] = (code_path, bpe)
    out_paths = {}
    for (split, lang), path in texts.items():
        out = os.path.join(work, f"{split}.bpe.{lang}")
        code_path, bpe = codes[lang]
        apply_bpe_file(code_path, path, out, workers=args.workers, progress=progress, bpe=bpe)
        out_paths[(split, lang)] = out
    return out_paths, {lang: code_path for lang, (code_path, _) in codes.items()}
