"""``prepare --text-only``: each language's tokens, and its parse where one is wanted, before any data-bin is
made from them: the text that several data-bins of one corpus share (the recipes' ``WORK/text``), made once.

For each split and language it writes into ``--workdir``:

* ``SPLIT.LANG.conllu`` for a parsed language (a syntax side, or one whose tokeniser is the parser), or when
  the input gives ``PREF.LANG.conllu`` (copied as it is);
* ``SPLIT.LANG`` (whitespace tokens) for the other languages.

How the tokens are made, per side (``--tokenizer-SIDE``): ``parser`` the parser tokenises the raw text;
``moses`` sacremoses' tokeniser with aggressive hyphen splitting, or, for a parsed side, the parser tokenises
(``--normalize-SIDE moses`` first, either way); ``kytea`` ``kytea -notags``, then the parser keeps those
tokens; ``given`` the raw text is tokenised already (parsed ``--pretokenized``). Each output is reused when
its stamp vouches for it (made from inputs of this SHA-256 with these options:
:mod:`fairseq_syntax.durable_files`), else made again.

``WORKDIR/text.json`` (:data:`TEXT_RECORD`) says per language how its tokens were made: the
:class:`~fairseq_syntax.preparation.databin_record.LanguageRecord` fields a data-bin made from this text records
for decoding raw text (``prepare --text-record WORKDIR/text.json``), and ``files``: each file the run made,
with its SHA-256. It is removed before a run changes any file and written once every file is made, so that a
run stopped midway leaves none; ``prepare --text-record`` takes only the files of the folder it lists, as
listed (:func:`check_text_files`), and refuses them changed at the end of its run.
"""
from __future__ import annotations

import json
import logging
import os
import shutil

from fairseq_syntax.durable_files import (
    atomic_write,
    file_sha256,
    replace_file,
    stamp_for,
    stamped_sha256,
    temporary_name,
    unstamp,
    vouched,
)
from fairseq_syntax.errors import OptionError, SyntaxDataError
from fairseq_syntax.parsing.identity import parser_identity
from fairseq_syntax.preparation.folder_lock import holding
from fairseq_syntax.preparation.parse_step import load_side_parsers, parse_side, side_parser_spec
from fairseq_syntax.preparation.side_texts import (
    first_units,
    kytea_tokens,
    moses_tokens,
    normalized_text,
    remove_file,
)

logger = logging.getLogger(__name__)

TEXT_RECORD = "text.json"


def side_plan(args, side, syntax_sides, prefixes, lang):
    """How one side's text is made: (tokenizer, parsed, pretokenized), ``auto`` resolved (the parser for a
    syntax side, else the text as given). A side is parsed when it gets syntax or its tokeniser is the parser
    (and none of its splits is given as CoNLL-U already)."""
    tokenizer = args.side(side).tokenizer
    if tokenizer == "auto":
        tokenizer = "parser" if side in syntax_sides else "given"
    parsed = side in syntax_sides or tokenizer == "parser"
    has_raw = any(not os.path.exists(f"{pref}.{lang}.conllu") for pref in prefixes)
    return tokenizer, parsed and has_raw, tokenizer in ("given", "kytea")


def language_entry(args, lang, side, plan, given_conllu):
    """The text record of one language: :class:`~fairseq_syntax.preparation.databin_record.LanguageRecord`'s
    tokenizer, normalize and parser, and whether the parser kept given tokens."""
    tokenizer, parsed, pretokenized = plan
    parser = None
    if parsed or given_conllu:
        backend, options, _ = side_parser_spec(args, lang, side)
        options = {k: v for k, v in options.items() if k != "gpu"}
        for key in ("model_path", "model", "model_dir", "path"):
            if isinstance(options.get(key), str) and os.path.exists(options[key]):
                options[key] = os.path.abspath(options[key])
        parser = {"backend": backend, "options": options}
        if tokenizer == "moses":  # normalised, then tokenised by the parser
            tokenizer = "parser"
    norm = args.side(side).normalize
    return {"tokenizer": tokenizer, "normalize": None if norm == "none" else norm, "parser": parser,
            "pretokenized": bool(pretokenized and parser)}


def copy_durably(src, out):
    """``out`` a copy of ``src``, written atomically."""
    shutil.copyfile(src, temporary_name(out))
    replace_file(temporary_name(out), out)


