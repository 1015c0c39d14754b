"""The data-bin's record of how it was made (``preparation.json``, :mod:`fairseq_syntax.preparation.databin_record`):
each language's tokeniser, normalisation and parser, and the BPE codes copied beside it.
"""
from __future__ import annotations

import logging
import os
import shutil

from fairseq_syntax.durable_files import (
    file_sha256,
    replace_file,
    temporary_name,
)
from fairseq_syntax.errors import OptionError, SyntaxDataError
from fairseq_syntax.preparation.bpe import check_codes_segment_data_bin
from fairseq_syntax.preparation.parse_step import side_parser_spec, sides_of, sides_to_parse
from fairseq_syntax.preparation.databin_record import LanguageRecord, PreparationRecord
from fairseq_syntax.preparation.text_only import check_text_files, read_text_record

logger = logging.getLogger(__name__)


def language_record(args, lang, side, syntax_sides, parsed_here):
    """How this preparation made a language's tokens (:mod:`fairseq_syntax.preparation.databin_record`): the parser is
    recorded when prepare ran it on this side or the options name one (a side given as CoNLL-U: the parser that
    made it), with absolute model paths and without GPU options (the record is for decoding elsewhere)."""
    if args.text_record:  # the text was made by prepare --text-only: its record says how
        entry = read_text_record(args.text_record)[lang]
        return LanguageRecord(tokenizer=entry["tokenizer"], normalize=entry["normalize"],
                              lowercase=bool(args.lowercase), units=args.units, parser=entry["parser"])
    pretokenized = side in sides_of(args.pretokenized or "none", "--pretokenized")
    parser = None
    if parsed_here or args.side(side).parser_named:
        backend, options, _ = side_parser_spec(args, lang, side)
        options = {k: v for k, v in options.items() if k != "gpu"}
        for key in ("model_path", "model", "model_dir", "path"):
            value = options.get(key)
            if isinstance(value, str) and os.path.exists(value):
                options[key] = os.path.abspath(value)
        parser = {"backend": backend, "options": options}
    tokenizer = args.side(side).tokenizer
    if tokenizer == "auto":
        tokenizer = "parser" if parser is not None and side in syntax_sides and not pretokenized else "given"
    elif tokenizer == "moses" and parsed_here and side in syntax_sides:
        tokenizer = "parser"  # a syntax side's parser tokenised the normalised text (as --text-only records it)
    norm = args.side(side).normalize
    return LanguageRecord(tokenizer=tokenizer, normalize=None if norm == "none" else norm,
                          lowercase=bool(args.lowercase), units=args.units, parser=parser)



def _text_inputs(args):
    """The files of the text this run reads: each split's and language's parse and/or tokens."""
    out = []
    for pref in (args.trainpref, args.validpref, args.testpref):
        for lang in (args.source_lang, args.target_lang) if pref else ():
            out += [p for p in (f"{pref}.{lang}.conllu", f"{pref}.{lang}") if os.path.exists(p)]
    return out


def check_text_record(args):
    """--text-record: the record names both languages, the files this run reads from its text folder are the
    ones it lists (kept in ``args.text_digests`` and ``args.text_record_digest`` for :func:`recheck_text`), and no option of this run says
    otherwise."""
    record = read_text_record(args.text_record)
    for lang in (args.source_lang, args.target_lang):
        if lang not in record:
            raise SyntaxDataError(args.text_record, f"no language {lang!r} (it records {sorted(record)})")
    args.text_digests = check_text_files(args.text_record, record, _text_inputs(args))
    args.text_record_digest = file_sha256(args.text_record)
    given = [flag for flag, value in (("--parser", args.parser), ("--parser-source", args.parser_source),
                                      ("--parser-target", args.parser_target), ("--pretokenized", args.pretokenized),
                                      ("--tokenizer-source", args.tokenizer_source != "auto" and args.tokenizer_source),
                                      ("--tokenizer-target", args.tokenizer_target != "auto" and args.tokenizer_target),
                                      ("--normalize-source", args.normalize_source != "none" and args.normalize_source),
                                      ("--normalize-target", args.normalize_target != "none" and args.normalize_target))
             if value]
    if given:
        raise OptionError(f"--text-record {args.text_record} says how the text was made: give none of "
                          f"{', '.join(given)}")



