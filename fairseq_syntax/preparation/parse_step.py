"""Step 1 of ``prepare``: each side's tokens and trees. A syntax side uses ``PREF.LANG.conllu`` when it exists,
else parses ``PREF.LANG`` with the side's parser into ``WORKDIR/SPLIT.LANG.conllu`` (resumable chunks,
``--workers`` processes; every parser loaded before any parsing; ``--tokenizer-SIDE kytea`` tokenises with
KyTea first, ``given`` and ``kytea`` have the parser keep the tokens); its tokenised text is the parse's
surface tokens (or syntactic words with ``--units words``). A side without syntax is tokenised as its
``--tokenizer-SIDE`` says (``moses``: sacremoses; ``kytea``; ``parser``: its parser's tokens; ``given`` or
``auto``: as given), after ``--normalize-SIDE``, as ``--text-only`` makes it (:mod:`.text_only`).
"""
from __future__ import annotations

import logging
import os
import time

from fairseq_syntax.durable_files import file_sha256, stamp_for, unstamp, vouched
from fairseq_syntax.errors import SyntaxDataError
from fairseq_syntax.parsing.base import (
    backend_options,
    effective_workers,
    load_parser,
)
from fairseq_syntax.preparation.parse_files import parse_chunked
from fairseq_syntax.preparation.side_texts import (
    copy_text,
    first_units,
    kytea_tokens,
    moses_tokens,
    normalized_text,
    write_tokens,
)

logger = logging.getLogger(__name__)


def sides_of(spec, option="--syntax"):
    spec = spec.strip()
    if spec in ("", "none"):
        return set()
    sides = {x.strip() for x in spec.split(",")}
    bad = sides - {"source", "target"}
    if bad:
        raise ValueError(f"{option}: unknown side(s) {sorted(bad)}: give source, target or source,target")
    return sides



def side_parser_spec(args, lang, side):
    """(backend, constructor options, what to name in an error) of one side's parser."""

    backend = args.side(side).parser or "stanza"
    model = args.side(side).parser_model
    options = backend_options(backend, lang=lang, model=model, model_dir=args.stanza_dir, gpu=args.gpu,
                              pretokenized=side in sides_of(args.pretokenized or "none", "--pretokenized"))
    shown = options.get("model") or options.get("model_path") or options.get("path") or options.get("model_dir") \
        or (lang if backend == "stanza" else "none")
    what = f"{side} side ({lang}): {backend} parser, model {shown}"
    return backend, options, what



def load_side_parsers(args, sides, parsers):
    """Load the parser of every side in ``sides`` before any parsing starts, so that a wrong model fails in
    seconds with one line (not after the other side's parse). Kept in ``parsers`` when one process parses."""

    for lang, side in sides:
        backend, options, what = side_parser_spec(args, lang, side)
        t0 = time.perf_counter()
        parser = load_parser(backend, options, what, model_option=f"--parser-model-{side}")
        logger.info("%s: parser loaded in %.1fs", what, time.perf_counter() - t0)
        if effective_workers(args.workers, args.gpu) == 1:
            parsers[side] = parser
        else:
            del parser  # each worker process loads its own



def parse_side(args, raw, out, lang, side, shard=None, parsers=None):
    """Parse one side's raw text into CoNLL-U out: resumable chunks, --workers processes, or one shard."""

    backend, options, what = side_parser_spec(args, lang, side)
    workers = effective_workers(args.workers, args.gpu)
    parser = None
    if workers == 1:
        parsers = {} if parsers is None else parsers
        if side not in parsers:  # load each side's parser once, not once per split
            parsers[side] = load_parser(backend, options, what, model_option=f"--parser-model-{side}")
        parser = parsers[side]
    res = parse_chunked(raw, out, parser, (backend, options), workers=workers, chunk_size=args.chunk_size,
                        shard=shard, progress=not args.no_progress)
    if res.reused:
        logger.info("%s: %d sentences reused from finished chunks, %d parsed now", out, res.reused, res.processed)
    return res



def parsed_for_tokens(args, side, syntax_sides) -> bool:
    """A side without syntax whose tokens its parser makes (``--tokenizer-SIDE parser``)."""
    return side not in syntax_sides and args.side(side).tokenizer == "parser"


