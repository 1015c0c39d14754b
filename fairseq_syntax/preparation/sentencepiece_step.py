"""Step 3 of ``prepare`` with SentencePiece instead of BPE: each side's sentences as SentencePiece reads them, a
model learned on the training text or given, and its pieces of every split in resumable chunks.

* What SentencePiece reads (:func:`raw_sentences`): for a syntax side, the raw text its parser read (each
  sentence's CoNLL-U ``# text``, which ``prepare`` writes when it parses and gold treebanks carry), so that the
  pieces can be aligned to the tree by character offsets (:mod:`fairseq_syntax.data.alignment.piece_align`);
  for a side without syntax, its text as the side's tokeniser left it.
* The model (:func:`learn_model`): ``--spm-vocab-size N`` learns one on the training text of both languages
  (one per language with ``--separate-bpe``), from the sentences in memory, so that its bytes depend on the text
  and the settings alone; it is reused when its stamp vouches for it (its SHA-256, learned from text of this
  SHA-256 with these settings: :mod:`fairseq_syntax.durable_files`). ``--spm-model PATH`` (or one per side) is
  used as it is: a pretrained model's, whose dictionary ``--srcdict`` / ``--tgtdict`` give.
* The pieces (:func:`apply_model`): every line encoded (stripped, as decoding raw text strips it), the pieces
  joined by spaces, in chunks of :data:`SPM_CHUNK_SIZE` lines over ``--workers`` processes, byte-identical for
  any number of them.
"""
from __future__ import annotations

import io
import itertools
import logging
import os
import re
from typing import Dict, Tuple

from fairseq_syntax.data.alignment.piece_align import load_sentencepiece as load_model
from fairseq_syntax.data.trees.conllu import sentence_blocks
from fairseq_syntax.durable_files import (
    file_sha256,
    replace_file,
    stamp_for,
    temporary_name,
    unstamp,
    vouched,
)
from fairseq_syntax.errors import SyntaxDataError
from fairseq_syntax.preparation.chunked import file_sha1, read_lines, run_chunked
from fairseq_syntax.preparation.side_texts import count_lines_of, remove_file
from fairseq_syntax.text_reading import open_text

logger = logging.getLogger(__name__)

#: lines per committed chunk of SentencePiece encoding
SPM_CHUNK_SIZE = 8192
_TEXT = re.compile(r"^# text ?= ?(.*)$", re.M)


def raw_sentences(conllu: str, out: str) -> str:
    """``out``: one line per sentence of ``conllu``, its ``# text`` (the raw text its parser read)."""
    tmp = temporary_name(out)
    line = 1
    try:
        with open(tmp, "w", encoding="utf-8") as f:
            for block in sentence_blocks(conllu):
                m = _TEXT.search(block)
                if m is None:
                    raise SyntaxDataError(f"{conllu}:{line}", "a sentence without a '# text = ...' comment: "
                                          "SentencePiece cuts the raw sentence, which this CoNLL-U does not hold; "
                                          "give the raw text for prepare to parse, or add each sentence's # text")
                f.write(m.group(1).strip() + "\n")
                line += block.count("\n")
    except BaseException:
        remove_file(tmp)
        raise
    return replace_file(tmp, out)


def _encode_chunk(sp, first, lines):
    """One chunk of lines -> their pieces, space-separated, a line each."""
    pieces = sp.encode([line.strip() for line in lines], out_type=str)
    return "".join(" ".join(p) + "\n" for p in pieces), len(lines)


def apply_model(model_path: str, in_path: str, out_path: str, workers: int = 1, progress: bool = True, sp=None):
    """The pieces of every line of ``in_path`` into ``out_path`` (resumable chunks, ``workers`` processes)."""
    return run_chunked(read_lines(in_path), out_path, _encode_chunk, f"spm {file_sha1(model_path)}",
                       chunk_size=SPM_CHUNK_SIZE, init=load_model, init_args=(model_path,), state=sp,
                       workers=workers, progress=progress, desc=f"spm {os.path.basename(in_path)}", unit="sent")


