"""Decoding input that carries no syntax files: raw text encoded as the data-bin's record says, and token input
parsed on the fly, both given to the model as the source syntax it reads.

One :class:`RawInput` per ``syntax_translation`` task holds what fairseq's decoding entry points need
(``fairseq-interactive``, ``fairseq-generate`` on token input, the hub interface): the task's hooks delegate
here, and the task itself keeps the training data.

* :meth:`RawInput.encode`: raw lines -> :class:`~fairseq_syntax.inference.source.EncodedSources` (the
  record's normalisation, parser, tokens and BPE; the aligned tree when the model takes the source parse);
* :meth:`RawInput.interactive_lines`: fairseq-interactive's buffer of lines, a line that cannot be translated
  reported by its number in the whole input and given an empty translation;
* :meth:`RawInput.dataset_for_inference`: fairseq's inference dataset with the lines' aligned syntax;
* :meth:`RawInput.add_missing_source_inputs`: a batch that lacks the source fields the model takes (token
  input) gets them, from the lines encoded above or from a parser (``--inference-parser``).

Every side of syntax made here is built by :func:`side_from_rows` (rows of words, heads and labels; a row of
None is an empty source, EOS alone, which gets an empty translation).
"""
from __future__ import annotations

import os
import sys
from typing import List, Optional, Sequence, Tuple

import numpy as np
import torch
from fairseq import utils

from fairseq_syntax.data.alignment.piece_align import align_sentence_pieces
from fairseq_syntax.data.alignment.subword_align import align_sentence, split_subwords
from fairseq_syntax.data.datasets.syntax_dataset import (
    SideSyntax,
    SyntaxLanguagePairDataset,
    collate_rows,
)
from fairseq_syntax.errors import InputLineError, SyntaxDataError
from fairseq_syntax.inference.controlled_parser import with_tree_control
from fairseq_syntax.inference.source import EncodedSources, RawSourceEncoder
from fairseq_syntax.inference.target import RecordedText, join_pieces
from fairseq_syntax.parsing import backend_options, build_parser
from fairseq_syntax.preparation.databin_record import (
    RECORD_FILE,
    PreparationRecord,
    check_trained_codes,
    parser_options,
)

Row = Optional[Tuple[Sequence[int], Sequence[int], Optional[Sequence[int]]]]


def side_from_rows(rows: Sequence[Row], label_dict, name: str) -> SideSyntax:
    """A side of syntax for decoding from per-sentence (words, heads, labels) rows; a row of None is a sentence
    without words (an empty source); labels are kept when the model's label dictionary exists and every
    non-empty row has them."""
    from fairseq.data import ListDataset

    empty = torch.zeros(0, dtype=torch.long)
    present = [r for r in rows if r is not None]
    with_labels = label_dict is not None and all(r[2] is not None for r in present)
    cols = {"words": [], "heads": [], "labels": []}
    for r in rows:
        for k, field in enumerate(cols):
            cols[field].append(empty if r is None or (k == 2 and not with_labels) else torch.as_tensor(r[k]))
    sizes = np.array([len(w) for w in cols["words"]])
    labels = ListDataset(cols["labels"], sizes) if with_labels else None
    return SideSyntax(ListDataset(cols["words"], sizes), ListDataset(cols["heads"], sizes), labels, label_dict,
                      name=name)


