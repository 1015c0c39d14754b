"""One command from a parallel corpus to a ready fairseq data-bin with syntax.

Steps, for each split and side:

1. syntax sides: use ``PREF.LANG.conllu`` if it exists, else parse
   ``PREF.LANG`` with the chosen parser into ``WORKDIR/SPLIT.LANG.conllu``;
   the tokenised text is the parse's surface tokens (or syntactic words with
   ``--units words``). Sides without syntax use ``PREF.LANG`` as given
   (whitespace-tokenised).
2. check that every split has the same number of lines on both sides;
   training pairs may be selected first (``--train-first``, ``--max-words``,
   ``--max-ratio``: the papers' length filters, counted on the tokenised
   text; ``--lang-filter``: language identification) and sides without
   syntax lowercased (``--lowercase``);
3. learn BPE on train with subword-nmt (joint or separate, N merges) and
   apply it to every split;
4. run ``fairseq-preprocess`` on the BPE'd text;
5. align the trees to the BPE tokens and binarize them next to the tokens.

The command is ``fairseq-syntax-prepare`` (:mod:`fairseq_syntax.cli.prepare`, whose options are the fields
of the ``args`` these functions take); :func:`prepare` runs it all.
"""
from __future__ import annotations

import contextlib
import io
import itertools
import json
import logging
import os
import re
import shutil
import signal
import sys
import time

from tqdm import tqdm

from fairseq_syntax.data.binarize import align_and_binarize
from fairseq_syntax.data.chunked import ChunkStore, file_sha1, parse_shard, read_lines, run_chunked
from fairseq_syntax.durable_files import (
    atomic_write,
    file_sha256,
    replace_file,
    stamp_for,
    temporary_name,
    unstamp,
    vouched,
)
from fairseq_syntax.data.conllu import read_conllu
from fairseq_syntax.data.pair_filter import language_keep_file, length_keep, read_mask
from fairseq_syntax.errors import OptionError, SyntaxDataError
from fairseq_syntax.text_files import count_lines, open_text
from fairseq_syntax.parsing.base import (
    backend_options,
    effective_workers,
    load_parser,
    parse_chunked,
)
from fairseq_syntax.preparation.folder_lock import holding
from fairseq_syntax.preparation.record import UNFINISHED_FILE, LanguageRecord, PreparationRecord

logger = logging.getLogger(__name__)


def _count_lines(path):
    # a carriage return inside a line, which the readers downstream (BPE, fairseq-preprocess) would take as a
    # line break, is refused by every text reader here (data/text_files.py)
    return count_lines(path)


def _copy_text(src, dst):
    """Copy a whitespace-tokenised text file; empty lines are errors."""
    tmp = temporary_name(dst)
    try:
        with open_text(src) as fin, open(tmp, "w", encoding="utf-8") as fout:
            for i, line in enumerate(fin, 1):
                if not line.strip():
                    raise SyntaxDataError(f"{src}:{i}", "empty line: every line must hold one sentence")
                fout.write(line.rstrip("\r\n") + "\n")
    except BaseException:
        _remove(tmp)
        raise
    return replace_file(tmp, dst)


def _remove(path):
    if os.path.exists(path):
        os.remove(path)


def _sides(spec, option="--syntax"):
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

    backend = getattr(args, f"parser_{side}") or args.parser or "stanza"
    model = args.parser_model_source if side == "source" else args.parser_model_target
    options = backend_options(backend, lang=lang, model=model, model_dir=args.stanza_dir, gpu=args.gpu,
                              pretokenized=side in _sides(args.pretokenized or "none", "--pretokenized"))
    shown = options.get("model") or options.get("model_path") or options.get("model_dir") or lang
    what = f"{side} side ({lang}): {backend} parser, model {shown}"
    return backend, options, what