def training_settings(args) -> dict:
    """The settings a learned model depends on (its stamp's inputs besides the text)."""
    return {"vocab_size": args.spm_vocab_size, "model_type": args.spm_model_type,
            "character_coverage": args.spm_character_coverage}


def learn_model(args, langs, texts: Dict[Tuple[str, str], str], work: str, progress: bool = True) -> str:
    """Learn a SentencePiece model on the training text of ``langs`` (``texts[("train", lang)]``: what
    SentencePiece reads of each; every k-th line with ``--bpe-sample``), once: a model its stamp vouches for is
    reused. Returns the model's path in ``work``."""
    import sentencepiece as spm

    name = "joint" if len(langs) == 2 else langs[0]
    model_path = os.path.join(work, f"spm.{name}.model")
    stride = 1
    if args.bpe_sample:
        stride = max(1, -(-count_lines_of(texts[("train", langs[0])]) // args.bpe_sample))
    lines = []
    for lang in langs:
        with open_text(texts[("train", lang)]) as f:
            lines += [line.strip() for line in itertools.islice(f, 0, None, stride)]
    digest = _lines_sha256(lines)
    inputs = {"text_sha256": digest, **training_settings(args)}
    if vouched(model_path, inputs):
        logger.info("SentencePiece %s: reusing %s (learned from the same text with the same settings)", name,
                    model_path)
        return model_path
    logger.info("SentencePiece %s: learning a %s model of %d pieces on %d sentences", name, args.spm_model_type,
                args.spm_vocab_size, len(lines))
    model = io.BytesIO()
    try:
        spm.SentencePieceTrainer.train(
            sentence_iterator=iter(lines), model_writer=model, vocab_size=args.spm_vocab_size,
            model_type=args.spm_model_type, character_coverage=args.spm_character_coverage,
            input_sentence_size=0, shuffle_input_sentence=False, hard_vocab_limit=False, num_threads=1,
            max_sentence_length=1 << 16, minloglevel=0 if progress and logger.isEnabledFor(logging.DEBUG) else 2)
    except RuntimeError as e:
        raise SyntaxDataError(texts[("train", langs[0])], f"SentencePiece could not learn a model of "
                              f"{args.spm_vocab_size} pieces: {' '.join(str(e).split())[:300]}") from None
    tmp = temporary_name(model_path)
    with open(tmp, "wb") as f:
        f.write(model.getvalue())
    unstamp(model_path)  # a kill from here until the new stamp leaves a model that nobody vouches for
    replace_file(tmp, model_path)
    stamp_for(model_path, inputs)
    return model_path


def _lines_sha256(lines) -> str:
    import hashlib

    h = hashlib.sha256()
    for line in lines:
        h.update(line.encode("utf-8") + b"\n")
    return h.hexdigest()


def segment_with_models(args, texts, work, progress=True):
    """Every split of both languages in pieces: ``({(split, lang): pieces path}, {lang: model path})``, the models
    learned (``--spm-vocab-size``) or given (``--spm-model``)."""
    src, tgt = args.source_lang, args.target_lang
    models = {}
    if args.spm_vocab_size:
        for langs in [(src, tgt)] if not args.separate_bpe else [(src,), (tgt,)]:
            path = learn_model(args, langs, texts, work, progress)
            models.update({lang: path for lang in langs})
    else:
        for lang, side in ((src, "source"), (tgt, "target")):
            models[lang] = args.side(side).spm_model
    loaded = {}
    out = {}
    for (split, lang), path in texts.items():
        model = models[lang]
        if model not in loaded:
            loaded[model] = load_model(model) if args.workers <= 1 else None
            logger.info("SentencePiece %s: %s (SHA-256 %s)", lang, model, file_sha256(model)[:16])
        target = os.path.join(work, f"{split}.spm.{lang}")
        apply_model(model, path, target, workers=args.workers, progress=progress, sp=loaded[model])
        out[(split, lang)] = target
    return out, models
