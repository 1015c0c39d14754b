"""How ``prepare`` segments the text into the units fairseq binarises, and the checks around it: BPE or
SentencePiece (options resolved and checked before any work), input that is segmented already (refused), and a
given dictionary that does not fit the segmentation (refused by its ``<unk>`` rate).
"""
from __future__ import annotations

import logging
import os
import re
from typing import Dict, Optional

from fairseq_syntax.errors import OptionError, SyntaxDataError

logger = logging.getLogger(__name__)

#: BPE merges when neither they nor SentencePiece are asked for
DEFAULT_BPE_MERGES = 8000
SIDES = ("source", "target")



def resolve(args, syntax_sides=("source", "target")) -> None:
    """``--bpe-merges`` defaulted, and the SentencePiece options checked (before any work): one segmentation,
    a model for each side, models that load, surface units, no parser tokenising a side without syntax."""
    if not args.uses_sentencepiece:
        if args.bpe_merges is None:
            args.bpe_merges = DEFAULT_BPE_MERGES
        return
    if args.bpe_merges:
        raise OptionError(f"--bpe-merges {args.bpe_merges} and SentencePiece ({spm_option(args)}): give one of them")
    args.bpe_merges = 0
    if args.units == "words":
        raise OptionError("--units words: SentencePiece cuts the raw sentence, which holds the surface tokens "
                          "('zum', not 'zu dem'); leave --units surface")
    for side in SIDES:
        if side not in syntax_sides and args.side(side).tokenizer == "parser":
            raise OptionError(f"--tokenizer-{side} parser: SentencePiece cuts the raw text of a side without "
                              f"syntax itself; leave --tokenizer-{side} auto (or give it syntax)")
    if args.spm_vocab_size:
        if args.spm_vocab_size < 8:
            raise OptionError(f"--spm-vocab-size {args.spm_vocab_size}: give a vocabulary of 8 pieces or more")
        if args.spm_model_source or args.spm_model_target:
            raise OptionError("--spm-vocab-size learns the model: give no --spm-model-source / --spm-model-target")
        return
    from fairseq_syntax.preparation.sentencepiece_step import load_model

    for side in SIDES:
        path = args.side(side).spm_model
        if path is None:
            raise OptionError(f"--spm-model-{'target' if side == 'target' else 'source'}: the {side} side has no "
                              "SentencePiece model (give --spm-model for both sides, or one per side)")
        if not os.path.isfile(path):
            raise SyntaxDataError(path, f"no such file (the {side} side's SentencePiece model)")
        load_model(path)


def spm_option(args) -> str:
    if args.spm_vocab_size:
        return f"--spm-vocab-size {args.spm_vocab_size}"
    return "--spm-model"


def given_dictionaries(args) -> Dict[str, str]:
    """``{"source" | "target": path}`` of the dictionaries given to fairseq-preprocess (``--srcdict`` /
    ``--tgtdict``, as options of prepare or in ``--preprocess-args``); with a joined dictionary the one given
    serves both sides."""
    out = {}
    words = (args.preprocess_args or "").split()
    for k, word in enumerate(words):
        for flag, side in (("--srcdict", "source"), ("--tgtdict", "target")):
            if word == flag and k + 1 < len(words):
                out[side] = words[k + 1]
            elif word.startswith(flag + "="):
                out[side] = word.split("=", 1)[1]
    for side, value in (("source", args.srcdict), ("target", args.tgtdict)):
        if value:
            out[side] = value
    return out


def joined_dictionary(args) -> bool:
    """One dictionary for both sides: joint segmentation, unless two different dictionaries are given."""
    given = given_dictionaries(args)
    if len(given) == 2 and os.path.realpath(given["source"]) != os.path.realpath(given["target"]):
        return False
    return not args.separate_bpe