def load_side_parsers(args, sides, parsers):
    """Load the parser of every side in ``sides`` before any parsing starts, so that a wrong model fails in
    seconds with one line (not after the other side's parse). Kept in ``parsers`` when one process parses."""

    for lang, side in sides:
        backend, options, what = side_parser_spec(args, lang, side)
        t0 = time.perf_counter()
        parser = load_parser(backend, options, what)
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
            parsers[side] = load_parser(backend, options, what)
        parser = parsers[side]
    res = parse_chunked(raw, out, parser, (backend, options), workers=workers, chunk_size=args.chunk_size,
                        shard=shard, progress=not args.no_progress)
    if res.reused:
        logger.info("%s: %d sentences reused from finished chunks, %d parsed now", out, res.reused, res.processed)
    return res


def _write_tokens(conllu, path, units, progress=False):
    """The whitespace-tokenised text of a CoNLL-U file (surface tokens or words)."""


    tmp = temporary_name(path)
    try:
        with open(tmp, "w", encoding="utf-8") as f:
            for s in tqdm(read_conllu(conllu), desc=f"read {os.path.basename(conllu)}", unit="sent",
                          disable=not progress, mininterval=1.0):
                f.write(" ".join(s.forms(units)) + "\n")
    except BaseException:
        _remove(tmp)
        raise
    return replace_file(tmp, path)


def _conllu_blocks(path):
    """The sentences of a CoNLL-U file as text blocks (comments included), without parsing them."""
    block = []
    with open_text(path) as f:
        for line in f:
            if line.strip():
                block.append(line)
            elif block:
                yield "".join(block) + "\n"
                block = []
    if block:
        yield "".join(block) + "\n"


def _units(path):
    """Lines of a text file, or sentence blocks of a CoNLL-U file."""
    if path.endswith(".conllu"):
        yield from _conllu_blocks(path)
        return
    with open_text(path) as f:
        yield from f


def _first(path, n, out):
    """Copy the first n sentences of a text or CoNLL-U file to out (reading no further)."""
    tmp = temporary_name(out)  # shards of one job may write it at once
    with open(tmp, "w", encoding="utf-8") as f:
        f.writelines(itertools.islice(_units(path), n))
    return replace_file(tmp, out)