class RawInput:
    """What a task decodes from input without syntax files (see the module docstring)."""

    def __init__(self, task):
        self.task = task
        self.cfg = task.cfg
        self.raw_text = False  # fairseq-interactive: lines are raw text, encoded with the record
        self.tokenizer_given = False  # fairseq-interactive: --tokenizer given (then the input is not raw text)
        self._encoder: Optional[RawSourceEncoder] = None
        self._parser = None
        self._lines_read = 0  # fairseq-interactive: lines encoded so far (errors count the whole input)
        self._sources = {}  # fairseq-interactive: the current buffer's lines by their token ids
        self.trained_codes = {}  # language -> SHA-256s of the BPE codes the loaded checkpoints were trained with

    def expect_trained_codes(self, digests) -> None:
        """The SHA-256 of each language's BPE codes a loaded checkpoint was trained with: fairseq-interactive's own
        --bpe-codes are held to them here, the data-bin's by its record (which decoding binarized data need not
        read: one it cannot read fails where raw input needs it)."""
        for lang, digest in digests.items():
            self.trained_codes.setdefault(lang, set()).add(digest)
        try:
            record = self.record
        except SyntaxDataError:
            record = None
        if record is not None:
            record.expect_trained_codes(digests)

    @property
    def data_dir(self) -> str:
        return utils.split_paths(self.cfg.data)[0]

    @property
    def record(self) -> Optional[PreparationRecord]:
        """How the data-bin was made (DATA-BIN/preparation.json), or None for a data-bin made without one."""
        if not hasattr(self, "_record"):
            self._record = PreparationRecord.load(self.data_dir)
        return self._record

    # --- raw text ---------------------------------------------------------------------------------------------
    def encode(self, lines, first_line: int = 1, max_positions: Optional[int] = None) -> EncodedSources:
        """Raw source lines as the model reads them (see :mod:`fairseq_syntax.inference.source`); a line longer
        than ``max_positions`` (default: --max-source-positions) is an error naming it."""
        if self.record is None:
            raise SyntaxDataError(os.path.join(self.data_dir, RECORD_FILE), "missing: this data-bin was prepared "
                                  "without a preparation record; prepare it again, or give tokenised, BPE'd input")
        if self._encoder is None:
            override = None
            if str(self.cfg.inference_parser) not in ("auto", "self"):  # an explicit parser parses raw text too
                backend = str(self.cfg.inference_parser)
                spec = self.record.language(self.cfg.source_lang, self.data_dir)
                pretok = spec.parses_given_tokens() or backend == "conllu"
                override = {"backend": backend, "options": backend_options(
                    backend, lang=self.cfg.inference_parser_lang or self.cfg.source_lang,
                    model=self.cfg.inference_parser_model, model_dir=self.cfg.inference_parser_model,
                    pretokenized=pretok, model_option="--inference-parser-model")}
            self._encoder = RawSourceEncoder(self.record, self.data_dir, self.cfg.source_lang, self.task.src_dict,
                                             self.task.src_label_dict, parser=override)
        needs_tree = bool(self.task.syntax_request.required("source"))
        # no parse where no tree is read: the model reads its own parse head's tree (--inference-parser self), or
        # none at all and the record's parser only made the side's tokens (its tokenizer alone gives them)
        tokenize_only = self.self_parsed or (not needs_tree and str(self.cfg.inference_parser) == "auto"
                                             and self._encoder.tokenizes_alone)
        return self._encoder.encode(lines, first_line, needs_tree and not tokenize_only,
                                    max_positions or self.max_source_positions(), tokenize_only=tokenize_only)

    def max_source_positions(self) -> int:
        """The longest source the models read: --max-source-positions, or less where a model built on the task
        reads less (a checkpoint's own limit: fairseq-interactive checks only the command line's)."""
        limits = [self.cfg.max_source_positions] + list(getattr(self.task, "model_max_source_positions", []))
        return min(int(x) for x in limits if x)

    @property
    def self_parsed(self) -> bool:
        """--inference-parser self: the model takes its tree from its own parse head, none is made here."""
        return str(self.cfg.inference_parser) == "self"

    def check_given_segmentation(self, bpe_args) -> None:
        """fairseq-interactive with its own ``--bpe`` (``bpe_args``) or ``--tokenizer`` and no ``--bpe`` (None): the
        input must come out segmented as the data-bin's source was. A ``--bpe`` other than the record's (another
        kind, or subword-nmt codes other than the data-bin's, byte for byte) is refused: it segments the input into
        subwords the model did not train on, and decoding went on. ``--tokenizer`` alone on a BPE'd data-bin
        leaves the input unsegmented: said once, as the input may be BPE'd already."""
        import filecmp
        import logging

        given = getattr(bpe_args, "bpe_codes", None) if bpe_args is not None else None
        if given and os.path.exists(given):
            check_trained_codes(given, self.trained_codes.get(self.cfg.source_lang), self.cfg.source_lang, given=True)
        if self.record is None:
            return
        drop = "or drop --bpe and --tokenizer: raw text is then encoded as the data-bin's record says"
        if (self.record.spm or {}).get(self.cfg.source_lang) is not None:
            self._check_given_pieces(bpe_args, drop)
            return
        # --tokenizer alone only warns below (the input may be BPE'd already): the codes are not used then
        recorded = self.record.bpe_codes(self.cfg.source_lang, self.data_dir, check_trained=bpe_args is not None)
        if bpe_args is None:
            if recorded is not None and self.tokenizer_given:
                logging.getLogger(__name__).warning(
                    "--tokenizer without --bpe: the input is not BPE'd here, and this data-bin's source was (codes "
                    "%s): give BPE'd input, add --bpe subword_nmt --bpe-codes %s, %s", recorded, recorded, drop)
            return
        name = getattr(bpe_args, "_name", None)
        if recorded is None:
            raise SyntaxDataError(os.path.join(self.data_dir, RECORD_FILE), f"--bpe {name}: this data-bin's source "
                                  f"has no BPE (its units are words): {drop}")
        given = getattr(bpe_args, "bpe_codes", None)
        if name != "subword_nmt" or not given:
            raise SyntaxDataError(os.path.join(self.data_dir, RECORD_FILE), f"--bpe {name}: this data-bin's source "
                                  f"was segmented by subword-nmt with {recorded}: give --bpe subword_nmt --bpe-codes "
                                  f"{recorded}, {drop}")
        if not os.path.exists(given):
            raise SyntaxDataError(given, "--bpe-codes: no such file")
        if not filecmp.cmp(given, recorded, shallow=False):
            raise SyntaxDataError(given, f"--bpe-codes: not the codes this data-bin was made with ({recorded}): "
                                  f"give those, {drop}")

    def _check_given_pieces(self, bpe_args, drop: str) -> None:
        """A SentencePiece data-bin: fairseq's own ``--bpe`` must be ``sentencepiece`` with the recorded model, byte
        for byte (raw input is best given without it: the record's parser then parses the sentence SentencePiece
        cuts)."""
        import filecmp

        recorded = self.record.spm_model(self.cfg.source_lang, self.data_dir, check_trained=bpe_args is not None)
        if bpe_args is None:
            return
        name = getattr(bpe_args, "_name", None)
        given = getattr(bpe_args, "sentencepiece_model", None)
        where = os.path.join(self.data_dir, RECORD_FILE)
        if name != "sentencepiece" or not given:
            raise SyntaxDataError(where, f"--bpe {name}: this data-bin's source was segmented by SentencePiece with "
                                  f"{recorded}: give --bpe sentencepiece --sentencepiece-model {recorded}, {drop}")
        if not os.path.exists(given) or not filecmp.cmp(given, recorded, shallow=False):
            raise SyntaxDataError(given, f"--sentencepiece-model: not the model this data-bin was made with "
                                  f"({recorded}): give that one, {drop}")

    def recorded_text(self) -> RecordedText:
        """The record's text processing: output detokenised as the training text was written."""
        return RecordedText(self.record, self.data_dir, self.cfg.target_lang, self.task.tgt_dict)

    def interactive_lines(self, lines) -> Tuple[EncodedSources, List[int]]:
        """fairseq-interactive's buffer of raw lines, encoded; a line that cannot be translated (the parser fails
        on it, it is too long) is reported on stderr by its number in the whole input and gets an empty
        translation; what fails every line (no record, a parser that does not load) ends the session with one
        line."""
        first = self._lines_read + 1
        self._lines_read += len(lines)
        try:
            try:
                encoded = self.encode(lines, first_line=first)
            except InputLineError:  # one at a time: the others still translate
                sources = []
                for k, line in enumerate(lines):
                    try:
                        sources += self.encode([line], first_line=first + k).sources
                    except InputLineError as e:  # fairseq's ids count from 0: S-/H-/D-(line - 1)
                        print(f"error: {e} (S-{first + k - 1}: an empty translation)", file=sys.stderr, flush=True)
                        sources += self.encode([""], first_line=first + k).sources
                encoded = EncodedSources(sources)
        except SyntaxDataError as e:  # fairseq-interactive's alone: its session ends here
            raise SystemExit(f"error: {e}") from None
        # fairseq-interactive hands inference_step the batch's tokens alone (its own Batch drops every other
        # field): the parse of each line is found again there by the line's token ids; lines whose ids are the
        # same (a character outside the vocabulary can make two lines so) are taken in input order, the order
        # their rows come in (batches by ascending length, fairseq's ordered_indices sorts stably; rows within
        # a batch put back in that order by dataset_for_inference's stable_rows)
        self._sources = {}
        for src in encoded.sources:
            self._sources.setdefault(tuple(src.ids.tolist()), []).append(src)
        return encoded, [t.numel() for t in encoded]

    def dataset_for_inference(self, base, sources: EncodedSources):
        """fairseq's inference dataset ``base`` of encoded raw lines, with the source syntax the model takes."""
        if not self.task.syntax_request.required("source") or self.self_parsed:
            return base
        side = side_from_rows([(s.words, s.heads, s.labels) for s in sources.sources], self.task.src_label_dict,
                              "input")
        return SyntaxLanguagePairDataset(base, self.task.syntax_request, side, None, stable_rows=True)

    # --- token input --------------------------------------------------------------------------------------------
    def add_missing_source_inputs(self, sample) -> None:
        """Give a batch the source fields the model takes and it lacks: fairseq-interactive's raw lines their
        encoded parse, other token rows a parse made now (an empty source, EOS alone, none)."""
        request = self.task.syntax_request
        net = sample["net_input"]
        if self.self_parsed:  # the model's own parse head gives the tree: a tree in the batch is not used
            for name in ("src_depths", "src_parents"):
                net.pop(name, None)
            return
        missing = sorted(f for f in request.required("source") if "src_" + f not in net)
        if not missing:
            return
        src = net["src_tokens"]
        rows = [utils.strip_pad(row, self.task.src_dict.pad()).cpu() for row in src]
        queues = [self._sources.get(tuple(r.tolist())) for r in rows]
        known = [q.pop(0) if q else None for q in queues]
        if all(k is not None for k in known):  # fairseq-interactive's raw lines: their parse, as encoded
            side = side_from_rows([(k.words, k.heads, k.labels) for k in known], self.task.src_label_dict, "input")
        else:
            nonempty = [k for k, r in enumerate(rows) if r.numel() > 1]
            parsed = dict(zip(nonempty, self.parse_rows([rows[k] for k in nonempty]))) if nonempty else {}
            side = side_from_rows([parsed.get(k) for k in range(len(rows))], self.task.src_label_dict,
                                  f"input parsed with {self.cfg.inference_parser}")
        # the side the batch's tokens are padded on (fairseq's inference datasets pad on the left whatever
        # --left-pad-source says; a batch of equal rows has no padding, and either side is the same)
        left_pad = not bool(src[:, -1].eq(self.task.src_dict.pad()).any())
        fields = collate_rows(side, missing, request.strategy_of("source"), src.size(1), left_pad, prefix="src_")
        for name, value in fields.items():
            net[name] = value.to(src.device)

    def parse_rows(self, src_tokens) -> List[Row]:
        """Parse token-id rows (BPE subwords + EOS) with the record's parser (or --inference-parser) and align
        the trees to the subwords: a (words, heads, labels) row each."""
        cfg = self.cfg
        pieces = self.record is not None and (self.record.spm or {}).get(cfg.source_lang) is not None
        if self._parser is None:
            backend = str(cfg.inference_parser)
            record = self.record.languages.get(cfg.source_lang) if self.record is not None else None
            if backend == "auto" and record is not None and record.parser is not None:
                backend = record.parser["backend"]
                options = parser_options(record.parser, self.data_dir)
                if not pieces:  # BPE: the subwords re-joined are the tokens; SentencePiece: raw text
                    options["pretokenized"] = True
            else:
                backend = "stanza" if backend == "auto" else backend
                options = backend_options(backend, lang=cfg.inference_parser_lang or cfg.source_lang,
                                          model=cfg.inference_parser_model, model_dir=cfg.inference_parser_model,
                                          pretokenized=not pieces, model_option="--inference-parser-model")
            self._parser = with_tree_control(build_parser(backend, **options), self.record)
        bpe_lines = [self.task.src_dict.string(t) for t in src_tokens]  # Dictionary.string leaves EOS out
        label_dict = self.task.src_label_dict
        if pieces:  # SentencePiece: the text the pieces spell, parsed as preparation parsed raw text
            word_lines = [join_pieces(line) for line in bpe_lines]
        else:
            word_lines = [" ".join(split_subwords(line)[1]) for line in bpe_lines]
        sents = self._parser.parse(word_lines)
        self._parser.check(word_lines, sents, 1, "input")
        out = []
        for k, (sent, line, text) in enumerate(zip(sents, bpe_lines, word_lines)):
            if pieces:
                w, h, lab, _ = align_sentence_pieces(sent, text, line.split(), where=f"input sentence {k + 1}")
            else:
                w, h, lab = align_sentence(sent, line, f"input sentence {k + 1}")
            out.append((w, h, [label_dict.index(x) for x in lab] if label_dict is not None else None))
        return out
