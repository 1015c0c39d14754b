"""One command from a parallel corpus to a ready fairseq data-bin with syntax.

Steps, for each split and side:

1. syntax sides: use ``PREF.LANG.conllu`` if it exists, else parse
   ``PREF.LANG`` with the chosen parser into ``WORKDIR/SPLIT.LANG.conllu``;
   the tokenised text is the parse's surface tokens (or syntactic words with
   ``--units words``). Sides without syntax are tokenised as ``--tokenizer-SIDE``
   says (as given by default);
2. check that every split has the same number of lines on both sides;
   training pairs may be selected first (``--train-first``, ``--max-words``,
   ``--max-ratio``: the papers' length filters, counted on the tokenised
   text; ``--lang-filter``: language identification) and sides without
   syntax lowercased (``--lowercase``);
3. learn BPE on train with subword-nmt (joint or separate, N merges) and
   apply it to every split; or SentencePiece (a model learned on the training
   text or given) on each sentence's raw text (a syntax side: the text its
   parser read);
4. run ``fairseq-preprocess`` on the segmented text (a given dictionary that
   turns too many training tokens into ``<unk>`` stops it here);
5. align the trees to the subwords (BPE: by re-joining them into the tokens;
   SentencePiece: by character offsets into the raw sentence) and binarize them
   next to the tokens.

The command is ``fairseq-syntax-prepare`` (:mod:`fairseq_syntax.cli.prepare`, whose options are the fields
of the ``args`` these functions take); :func:`prepare` runs it all, one preparation per folder
(:mod:`.folder_lock`). The steps are modules of this package: :mod:`.parse_step` (1), :mod:`.pair_selection`
(2), :mod:`.bpe` or :mod:`.sentencepiece_step` (3; :mod:`.segmentation` the options and checks around them),
:mod:`.destdir` (the data-bin folder and fairseq-preprocess, 4), the alignment and binarizing of
:mod:`fairseq_syntax.data.alignment.binarize` (5), :mod:`.record_step` (the record), :mod:`.shards` (one piece of
a sharded job); :mod:`.side_texts` their text files. ``--text-only`` stops after step 1 and keeps the text for
several data-bins (:mod:`.text_only`).
"""
from __future__ import annotations

import logging
import os
import time

from fairseq_syntax.data.alignment.binarize import align_and_binarize
from fairseq_syntax.preparation.chunked import parse_shard
from fairseq_syntax.durable_files import (
    atomic_write,
)
from fairseq_syntax.errors import OptionError, SyntaxDataError
from fairseq_syntax.preparation.bpe import learn_and_apply_bpe
from fairseq_syntax.preparation.destdir import (
    check_destdir,
    check_paths,
    fairseq_preprocess,
    unfinished_marker,
)
from fairseq_syntax.preparation.folder_lock import holding
from fairseq_syntax.preparation.options import PrepareOptions
from fairseq_syntax.preparation.pair_selection import select_training_pairs
from fairseq_syntax.preparation.parse_step import (
    kept_tokens_sides,
    load_side_parsers,
    sides_of,
    sides_to_parse,
    tokenised_text,
)
from fairseq_syntax.preparation import segmentation
from fairseq_syntax.preparation.databin_record import UNFINISHED_FILE
from fairseq_syntax.preparation.record_step import check_text_record, record_existing, write_record
from fairseq_syntax.preparation.sentencepiece_step import raw_sentences, segment_with_models
from fairseq_syntax.preparation.shards import prepare_shard
from fairseq_syntax.preparation.text_only import prepare_text
from fairseq_syntax.preparation.tree_control_step import apply_tree_control, control_of, record_entry
from fairseq_syntax.preparation.side_texts import count_lines_of, lowercase_file

logger = logging.getLogger(__name__)