def _select(path, keep, out):
    """Copy the sentences of a text or CoNLL-U file whose entry in keep (booleans) is true to out (may be path)."""
    tmp = temporary_name(out)
    with open(tmp, "w", encoding="utf-8") as f:
        f.writelines(unit for unit, k in zip(_units(path), keep) if k)
    return replace_file(tmp, out)


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
    """The papers' training-pair filters on the tokenised text (fairseq_syntax.data.pair_filter): length
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
            _select(texts[("train", lang)], keep, texts[("train", lang)])
            if conllus[("train", lang)]:
                conllus[("train", lang)] = _select(conllus[("train", lang)], keep,
                                                   os.path.join(work, f"train.selected.{lang}.conllu"))
    logger.info("train: kept %d of %d pairs (%s)", kept, len(keep), filters)
    return kept


def _lowercase(path):
    tmp = temporary_name(path)
    with open(path, encoding="utf-8") as f, open(tmp, "w", encoding="utf-8") as out:
        for line in f:
            out.write(line.lower())
    replace_file(tmp, path)


def sides_to_parse(args, prefixes, syntax_sides):
    """[(lang, side)] of the syntax sides with a split that has raw text but no CoNLL-U (the parser's work)."""
    out = []
    for lang, side in ((args.source_lang, "source"), (args.target_lang, "target")):
        if side in syntax_sides and any(not os.path.exists(f"{pref}.{lang}.conllu") for pref in prefixes):
            out.append((lang, side))
    return out


def normalized_text(raw, out, lang):
    """``raw`` with sacremoses' punctuation normaliser applied to every line (the recipes' ``moses``
    normalisation), written to ``out``."""
    from sacremoses import MosesPunctNormalizer

    norm = MosesPunctNormalizer(lang)
    tmp = temporary_name(out)
    with open_text(raw) as fin, open(tmp, "w", encoding="utf-8") as fout:
        for line in fin:
            fout.write(norm.normalize(line.rstrip("\r\n")) + "\n")
    return replace_file(tmp, out)


def tokenised_text(args, pref, split, lang, side, syntax_sides, work, parsers=None):
    """Return (path of the whitespace-tokenised text, path of its CoNLL-U or None)."""
    conllu = f"{pref}.{lang}.conllu"
    raw = f"{pref}.{lang}"
    if split == "train" and args.train_first:  # read only what is used: the first N pairs
        if os.path.exists(conllu):
            conllu = _first(conllu, args.train_first, os.path.join(work, f"train.first.{lang}.conllu"))
        if os.path.exists(raw):
            raw = _first(raw, args.train_first, os.path.join(work, f"train.first.{lang}"))
    if getattr(args, f"normalize_{side}") == "moses" and side in syntax_sides and os.path.exists(raw) \
            and not os.path.exists(conllu):  # text prepare parses itself; given tokens were made so before
        raw = normalized_text(raw, os.path.join(work, f"{split}.normalized.{lang}"), lang)
    if side in syntax_sides:
        if not os.path.exists(conllu):
            if not os.path.exists(raw):
                raise SyntaxDataError(raw, "neither this file nor its .conllu exists")
            out = os.path.join(work, f"{split}.{lang}.conllu")
            parse_side(args, raw, out, lang, side, parsers=parsers)
            conllu = out
        return _write_tokens(conllu, os.path.join(work, f"{split}.tok.{lang}"), args.units,
                             not args.no_progress), conllu
    if os.path.exists(raw):
        return _copy_text(raw, os.path.join(work, f"{split}.tok.{lang}")), None
    if os.path.exists(conllu):
        return _write_tokens(conllu, os.path.join(work, f"{split}.tok.{lang}"), args.units), None
    raise SyntaxDataError(raw, "neither this file nor its .conllu exists")


def _load_bpe(code_path):
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
        stride = max(1, -(-_count_lines(texts[("train", langs[0])]) // args.bpe_sample))
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
        _remove(train_cat)
    with open(code_path, encoding="utf-8") as fc:
        learned = sum(1 for line in fc if not line.startswith("#version"))
    logger.info("BPE %s: %d merges learned (asked for %d)", name, learned, args.bpe_merges)
    return code_path


def apply_bpe_file(code_path, in_path, out_path, workers=1, chunk_size=BPE_CHUNK_SIZE, progress=True, bpe=None):
    """Apply BPE codes to a text file in resumable chunks over ``workers`` processes; returns the ChunkResult."""

    return run_chunked(read_lines(in_path), out_path, _bpe_chunk, f"bpe {file_sha1(code_path)}",
                       chunk_size=chunk_size, init=_load_bpe, init_args=(code_path,), state=bpe, workers=workers,
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
        bpe = _load_bpe(code_path) if args.workers <= 1 else None
        for lang in langs:
            codes[lang] = (code_path, bpe)
    out_paths = {}
    for (split, lang), path in texts.items():
        out = os.path.join(work, f"{split}.bpe.{lang}")
        code_path, bpe = codes[lang]
        apply_bpe_file(code_path, path, out, workers=args.workers, progress=progress, bpe=bpe)
        out_paths[(split, lang)] = out
    return out_paths, {lang: code_path for lang, (code_path, _) in codes.items()}


def _shard_token_lines(source, units, chunk_size):
    """The tokenised text of items a..b-1 of a training side, as the full run will write it, for a shard's
    language filter: from this shard's parse chunks, a given CoNLL-U file or the raw text."""

    kind, path = source

    def lines(a, b):
        if kind == "text":
            with open_text(path) as f:
                for line in itertools.islice(f, a, b):
                    yield line.rstrip("\r\n")
            return
        if kind == "parsed":
            store = ChunkStore(path, None)
            for c in range(a // chunk_size, -(-b // chunk_size)):
                data = store.read(c)
                if data is None:
                    raise SyntaxDataError(store.data_path(c), "this shard's parse chunk is missing or corrupt; "
                                          "run the shard again")
                for s in read_conllu(io.StringIO(data.decode("utf-8")), store.data_path(c)):
                    yield " ".join(s.forms(units))
            return
        blocks = "".join(itertools.islice(_conllu_blocks(path), a, b))
        for s in read_conllu(io.StringIO(blocks), path):
            yield " ".join(s.forms(units))

    return lines


def prepare_shard(args, shard, syntax_sides, work):
    """--shard I/N: parse (and language-filter) only shard I of the training pairs, committing chunks into
    WORKDIR; the same command without --shard then finds them finished and does the rest."""
    src, tgt = args.source_lang, args.target_lang
    parsers = {}
    load_side_parsers(args, sides_to_parse(args, [args.trainpref], syntax_sides), parsers)
    sources = {}
    total = None
    for lang, side in ((src, "source"), (tgt, "target")):
        conllu, raw = f"{args.trainpref}.{lang}.conllu", f"{args.trainpref}.{lang}"
        if args.train_first:
            if os.path.exists(conllu):
                conllu = _first(conllu, args.train_first, os.path.join(work, f"train.first.{lang}.conllu"))
            if os.path.exists(raw):
                raw = _first(raw, args.train_first, os.path.join(work, f"train.first.{lang}"))
        if side in syntax_sides and not os.path.exists(conllu):
            if not os.path.exists(raw):
                raise SyntaxDataError(raw, "neither this file nor its .conllu exists")
            out = os.path.join(work, f"train.{lang}.conllu")
            res = parse_side(args, raw, out, lang, side, shard=shard, parsers=parsers)
            print(f"shard {args.shard}: {lang}: parsed {res.processed} sentences ({res.reused} reused)")
            sources[lang] = ("parsed", out)
            total = res.items
        elif os.path.exists(raw) and side not in syntax_sides:
            sources[lang] = ("text", raw)
        elif os.path.exists(conllu):
            sources[lang] = ("conllu", conllu)
        else:
            raise SyntaxDataError(raw, "neither this file nor its .conllu exists")
    if args.lang_filter:
        if total is None:
            kind, path = sources[src]
            total = sum(1 for _ in _units(path)) if kind == "conllu" else _count_lines(path)
        a_lines = _shard_token_lines(sources[src], args.units, args.chunk_size)
        b_lines = _shard_token_lines(sources[tgt], args.units, args.chunk_size)

        def pairs(a, b):
            for x, y in zip(a_lines(a, b), b_lines(a, b)):
                yield x.strip(), y.strip()

        language_mask(args, None, work, items=pairs, total=total)
        print(f"shard {args.shard}: language filter done")
    print(f"shard {args.shard} done: run the same command without --shard once every shard is done")


#: test hook: prepare stops itself (SIGSTOP) after the step this names ("bpe": BPE applied; "tokens":
#: fairseq-preprocess's dictionaries and token datasets written; "syntax SPLIT LANG": that side's trees
#: binarized), so that a test can kill it there (tests/test_failures.py)
STOP_AT_ENV = "FAIRSEQ_SYNTAX_STOP_AT"


def _stop_here_for_tests(step: str) -> None:
    if os.environ.get(STOP_AT_ENV) == step:
        os.kill(os.getpid(), signal.SIGSTOP)


def check_paths(args, splits, work):
    """Before any work: --destdir and --workdir can be folders, and every split has its input on both sides
    (a missing valid file found after hours of parsing train would waste them)."""
    for flag, path in (("--destdir", args.destdir), ("--workdir", work)):
        if os.path.exists(path) and not os.path.isdir(path):
            raise SyntaxDataError(path, f"{flag} names a file, not a folder: give a folder (made when missing)")
    for split, pref in splits:
        for lang in (args.source_lang, args.target_lang):
            given = [p for p in (f"{pref}.{lang}.conllu", f"{pref}.{lang}") if os.path.exists(p)]
            if not given:
                raise SyntaxDataError(f"{pref}.{lang}", f"the {split} split's input: neither this file nor "
                                      f"{os.path.basename(pref)}.{lang}.conllu exists")
            for path in given:  # an empty split would make an empty data-bin (or fail inside BPE)
                if os.path.isfile(path) and os.path.getsize(path) == 0:
                    raise SyntaxDataError(path, f"empty: the {split} split has no sentences")


#: options that do not change what prepare writes into the data-bin
_NOT_IN_THE_DATA_BIN = {"workers", "no_progress", "overwrite", "shard", "record_only", "chunk_size"}


def unfinished_marker(args) -> bytes:
    """The content of DESTDIR/UNFINISHED_FILE: what it is, and the options of the run that writes the data-bin
    (a rerun with other options does not resume it silently)."""
    options = {k: v for k, v in sorted(vars(args).items()) if k not in _NOT_IN_THE_DATA_BIN}
    return json.dumps({"what": "prepare is writing this data-bin; if it was interrupted, run the same command "
                       "again", "options": options}, sort_keys=True).encode("utf-8") + b"\n"


def _check_destdir(args, work):
    """fairseq-preprocess refuses a --destdir with dictionaries in it, after the long steps: refuse it first,
    or with --overwrite remove the dictionaries it would refuse (the rest of the data-bin is rewritten). A
    data-bin that a killed prepare left unfinished (its marker, UNFINISHED_FILE) is rebuilt without
    --overwrite when this is the same command: running it again resumes. A rebuild removes the syntax datasets
    of the run before, so that none of a side this run does not prepare stays behind."""
    given = args.preprocess_args.split()
    sides = [(args.source_lang, "--srcdict"), (args.target_lang, "--tgtdict")]
    existing = [os.path.join(args.destdir, f"dict.{lang}.txt") for lang, option in sides if option not in given]
    existing = [d for d in existing if os.path.exists(d)]
    marker = os.path.join(args.destdir, UNFINISHED_FILE)
    unfinished = os.path.exists(marker)
    if unfinished:
        with open(marker, "rb") as f:
            same = f.read() == unfinished_marker(args)
        if not same and not args.overwrite:
            raise OptionError(f"--destdir {args.destdir} was left unfinished by a prepare with other options "
                              f"({marker}): run that command again to finish it, or give --overwrite to build "
                              "this one there")
        logger.info("%s: left unfinished by an interrupted prepare: resuming (finished parse and BPE work under "
                    "%s is reused; the data-bin's files are written again)", args.destdir, work)
        log = os.path.join(args.destdir, "preprocess.log")  # the interrupted run's fairseq-preprocess log
        if os.path.exists(log):
            os.remove(log)
    if not existing and not unfinished:
        return
    if not args.overwrite and not unfinished:
        raise OptionError(f"--destdir {args.destdir} already holds a data-bin ({', '.join(existing)}): give another "
                     f"--destdir, or --overwrite to rebuild it (finished parse and BPE work under {work} is reused)")
    for d in existing:
        os.remove(d)
    for name in os.listdir(args.destdir):
        if re.search(r"\.(words|heads|labels)\.(bin|idx)$", name):
            os.remove(os.path.join(args.destdir, name))


def fairseq_preprocess(argv):
    """fairseq-preprocess with these arguments, in this process (its workers are fairseq's own): dictionaries
    and token datasets. Its log also goes to DESTDIR/preprocess.log, as fairseq-preprocess writes it."""
    import logging as _logging

    from fairseq import options
    from fairseq_cli import preprocess

    args = options.get_preprocessing_parser().parse_args(argv)
    logger.info("fairseq-preprocess %s", " ".join(argv))
    before = list(preprocess.logger.handlers)
    try:
        preprocess.main(args)
    finally:  # fairseq adds a file handler per run: do not keep it (nor its open file) after this one
        for handler in preprocess.logger.handlers[:]:
            if handler not in before and isinstance(handler, _logging.FileHandler):
                preprocess.logger.removeHandler(handler)
                handler.close()


def language_record(args, lang, side, syntax_sides, parsed_here):
    """How this preparation made a language's tokens (:mod:`fairseq_syntax.preparation.record`): the parser is
    recorded when prepare ran it on this side or the options name one (a side given as CoNLL-U: the parser that
    made it), with absolute model paths and without GPU options (the record is for decoding elsewhere)."""
    pretokenized = side in _sides(args.pretokenized or "none", "--pretokenized")
    parser = None
    if parsed_here or getattr(args, f"parser_{side}") or args.parser:
        backend, options, _ = side_parser_spec(args, lang, side)
        options = {k: v for k, v in options.items() if k != "gpu"}
        for key in ("model_path", "model", "model_dir", "path"):
            value = options.get(key)
            if isinstance(value, str) and os.path.exists(value):
                options[key] = os.path.abspath(value)
        parser = {"backend": backend, "options": options}
    tokenizer = getattr(args, f"tokenizer_{side}")
    if tokenizer == "auto":
        tokenizer = "parser" if parser is not None and side in syntax_sides and not pretokenized else "given"
    norm = getattr(args, f"normalize_{side}")
    return LanguageRecord(tokenizer=tokenizer, normalize=None if norm == "none" else norm,
                          lowercase=bool(args.lowercase), units=args.units, parser=parser)


def write_record(args, syntax_sides, codes, parsed_sides=()):
    """DESTDIR/preparation.json, and the BPE codes beside it (what decoding raw text needs); ``parsed_sides``:
    the sides prepare parsed itself."""
    languages = {lang: language_record(args, lang, side, syntax_sides, side in parsed_sides)
                 for lang, side in ((args.source_lang, "source"), (args.target_lang, "target"))}
    bpe = {}
    for lang, path in codes.items():
        name = "bpe.codes" if not args.separate_bpe else f"bpe.codes.{lang}"
        dest = os.path.join(args.destdir, name)
        shutil.copyfile(path, temporary_name(dest))
        replace_file(temporary_name(dest), dest)
        bpe[lang] = name
    return PreparationRecord(languages=languages, bpe=bpe or None, bpe_merges=args.bpe_merges).save(args.destdir)


def record_existing(args, syntax_sides, work):
    """--record-only: write the preparation record of a data-bin prepared before records existed (the same
    options as its preparation; its BPE codes are taken from WORKDIR), touching nothing else."""
    if not os.path.exists(os.path.join(args.destdir, f"dict.{args.source_lang}.txt")):
        raise SyntaxDataError(args.destdir, "--record-only: no data-bin here (no dict.SRC.txt)")
    codes = {}
    if args.bpe_merges:
        groups = [(args.source_lang, args.target_lang)] if not args.separate_bpe else [(args.source_lang,),
                                                                                      (args.target_lang,)]
        for langs in groups:
            path = os.path.join(work, f"bpe.codes.{'joint' if len(langs) == 2 else langs[0]}")
            if not os.path.exists(path):
                raise SyntaxDataError(path, "--record-only: the preparation's BPE codes are not in its work folder")
            codes.update({lang: path for lang in langs})
    path = write_record(args, syntax_sides, codes)
    print(f"recorded {path}")
    return path


def prepare(args):
    """Run the whole preparation (see the module docstring) for ``args``, the options of
    ``fairseq-syntax-prepare`` (its parsed command line: :func:`fairseq_syntax.cli.prepare.get_parser`).
    Inconsistent options raise :class:`~fairseq_syntax.errors.OptionError`, bad data
    :class:`~fairseq_syntax.errors.SyntaxDataError`."""

    t_start = time.perf_counter()
    try:
        syntax_sides = _sides(args.syntax)
        _sides(args.pretokenized or "none", "--pretokenized")
        shard = parse_shard(args.shard)
    except ValueError as e:
        raise OptionError(str(e)) from None
    if args.lowercase and syntax_sides:
        raise OptionError("--lowercase is for corpora without syntax (--syntax none): lowercased text would no "
                          "longer match the forms of the parses")
    work = args.workdir or os.path.join(args.destdir, "work")
    splits = [(s, p) for s, p in (("train", args.trainpref), ("valid", args.validpref), ("test", args.testpref)) if p]
    if getattr(args, "record_only", False):
        return record_existing(args, syntax_sides, work)
    check_paths(args, splits if shard is None else splits[:1], work)
    if shard is not None:
        os.makedirs(work, exist_ok=True)
        os.makedirs(args.destdir, exist_ok=True)
        args.chunk_size = -(-max(1, args.chunk_size) // 256) * 256
        prepare_shard(args, shard, syntax_sides, work)  # shards of one job share the work folder: no lock
        return
    with holding([args.destdir, work]):
        _prepare_locked(args, splits, syntax_sides, work, t_start)


def _prepare_locked(args, splits, syntax_sides, work, t_start):
    """The whole (unsharded) preparation, its folders locked: the checks that need no writing first (the
    parsers load), so that a run refused by them leaves the data-bin as it was."""
    src, tgt = args.source_lang, args.target_lang
    parsers = {}
    to_parse = sides_to_parse(args, [pref for _, pref in splits], syntax_sides)
    load_side_parsers(args, to_parse, parsers)
    _check_destdir(args, work)
    unfinished = os.path.join(args.destdir, UNFINISHED_FILE)
    # until the record is written, the data-bin is unfinished (a rerun resumes, training refuses it)
    atomic_write(unfinished, unfinished_marker(args))
    for lang in (src, tgt):  # a label dictionary from an earlier run would be stale
        stale = os.path.join(args.destdir, f"dict.{lang}.labels.txt")
        if os.path.exists(stale):
            os.remove(stale)
    args.chunk_size = -(-max(1, args.chunk_size) // 256) * 256  # whole parser batches: the steps' chunks coincide
    texts, conllus = {}, {}
    for split, pref in splits:
        for lang, side in ((src, "source"), (tgt, "target")):
            texts[(split, lang)], conllus[(split, lang)] = tokenised_text(
                args, pref, split, lang, side, syntax_sides, work, parsers
            )
        n_src, n_tgt = _count_lines(texts[(split, src)]), _count_lines(texts[(split, tgt)])
        if n_src != n_tgt:
            raise SyntaxDataError(
                f"{pref}.{{{src},{tgt}}}",
                f"line count mismatch in split '{split}': {n_src} {src} sentences vs {n_tgt} {tgt} sentences",
            )
        logger.info("%s: %d sentence pairs", split, n_src)
    if args.max_words or args.max_ratio or args.lang_filter:
        select_training_pairs(args, texts, conllus, work)
    if args.lowercase:
        for (split, lang), path in texts.items():
            _lowercase(path)

    bpe_paths, codes = learn_and_apply_bpe(args, texts, work, progress=not args.no_progress)
    _stop_here_for_tests("bpe")

    cmd = ["--source-lang", src, "--target-lang", tgt, "--destdir", args.destdir, "--workers", str(args.workers),
           "--dataset-impl", "mmap"]
    for split, _ in splits:
        cmd += [f"--{split}pref", os.path.join(work, f"{split}.bpe")]
    if not args.separate_bpe:
        cmd.append("--joined-dictionary")
    cmd += args.preprocess_args.split()
    fairseq_preprocess(cmd)
    _stop_here_for_tests("tokens")

    for split, _ in splits:
        for lang, side in ((src, "source"), (tgt, "target")):
            if side not in syntax_sides:
                continue
            logger.info("%s %s: aligning the trees to the subwords and binarizing them", split, lang)
            align_and_binarize(conllus[(split, lang)], bpe_paths[(split, lang)], args.destdir, split, src, tgt,
                               lang, args.units, text_prefix=os.path.join(work, f"{split}.{lang}"),
                               progress=not args.no_progress,
                               total=None if args.no_progress else _count_lines(bpe_paths[(split, lang)]))
            _stop_here_for_tests(f"syntax {split} {lang}")
    write_record(args, syntax_sides, codes, [side for _, side in to_parse])
    os.remove(unfinished)
    logger.info("prepared %s in %.1fs", args.destdir, time.perf_counter() - t_start)
    print(f"data-bin ready: {args.destdir}")


