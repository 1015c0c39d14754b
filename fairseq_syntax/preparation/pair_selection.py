"""Step 2 of ``prepare``: the training pairs kept (``--train-first`` is applied while reading; here the papers'
length filters ``--max-words`` / ``--max-ratio`` on the tokenised text and the language identification
``--lang-filter``, :mod:`fairseq_syntax.preparation.pair_filter`), the parses kept in step.
"""
from __future__ import annotations

import logging
import os
from typing import Sequence

from fairseq_syntax.preparation.pair_filter import LANGUAGE_TOOLS, detector, length_keep, read_mask
from fairseq_syntax.preparation.chunked import parse_shard, read_pairs, run_chunked
from fairseq_syntax.errors import SyntaxDataError
from fairseq_syntax.preparation.side_texts import select_units

logger = logging.getLogger(__name__)


def _filter_options(args):

    return dict(workers=args.workers, chunk_size=args.chunk_size, progress=not args.no_progress,
                shard=parse_shard(args.shard))



def language_mask(args, texts, work, items=None, total=None):
    """The language filter's keep mask of the training pairs (resumable chunks, --workers, --shard)."""

    src, tgt = args.source_lang, args.target_lang
    mask = os.path.join(work, "train.lang-filter.mask")
    extra = dict(range_items=items, total=total) if items else {}
    res = language_keep_file(texts[("train", src)] if texts else None, texts[("train", tgt)] if texts else None,
                             mask, (src, tgt), args.lang_filter, **_filter_options(args), **extra)
    if res.reused:
        logger.info("language filter: %d pairs reused from finished chunks, %d identified now", res.reused,
                    res.processed)
    return read_mask(mask) if res.complete else None



def select_training_pairs(args, texts, conllus, work):
    """The papers' training-pair filters on the tokenised text (fairseq_syntax.preparation.pair_filter): length
    (--max-words, --max-ratio) and language (--lang-filter); rewrites the train text (and parses) in work.
    Streams the text; returns the count kept."""

    src, tgt = args.source_lang, args.target_lang
    with open(texts[("train", src)], encoding="utf-8") as fs, open(texts[("train", tgt)], encoding="utf-8") as ft:
        keep = length_keep(((len(a.split()), len(b.split())) for a, b in zip(fs, ft)), args.max_words,
                           args.max_ratio)
    if args.lang_filter:
        by_lang = language_mask(args, texts, work)
        logger.info("train: %d of %d pairs identified as %s-%s (%s)", sum(by_lang), len(keep), src, tgt,
                    args.lang_filter)
        keep = [k and k2 for k, k2 in zip(keep, by_lang)]
    kept = sum(keep)
    filters = f"--max-words {args.max_words or '-'} --max-ratio {args.max_ratio or '-'} " \
              f"--lang-filter {args.lang_filter or '-'}"
    if kept == 0:
        raise SyntaxDataError(texts[("train", src)], f"no training pair passes {filters}")
    if kept < len(keep):
        for lang in (src, tgt):
            select_units(texts[("train", lang)], keep, texts[("train", lang)])
            if conllus[("train", lang)]:
                conllus[("train", lang)] = select_units(conllus[("train", lang)], keep,
                                                   os.path.join(work, f"train.selected.{lang}.conllu"))
    logger.info("train: kept %d of %d pairs (%s)", kept, len(keep), filters)
    return kept


# --- the language filter over a corpus: resumable chunks, worker processes (preparation/chunked.py)
def _language_chunk(detector, first, pairs, src, tgt):
    """One chunk of pairs -> lines '1' (keep) / '0' (drop)."""
    return "".join("1\n" if detector(a) == src and detector(b) == tgt else "0\n" for a, b in pairs), len(pairs)


def language_filter_key(langs: Sequence[str], tool: str) -> str:
    return f"language filter {tool} {'-'.join(langs)}"


def language_keep_file(src_path: str, tgt_path: str, mask_path: str, langs: Sequence[str], tool: str = "langid",
                       workers: int = 1, chunk_size: int = 2048, shard=None, progress: bool = False, items=None,
                       **chunk_options):
    """Run the language filter over two parallel text files; write ``mask_path`` (one '1'/'0' line per pair).

    In resumable chunks and over ``workers`` processes (each builds its own identifier); ``shard = (i, n)``
    does only shard i of n. ``items`` replaces the pairs read from the two files (see
    :func:`fairseq_syntax.preparation.chunked.run_chunked`). Returns the ChunkResult.
    """

    if tool not in LANGUAGE_TOOLS:
        raise ValueError(f"unknown language identifier {tool!r} (one of {', '.join(LANGUAGE_TOOLS)})")
    src, tgt = (lang.split("_")[0].lower() for lang in langs)
    return run_chunked(items or read_pairs(src_path, tgt_path), mask_path, _language_chunk,
                       language_filter_key(langs, tool), chunk_size=chunk_size, task_args=(src, tgt),
                       init=detector, init_args=(tool,), workers=workers, shard=shard, progress=progress,
                       desc=f"language filter ({tool})", unit="pair", **chunk_options)
