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
from fairseq_syntax.preparation.side_texts import count_lines_of, remove_file

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


#: lines of a data-bin split that --record-only segments again to check the codes it records
CHECKED_LINES = 1000


def _ambiguous(symbols):
    """Whether a line's subwords cannot be joined back into its tokens for certain: a token that holds
    subword-nmt's separator itself (``@@`` alone, inside a symbol, or ending the line)."""
    return any(sym == "@@" or "@@" in sym[:-2] for sym in symbols) or (symbols and symbols[-1].endswith("@@"))


def check_codes_segment_data_bin(code_path, destdir, src, tgt, lang, lines=CHECKED_LINES):
    """Refuse BPE codes that did not make a data-bin's subwords: the first ``lines`` sentences of its first split
    that has any (valid, else train, else test), each joined back into its tokens and segmented again with these
    codes, must come out as the data-bin holds them. The right codes give every line back (subword-nmt's
    segmentation is a function of the tokens); codes learned by another preparation (other text, other merges)
    split words otherwise. Lines holding ``<unk>``, or a token with subword-nmt's separator ``@@`` in it (they
    cannot be joined back for certain), are skipped. Used by ``prepare --record-only``, which copies codes from a
    work folder that a later or killed preparation may have rewritten."""
    from fairseq.data import Dictionary, data_utils

    from fairseq_syntax.errors import SyntaxDataError

    dictionary = Dictionary.load(os.path.join(destdir, f"dict.{lang}.txt"))
    bpe = load_bpe(code_path)
    looked = []
    for split in ("valid", "train", "test"):
        prefix = os.path.join(destdir, f"{split}.{src}-{tgt}.{lang}")
        if not (os.path.exists(prefix + ".bin") and os.path.exists(prefix + ".idx")):
            continue
        if os.path.getsize(prefix + ".bin") == 0:  # an empty split (numpy cannot map an empty file)
            looked.append(f"{split} (0 sentences)")
            continue
        data = data_utils.load_indexed_dataset(prefix, dictionary)
        checked = 0
        for i in range(min(lines, len(data))):
            ids = data[i]
            if len(ids) and ids[-1] == dictionary.eos():
                ids = ids[:-1]
            if (ids == dictionary.unk()).any() or (ids == dictionary.eos()).any():
                continue
            symbols = [dictionary[int(k)] for k in ids]
            if _ambiguous(symbols):
                continue
            held = " ".join(symbols)
            made = bpe.process_line((held + " ").replace("@@ ", "").strip()).strip()
            if made != held:
                raise SyntaxDataError(
                    code_path, f"these BPE codes did not make the data-bin's subwords ({prefix}.bin, sentence "
                    f"{i + 1}: the data-bin holds {held[:120]!r}, the codes give {made[:120]!r}): a later or killed "
                    "preparation in this work folder learned them again. Give the --workdir of the preparation "
                    f"that made {destdir}, or prepare it again")
            checked += 1
        if checked:
            logger.info("BPE codes %s: %d sentences of %s segmented again as the data-bin holds them", code_path,
                        checked, os.path.basename(prefix))
            return checked
        looked.append(f"{split} ({len(data)} sentences)")
    raise SyntaxDataError(destdir, f"no sentence of {lang!r} to check the BPE codes {code_path} against: "
                          + (f"{', '.join(looked)}: every one checked holds <unk> or '@@' in a token" if looked else
                             f"no binarized split (valid, train or test: SPLIT.{src}-{tgt}.{lang}.bin)"))