def sides_to_parse(args, prefixes, syntax_sides):
    """[(lang, side)] of the sides with a split that has raw text but no CoNLL-U that prepare parses: the syntax
    sides, and a side without syntax that its parser tokenises."""
    out = []
    for lang, side in ((args.source_lang, "source"), (args.target_lang, "target")):
        if (side in syntax_sides or parsed_for_tokens(args, side, syntax_sides)) \
                and any(not os.path.exists(f"{pref}.{lang}.conllu") for pref in prefixes):
            out.append((lang, side))
    return out


def kept_tokens_sides(args, syntax_sides) -> str:
    """``--pretokenized`` with the syntax sides whose tokeniser hands the parser tokens (given, kytea) added:
    the parser keeps them."""
    sides = sides_of(args.pretokenized or "none", "--pretokenized")
    sides |= {side for side in ("source", "target") if side in syntax_sides
              and args.side(side).tokenizer in ("given", "kytea")}
    return ",".join(side for side in ("source", "target") if side in sides)



def parser_input(args, raw, conllu, split, lang, side, syntax_sides, work):
    """The text a side's parser (or tokeniser) reads: ``raw``, Moses-normalised first with ``--normalize-SIDE
    moses``, then KyTea's tokens with ``--tokenizer-SIDE kytea`` (text that prepare parses or tokenises itself;
    given parses were made so before). A ``--shard`` run and the run that assembles the shards read the same
    text, so that the second finds the first's chunks."""
    if not os.path.exists(raw) or os.path.exists(conllu):
        return raw
    if args.side(side).normalize == "moses":
        out = os.path.join(work, f"{split}.normalized.{lang}")
        inputs = {"input": file_sha256(raw), "normalize": "moses", "lang": lang}
        if not vouched(out, inputs):  # else made by another shard, or the shards' for the assembling run
            unstamp(out)
            normalized_text(raw, out, lang)
            stamp_for(out, inputs)
        raw = out
    if args.side(side).tokenizer == "kytea":
        out = os.path.join(work, f"{split}.kytea.{lang}")
        inputs = {"input": file_sha256(raw), "tokenizer": "kytea"}
        if not vouched(out, inputs):
            unstamp(out)
            kytea_tokens(raw, out)
            stamp_for(out, inputs)
        raw = out
    return raw


def tokenised_text(args, pref, split, lang, side, syntax_sides, work, parsers=None):
    """Return (path of the whitespace-tokenised text, path of its CoNLL-U or None)."""
    conllu = f"{pref}.{lang}.conllu"
    raw = f"{pref}.{lang}"
    if split == "train" and args.train_first:  # read only what is used: the first N pairs
        if os.path.exists(conllu):
            conllu = first_units(conllu, args.train_first, os.path.join(work, f"train.first.{lang}.conllu"))
        if os.path.exists(raw):
            raw = first_units(raw, args.train_first, os.path.join(work, f"train.first.{lang}"))
    raw = parser_input(args, raw, conllu, split, lang, side, syntax_sides, work)
    tokens = os.path.join(work, f"{split}.tok.{lang}")
    if side in syntax_sides or (parsed_for_tokens(args, side, syntax_sides) and not os.path.exists(conllu)):
        if not os.path.exists(conllu):
            if not os.path.exists(raw):
                raise SyntaxDataError(raw, "neither this file nor its .conllu exists")
            out = os.path.join(work, f"{split}.{lang}.conllu")
            parse_side(args, raw, out, lang, side, parsers=parsers)
            conllu = out
        return write_tokens(conllu, tokens, args.units, not args.no_progress), \
            conllu if side in syntax_sides else None
    if os.path.exists(raw):
        if args.side(side).tokenizer == "moses":
            return moses_tokens(raw, tokens, lang), None
        return copy_text(raw, tokens), None
    if os.path.exists(conllu):
        return write_tokens(conllu, os.path.join(work, f"{split}.tok.{lang}"), args.units), None
    raise SyntaxDataError(raw, "neither this file nor its .conllu exists")