def recheck_text(args):
    """--text-record, at the end of the run: the text and its record are as at the start (another --text-only
    run into the folder while this one read it would mix two texts in one data-bin)."""
    if args.text_record_digest is None:
        return
    for path, digest in args.text_digests.items():
        if not os.path.exists(path) or file_sha256(path) != digest:
            raise SyntaxDataError(path, "changed while this prepare ran (another prepare --text-only into its "
                                  "folder?): run this prepare again once that one has finished")
    current = file_sha256(args.text_record) if os.path.exists(args.text_record) else None
    if current != args.text_record_digest:
        raise SyntaxDataError(args.text_record, "changed while this prepare ran (another prepare --text-only into "
                              "its folder?): run this prepare again once that one has finished")


def spm_entries(args, models) -> dict:
    """Each language's SentencePiece model copied into the data-bin (``spm.model`` for one model of both,
    ``spm.LANG.model`` each otherwise) and its record entry (:mod:`.databin_record`)."""
    from fairseq_syntax.data.alignment.piece_align import load_sentencepiece

    joint = len(set(models.values())) == 1 and len(models) == 2
    out = {}
    for lang, path in models.items():
        name = "spm.model" if joint else f"spm.{lang}.model"
        dest = os.path.join(args.destdir, name)
        shutil.copyfile(path, temporary_name(dest))
        replace_file(temporary_name(dest), dest)
        out[lang] = {"file": name, "sha256": file_sha256(dest), "pieces": load_sentencepiece(dest).get_piece_size(),
                     "source": None if args.spm_vocab_size else os.path.abspath(path)}
    return out


def write_record(args, syntax_sides, codes, parsed_sides=(), spm_models=None, tree_control=None):
    """DESTDIR/preparation.json, and the BPE codes or SentencePiece models beside it (what decoding raw text
    needs); ``parsed_sides``: the sides prepare parsed itself. With --text-record, the text is checked first
    (:func:`recheck_text`)."""
    recheck_text(args)
    languages = {lang: language_record(args, lang, side, syntax_sides, side in parsed_sides)
                 for lang, side in ((args.source_lang, "source"), (args.target_lang, "target"))}
    bpe = {}
    for lang, path in codes.items():
        name = "bpe.codes" if not args.separate_bpe else f"bpe.codes.{lang}"
        dest = os.path.join(args.destdir, name)
        shutil.copyfile(path, temporary_name(dest))
        replace_file(temporary_name(dest), dest)
        bpe[lang] = name
    spm = spm_entries(args, spm_models) if spm_models else None
    return PreparationRecord(languages=languages, bpe=bpe or None, bpe_merges=args.bpe_merges,
                             spm=spm, tree_control=tree_control).save(args.destdir)



def record_existing(args, syntax_sides, work, prefixes):
    """--record-only: write the preparation record of a data-bin prepared before records existed (the same
    options as its preparation; its BPE codes are taken from WORKDIR, and refused unless they segment the data-bin's
    sentences as it holds them: :func:`check_codes_segment_data_bin`), touching nothing else. The sides its
    parser parsed are the ones whose splits (``prefixes``) have raw text without CoNLL-U, as in preparation:
    their tokens are the parser's (a default parser too, named by no option)."""
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
            for lang in langs:
                check_codes_segment_data_bin(path, args.destdir, args.source_lang, args.target_lang, lang)
            codes.update({lang: path for lang in langs})
    path = write_record(args, syntax_sides, codes, [side for _, side in sides_to_parse(args, prefixes, syntax_sides)])
    print(f"recorded {path}")
    return path