def dictionary_options(args):
    """fairseq-preprocess's dictionary options from prepare's own ``--srcdict`` / ``--tgtdict``."""
    given = {side: path for side, path in (("source", args.srcdict), ("target", args.tgtdict)) if path}
    for path in given.values():
        if not os.path.isfile(path):
            raise SyntaxDataError(path, "no such file (a dictionary given with --srcdict / --tgtdict)")
    if joined_dictionary(args) and given:
        return ["--srcdict", given.get("source") or given["target"]]
    return [x for side, flag in (("source", "--srcdict"), ("target", "--tgtdict")) if side in given
            for x in (flag, given[side])]


# --- input that is segmented already ------------------------------------------------------------------------
_PIECE = "\u2581".encode("utf-8")
_BPE = re.compile(rb"[^\s@]@@(?=[ \t\r\n]|$)")


def check_not_segmented(path: str, side: str, what: str) -> None:
    """Refuse ``path`` when it holds SentencePiece pieces (``▁``) or subword-nmt's continuation marks (``@@``):
    prepare would parse the pieces as words, or segment them again. ``what``: the step that would (named in the
    message with the option to use)."""
    found = None
    with open(path, "rb") as f:
        line = 1
        for chunk in iter(lambda: f.read(1 << 22), b""):
            tail = b"" if not chunk.endswith(b"@") else f.read(3)  # a mark cut by the chunk's end
            chunk += tail
            at = chunk.find(_PIECE)
            m = _BPE.search(chunk)
            hits = [x for x in (at if at >= 0 else None, m.start() if m else None) if x is not None]
            if hits:
                first = min(hits)
                found = (line + chunk.count(b"\n", 0, first), "SentencePiece pieces ('\u2581')" if first == at
                         else "BPE continuation marks ('@@')")
                break
            line += chunk.count(b"\n")
    if found is None:
        return
    lineno, kind = found
    raise SyntaxDataError(f"{path}:{lineno}", f"holds {kind}: the {side} side's text is segmented already, and "
                          f"{what} it as it is; give the raw text (prepare segments it itself: --spm-model PATH "
                          "with this SentencePiece model, --spm-vocab-size N to learn one, --bpe-merges N for BPE)")


# --- a given dictionary ---------------------------------------------------------------------------------------
def check_unk_rate(args, destdir: str) -> Optional[Dict[str, float]]:
    """The share of each side's training tokens a given dictionary turned into ``<unk>``; more than
    ``--allow-unk-rate`` stops prepare (the data-bin stays unfinished) with the rate and the likely cause."""
    given = given_dictionaries(args)
    if not given:
        return None
    import numpy as np
    from fairseq.data import Dictionary
    from fairseq.data.indexed_dataset import MMapIndexedDataset

    src, tgt = args.source_lang, args.target_lang
    joined = joined_dictionary(args)
    rates = {}
    for lang, side in ((src, "source"), (tgt, "target")):
        path = given.get(side) or (given.get("source") or given.get("target") if joined else None)
        prefix = os.path.join(destdir, f"train.{src}-{tgt}.{lang}")
        if path is None or not os.path.exists(prefix + ".bin") or os.path.getsize(prefix + ".bin") == 0:
            continue
        unk = Dictionary.load(os.path.join(destdir, f"dict.{lang}.txt")).unk()
        index = MMapIndexedDataset.Index(prefix + ".idx")
        ids = np.memmap(prefix + ".bin", dtype=index.dtype, mode="r")
        tokens = len(ids) - len(index)  # without the EOS of every sentence
        rate = float(np.count_nonzero(ids == unk)) / max(1, tokens)
        del index, ids
        rates[lang] = rate
        logger.info("%s: the given dictionary %s turns %.2f%% of the training tokens into <unk>", lang, path,
                    100 * rate)
        if rate > args.allow_unk_rate:
            raise SyntaxDataError(path, f"turns {100 * rate:.1f}% of the {lang} training tokens into <unk> (more "
                                  f"than --allow-unk-rate {args.allow_unk_rate:g}): it was not made from this "
                                  "segmentation (another BPE or SentencePiece model's dictionary, or another "
                                  "language's); give the dictionary that goes with the model that segments the "
                                  "text (--spm-model with the dictionary beside it), or --allow-unk-rate to accept "
                                  "it")
    return rates