def prepare(options):
    """Run the whole preparation (see the module docstring) for ``options``, the
    :class:`~fairseq_syntax.preparation.options.PrepareOptions` of ``fairseq-syntax-prepare`` (or its parsed
    command line, :func:`fairseq_syntax.cli.prepare.get_parser`, made into them here), handed to every step.
    Inconsistent options raise :class:`~fairseq_syntax.errors.OptionError`, bad data
    :class:`~fairseq_syntax.errors.SyntaxDataError`."""
    args = options if isinstance(options, PrepareOptions) else PrepareOptions.from_namespace(options)

    t_start = time.perf_counter()
    try:
        syntax_sides = sides_of(args.syntax)
        sides_of(args.pretokenized or "none", "--pretokenized")
        shard = parse_shard(args.shard)
    except ValueError as e:
        raise OptionError(str(e)) from None
    if args.lowercase and syntax_sides:
        raise OptionError("--lowercase is for corpora without syntax (--syntax none): lowercased text would no "
                          "longer match the forms of the parses")
    work = args.workdir or os.path.join(args.destdir, "work")
    splits = [(s, p) for s, p in (("train", args.trainpref), ("valid", args.validpref), ("test", args.testpref)) if p]
    control_of(args)  # a kind it does not know stops here
    if args.tree_control and (args.text_only or args.record_only):
        raise OptionError(f"--tree-control is applied when the data-bin is made: not with "
                          f"--{'text-only' if args.text_only else 'record-only'}")
    if args.text_only:
        check_paths(args, splits, args.workdir, destdir=False)
        check_unsegmented(args, splits, syntax_sides)
        return prepare_text(args, splits, syntax_sides, args.workdir)
    if args.text_record:
        check_text_record(args)
    segmentation.resolve(args, syntax_sides)
    if args.text_record is None:  # the syntax sides' tokenisers that hand the parser tokens
        args.pretokenized = kept_tokens_sides(args, syntax_sides)
    if args.record_only:
        return record_existing(args, syntax_sides, work, [pref for _, pref in splits])
    check_paths(args, splits if shard is None else splits[:1], work)
    check_unsegmented(args, splits, syntax_sides)
    if shard is not None:
        os.makedirs(work, exist_ok=True)
        os.makedirs(args.destdir, exist_ok=True)
        args.chunk_size = -(-max(1, args.chunk_size) // 256) * 256
        prepare_shard(args, shard, syntax_sides, work)  # shards of one job share the work folder: no lock
        return
    with holding([args.destdir, work]):
        _prepare_locked(args, splits, syntax_sides, work, t_start)



def check_unsegmented(args, splits, syntax_sides):
    """Before any work: no input of a side that prepare parses or segments holds pieces or BPE marks already."""
    segments = bool(args.bpe_merges) or args.uses_sentencepiece
    for split, pref in splits:
        for lang, side in ((args.source_lang, "source"), (args.target_lang, "target")):
            parsed = side in syntax_sides
            if not (parsed or segments):
                continue  # a side taken as its units (--bpe-merges 0, no syntax): its own segmentation
            what = "the parser would parse" if parsed else "prepare would segment"
            for path in (f"{pref}.{lang}.conllu", f"{pref}.{lang}"):
                if os.path.isfile(path):
                    segmentation.check_not_segmented(path, side, what)


def _prepare_locked(args, splits, syntax_sides, work, t_start):
    """The whole (unsharded) preparation, its folders locked: the checks that need no writing first (the
    parsers load), so that a run refused by them leaves the data-bin as it was."""
    src, tgt = args.source_lang, args.target_lang
    parsers = {}
    to_parse = sides_to_parse(args, [pref for _, pref in splits], syntax_sides)
    if args.text_record and to_parse:  # the text's own parses are what this data-bin needs
        lang = to_parse[0][0]
        raise SyntaxDataError(f"{splits[0][1]}.{lang}.conllu", f"no parse of {lang} in the text that --text-record "
                              f"{args.text_record} describes: make the text with --syntax naming that side")
    load_side_parsers(args, to_parse, parsers)
    check_destdir(args, work)
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
        n_src, n_tgt = count_lines_of(texts[(split, src)]), count_lines_of(texts[(split, tgt)])
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
            lowercase_file(path)
    control = control_of(args)
    control_uas = apply_tree_control(control, conllus, work, progress=not args.no_progress) if control else None

    raw = {}  # SentencePiece: what it reads of each side (a syntax side: the text its parser read)
    if args.uses_sentencepiece:
        for (split, lang), path in texts.items():
            conllu = conllus[(split, lang)]
            raw[(split, lang)] = raw_sentences(conllu, os.path.join(work, f"{split}.raw.{lang}")) \
                if conllu is not None else path
        bpe_paths, spm_models = segment_with_models(args, raw, work, progress=not args.no_progress)
        codes = {}
    else:
        bpe_paths, codes = learn_and_apply_bpe(args, texts, work, progress=not args.no_progress)
        spm_models = {}

    cmd = ["--source-lang", src, "--target-lang", tgt, "--destdir", args.destdir, "--workers", str(args.workers),
           "--dataset-impl", "mmap"]
    for split, _ in splits:
        cmd += [f"--{split}pref", os.path.join(work, f"{split}.{'spm' if spm_models else 'bpe'}")]
    if segmentation.joined_dictionary(args):
        cmd.append("--joined-dictionary")
    cmd += segmentation.dictionary_options(args) + args.preprocess_args.split()
    fairseq_preprocess(cmd)
    segmentation.check_unk_rate(args, args.destdir)

    for split, _ in splits:
        for lang, side in ((src, "source"), (tgt, "target")):
            if side not in syntax_sides:
                continue
            logger.info("%s %s: aligning the trees to the subwords and binarizing them", split, lang)
            align_and_binarize(conllus[(split, lang)], bpe_paths[(split, lang)], args.destdir, split, src, tgt,
                               lang, args.units, text_prefix=os.path.join(work, f"{split}.{lang}"),
                               progress=not args.no_progress,
                               total=None if args.no_progress else count_lines_of(bpe_paths[(split, lang)]),
                               raw=raw.get((split, lang)), spm_model=spm_models.get(lang))
    write_record(args, syntax_sides, codes, [side for _, side in to_parse], spm_models,
                 tree_control=record_entry(control, control_uas) if control else None)
    os.remove(unfinished)
    logger.info("prepared %s in %.1fs", args.destdir, time.perf_counter() - t_start)
    print(f"data-bin ready: {args.destdir}")
