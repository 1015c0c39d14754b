"""The data-bin folder before and around the work: its paths checked before any work, the marker of an
unfinished preparation (the options of the run writing it), a finished data-bin refused without
``--overwrite``, fairseq-preprocess run in this process.
"""
from __future__ import annotations

import json
import logging
import os
import re

from fairseq_syntax.errors import OptionError, SyntaxDataError
from fairseq_syntax.preparation.databin_record import UNFINISHED_FILE

logger = logging.getLogger(__name__)


def check_paths(args, splits, work, destdir=True):
    """Before any work: --destdir and --workdir can be folders, and every split has its input on both sides
    (a missing valid file found after hours of parsing train would waste them)."""
    for flag, path in ((("--destdir", args.destdir),) if destdir else ()) + (("--workdir", work),):
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
NOT_IN_THE_DATA_BIN = {"workers", "no_progress", "overwrite", "shard", "record_only", "chunk_size",
                       "text_digests", "text_record_digest"}  # the last two: --text-record's check of the text



def unfinished_marker(args) -> bytes:
    """The content of DESTDIR/UNFINISHED_FILE: what it is, and the options of the run that writes the data-bin
    (a rerun with other options does not resume it silently)."""
    options = {k: v for k, v in sorted(vars(args).items()) if k not in NOT_IN_THE_DATA_BIN}
    return json.dumps({"what": "prepare is writing this data-bin; if it was interrupted, run the same command "
                       "again", "options": options}, sort_keys=True).encode("utf-8") + b"\n"



def check_destdir(args, work):
    """fairseq-preprocess refuses a --destdir with dictionaries in it, after the long steps: refuse it first,
    or with --overwrite remove the dictionaries it would refuse (the rest of the data-bin is rewritten). A
    data-bin that a killed prepare left unfinished (its marker, UNFINISHED_FILE) is rebuilt without
    --overwrite when this is the same command: running it again resumes. A rebuild removes the dictionaries
    (of any language, but those given with --srcdict / --tgtdict) and the syntax and token datasets (of any
    language pair) of the run before, so that none of a side, split or pair this run does not prepare stays
    behind (a test split of the data-bin before, beside this run's dictionary, would decode into other
    words)."""
    given = args.preprocess_args.split()
    kept = {os.path.realpath(given[i + 1]) for i, option in enumerate(given[:-1]) if option in ("--srcdict",
                                                                                              "--tgtdict")}
    kept |= {os.path.realpath(option.split("=", 1)[1]) for option in given  # --srcdict=PATH, the other spelling
             if option.startswith(("--srcdict=", "--tgtdict="))}
    names = sorted(os.listdir(args.destdir)) if os.path.isdir(args.destdir) else []
    # every dictionary of the data-bin before, of any language (a rebuild for another pair would leave the
    # old pair's dictionaries and datasets beside a dictionary they no longer match), but one given to this run
    existing = [os.path.join(args.destdir, name) for name in names if re.match(r"^dict\..+\.txt$", name)]
    existing = [d for d in existing if os.path.realpath(d) not in kept]
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
    # the syntax datasets, and the token datasets of any language pair: of splits this run may not write too,
    # and with --srcdict and --tgtdict given (no dictionary of ours to find)
    tokens = re.compile(r"^[^.]+\.[^.]+-[^.]+\.[^.]+\.(bin|idx)$")
    datasets = sorted(os.path.join(args.destdir, name) for name in names
                      if re.search(r"\.(words|heads|labels|firstwords)\.(bin|idx)$", name) or tokens.match(name))
    if not existing and not datasets and not unfinished:
        return
    if not args.overwrite and not unfinished:
        shown = existing or datasets[:2] + (["..."] if len(datasets) > 2 else [])
        raise OptionError(f"--destdir {args.destdir} already holds a data-bin ({', '.join(shown)}): give another "
                     f"--destdir, or --overwrite to rebuild it (finished parse and BPE work under {work} is reused)")
    for path in existing + datasets:
        os.remove(path)



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