def make_split(args, pref, split, lang, side, entry, plan, work, parsers):
    """One split of one language: WORK/SPLIT.LANG.conllu or WORK/SPLIT.LANG (see the module docstring)."""
    tokenizer, parsed, pretokenized = plan
    given = f"{pref}.{lang}.conllu"
    source = given if os.path.exists(given) else f"{pref}.{lang}"
    if not os.path.exists(source):
        raise SyntaxDataError(source, "neither this file nor its .conllu exists")
    out = os.path.join(work, f"{split}.{lang}" + (".conllu" if source == given or parsed else ""))
    inputs = {"input": file_sha256(source), "entry": entry, "train_first": args.train_first if split == "train"
              else 0, "kytea": tokenizer == "kytea"}
    if parsed and source != given:  # parsed here: the trees are also the model's behind the entry's options
        backend, options, _ = side_parser_spec(args, lang, side)
        inputs["parser"] = parser_identity(backend, options)
    if vouched(out, inputs):
        logger.info("%s: reused (made from the same input with the same options)", out)
        return out
    unstamp(out)
    for stale in (os.path.join(work, f"{split}.{lang}"), os.path.join(work, f"{split}.{lang}.conllu")):
        if stale != out:  # the other kind of output of an earlier run with other options
            unstamp(stale)
            remove_file(stale)
    text = source
    if split == "train" and args.train_first:
        text = first_units(source, args.train_first, os.path.join(work, f"train.first.{lang}" +
                                                                   (".conllu" if source == given else "")))
    if source == given:
        copy_durably(text, out)
    else:
        if entry["normalize"] == "moses":
            text = normalized_text(text, os.path.join(work, f"{split}.normalized.{lang}"), lang)
        if tokenizer == "kytea":
            text = kytea_tokens(text, os.path.join(work, f"{split}.kytea.{lang}"))
        if parsed:
            parse_side(args, text, out, lang, side, parsers=parsers)
        elif tokenizer == "moses":
            moses_tokens(text, out, lang)
        else:
            copy_durably(text, out)
    for scratch in ("first", "normalized", "kytea"):
        name = f"{split}.{scratch}.{lang}"
        remove_file(os.path.join(work, name))
        remove_file(os.path.join(work, name + ".conllu"))
    stamp_for(out, inputs)
    return out


def prepare_text(args, splits, syntax_sides, work):
    """``--text-only``: every split of both languages into ``work`` and the text record (module docstring)."""
    src, tgt = args.source_lang, args.target_lang
    if args.pretokenized:
        raise OptionError("--text-only: say how each side's tokens are made with --tokenizer-SIDE (given or kytea: "
                          "the parser keeps the tokens) rather than --pretokenized")
    prefixes = [pref for _, pref in splits]
    plans = {side: side_plan(args, side, syntax_sides, prefixes, lang) for lang, side in ((src, "source"),
                                                                                          (tgt, "target"))}
    args.pretokenized = ",".join(side for side, (_, _, pre) in plans.items() if pre)  # the parser keeps them
    os.makedirs(work, exist_ok=True)
    with holding([work]):
        parsers = {}
        load_side_parsers(args, [(lang, side) for lang, side in ((src, "source"), (tgt, "target"))
                                 if plans[side][1]], parsers)
        remove_file(os.path.join(work, TEXT_RECORD))  # until every file is made, none describes the folder
        record = {}
        for lang, side in ((src, "source"), (tgt, "target")):
            given = any(os.path.exists(f"{pref}.{lang}.conllu") for pref in prefixes)
            record[lang] = entry = language_entry(args, lang, side, plans[side], given)
            files = {}
            for split, pref in splits:
                logger.info("%s %s: %s", split, lang, "parse" if plans[side][1] else f"tokens ({entry['tokenizer']})")
                out = make_split(args, pref, split, lang, side, entry, plans[side], work, parsers)
                files[os.path.basename(out)] = stamped_sha256(out)  # vouched for or stamped just now
            entry["files"] = files
        atomic_write(os.path.join(work, TEXT_RECORD), json.dumps(record, indent=1, sort_keys=True).encode() + b"\n")
    print(f"text ready: {work}")


def check_text_files(record_path, record, paths):
    """The SHA-256 of each of ``paths`` (files a prepare reads) that lies in the text folder of ``record_path``
    (symbolic links followed: the recipes link the text into each variant's folder): each must be a file
    the record lists, as listed; ``{real path: SHA-256}``."""
    folder = os.path.realpath(os.path.dirname(record_path))
    listed = {}
    for entry in record.values():
        if "files" not in entry:
            raise SyntaxDataError(record_path, "lists no files (made by an earlier version): run prepare "
                                  "--text-only again (it reuses what it made)")
        listed.update(entry["files"])
    digests = {}
    for path in paths:
        real = os.path.realpath(path)
        if os.path.dirname(real) != folder:
            continue
        name = os.path.basename(real)
        if name not in listed:
            raise SyntaxDataError(path, f"not made by the --text-only run {record_path} records (it lists "
                                  f"{', '.join(sorted(listed))}): make the text again with this split")
        digest = file_sha256(real)
        if digest != listed[name]:
            raise SyntaxDataError(path, f"not the file text.json lists ({record_path}): a --text-only run changed "
                                  "it and did not finish, or it was edited; make the text again")
        digests[real] = digest
    return digests


def read_text_record(path):
    """The text record ``--text-only`` wrote (language -> entry)."""
    try:
        with open(path, encoding="utf-8") as f:
            record = json.load(f)
        for lang, entry in record.items():
            if not {"tokenizer", "normalize", "parser", "pretokenized"} <= set(entry):
                raise ValueError(f"language {lang!r} lacks a field")
    except (OSError, ValueError, AttributeError) as e:
        raise SyntaxDataError(path, f"not a text record of prepare --text-only: {e}") from None
    return record
