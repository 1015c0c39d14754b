"""``syntax_translation``: translation with aligned dependency syntax.

Extends fairseq's TranslationTask: tokens, dictionaries, batching and
generation are fairseq's. On top, it loads the aligned syntax datasets of
the source and/or target side (``{split}.{src}-{tgt}.{lang}.{words,heads,
labels}``, written by ``preprocess/binarize.py``) next to the token data,
validates their lengths against the tokens, and collates parents (under the
chosen subword parent strategy), depths, labels and word indices in the
model's coordinates (see :mod:`fairseq_syntax.data.syntax_dataset`).

Which fields are collated: ``--source-syntax`` / ``--target-syntax`` take a
comma list of ``parents,depths,labels,words``, ``none``, or ``auto`` (the
default), which asks the model: a model may define ``syntax_needs() ->``
:class:`~fairseq_syntax.data.syntax_request.SyntaxNeeds`. A model without it
(fairseq's ``transformer``) gets no syntax and trains as with the
``translation`` task. The task's :class:`SyntaxRequest` is resolved from its
options and the needs of the models built on it
(:func:`~fairseq_syntax.data.syntax_request.resolve_request`), replaced, not
changed, when a model is built, and handed to every dataset it loads.

``fairseq-generate`` passes the checkpoint's saved task config to
:meth:`load_dataset`; the syntax options are read from it, so they need not
be repeated at decoding time. ``fairseq-interactive`` has no syntax files:
when the model needs the source parse as an input, each batch of input lines
is parsed on the fly (``--inference-parser``, stanza by default; see
:meth:`SyntaxTranslationTask.inference_step`) and the trees are aligned to
the BPE tokens exactly as in preprocessing.
"""

import logging
import os
import sys
from dataclasses import dataclass, field
from typing import List, Optional

import numpy as np
import torch
from fairseq import utils
from fairseq.data import ConcatDataset, Dictionary
from fairseq.dataclass import ChoiceEnum
from fairseq.tasks import register_task
from fairseq.tasks.translation import TranslationConfig, TranslationTask

from fairseq_syntax.data import syntax_io
from fairseq_syntax.data.mmap_check import check_mmap_dataset, check_pairs, split_prefixes
from fairseq_syntax.data.parent_strategies import STRATEGIES
from fairseq_syntax.data.subword_align import align_sentence, split_subwords
from fairseq_syntax.data.syntax_dataset import (
    SideSyntax,
    SyntaxLanguagePairDataset,
    collate_rows,
)
from fairseq_syntax.data.syntax_request import (
    SIDE_FIELDS,
    SyntaxNeeds,
    SyntaxRequest,
    resolve_request,
)
from fairseq_syntax.data.long_pairs import filter_long_pairs
from fairseq_syntax.errors import InputLineError, OptionError, SyntaxDataError
from fairseq_syntax.inference.source import EncodedSources, RawSourceEncoder
from fairseq_syntax.inference.target import RecordedText
from fairseq_syntax.parsing import backend_options, build_parser
from fairseq_syntax.preparation.record import (
    RECORD_FILE,
    UNFINISHED_FILE,
    PreparationRecord,
    parser_options,
)

logger = logging.getLogger(__name__)

_FIELDS_HELP = (
    "comma list of syntax fields to collate for this side: "
    + ",".join(SIDE_FIELDS)
    + "; 'none'; or 'auto' = what the model asks for (default)"
)


@dataclass
class SyntaxTranslationConfig(TranslationConfig):
    parent_strategy: ChoiceEnum(("auto",) + STRATEGIES) = field(
        default="auto",
        metadata={
            "help": "how a word's head becomes a subword parent: chain (DBSA: next subword, word-final "
            "subword -> head's first subword), middle (PASCAL: mean position of the head's subwords), "
            "first (SISA: head's first subword); auto (default) = the model's preset, else chain"
        },
    )
    source_syntax: str = field(default="auto", metadata={"help": "source side: " + _FIELDS_HELP})
    target_syntax: str = field(default="auto", metadata={"help": "target side: " + _FIELDS_HELP})
    inference_parser: ChoiceEnum(("auto", "stanza", "spacy", "udpipe", "conllu")) = field(
        default="auto",
        metadata={
            "help": "parser for sentences decoded without syntax data when the model needs the source parse "
            "(PASCAL, S&H labels, dependency relative positions): auto (default): raw text is encoded as the "
            "data-bin's preparation.json says (its normalisation, parser and BPE: fairseq-interactive needs no "
            "--bpe), and token input is parsed by that record's parser (stanza without a record); or stanza, "
            "spacy (e.g. GiNZA), udpipe, conllu (look each sentence up in the CoNLL-U file "
            "--inference-parser-model) for token input"
        },
    )
    max_skipped_fraction: float = field(
        default=0.05,
        metadata={"help": "refuse to train when more than this share of a split's sentence pairs is longer than "
                  "--max-source-positions / --max-target-positions (fairseq leaves them out; the count is logged "
                  "either way); default 0.05"},
    )
    inference_parser_lang: Optional[str] = field(
        default=None, metadata={"help": "stanza language code for --inference-parser (default: the source language)"}
    )
    inference_parser_model: Optional[str] = field(
        default=None,
        metadata={
            "help": "stanza: model directory; spacy: pipeline name or path; udpipe: .udpipe model file; "
            "conllu: the CoNLL-U file to look sentences up in"
        },
    )


def _parse_fields(value: Optional[str], option: str):
    if value is None or value == "auto":
        return None
    if value in ("", "none"):
        return frozenset()
    fields = frozenset(x.strip() for x in value.split(",") if x.strip())
    bad = fields - set(SIDE_FIELDS)
    if bad:
        raise OptionError(f"--{option}: unknown field(s) {sorted(bad)}; choose from {','.join(SIDE_FIELDS)}")
    return fields


@register_task("syntax_translation", dataclass=SyntaxTranslationConfig)
class SyntaxTranslationTask(TranslationTask):
    """Translation whose batches carry aligned dependency syntax."""

    cfg: SyntaxTranslationConfig

    def __init__(self, cfg, src_dict, tgt_dict, src_label_dict=None, tgt_label_dict=None):
        super().__init__(cfg, src_dict, tgt_dict)
        self.src_label_dict = src_label_dict
        self.tgt_label_dict = tgt_label_dict
        self._explicit = {
            "source": _parse_fields(cfg.source_syntax, "source-syntax"),
            "target": _parse_fields(cfg.target_syntax, "target-syntax"),
        }
        self._strategy = str(cfg.parent_strategy) if str(cfg.parent_strategy) != "auto" else None
        self._inference_parser = None
        self._raw_encoder = None
        self.raw_text_input = False  # build_bpe: fairseq-interactive encodes raw lines with the record
        self._lines_read = 0  # fairseq-interactive: lines encoded so far (errors count the whole input)
        self._interactive_sources = {}  # fairseq-interactive: the current buffer's lines by their token ids
        self._tokenizer_given = False  # fairseq-interactive: --tokenizer given (then the input is not raw text)
        self.model_needs: List[SyntaxNeeds] = []  # of the models built on this task, in order
        self.syntax_request: SyntaxRequest = self._resolve_request()

    @classmethod
    def setup_task(cls, cfg, **kwargs):
        data0 = utils.split_paths(cfg.data)[0]
        unfinished = os.path.join(data0, UNFINISHED_FILE)
        if os.path.exists(unfinished):
            raise SyntaxDataError(unfinished, "this data-bin was left unfinished by an interrupted prepare: run the "
                                  "same prepare command again (it resumes), then train")
        task = super().setup_task(cfg, **kwargs)
        dicts = []
        for lang in (cfg.source_lang, cfg.target_lang):
            p = syntax_io.label_dict_path(data0, lang)
            dicts.append(Dictionary.load(p) if os.path.exists(p) else None)
        return cls(cfg, task.src_dict, task.tgt_dict, *dicts)

    # --- raw text: the data-bin's preparation record ------------------------------
    @property
    def data_dir(self) -> str:
        return utils.split_paths(self.cfg.data)[0]

    @property
    def record(self) -> Optional[PreparationRecord]:
        """How the data-bin was made (DATA-BIN/preparation.json), or None for a data-bin made without one."""
        if not hasattr(self, "_record"):
            self._record = PreparationRecord.load(self.data_dir)
        return self._record

    def encode_raw(self, lines, first_line: int = 1, max_positions: Optional[int] = None) -> EncodedSources:
        """Raw source lines as the model reads them (the record's normalisation, parser, tokens and BPE; the
        aligned tree when the model takes the source parse), see :mod:`fairseq_syntax.inference.source`. A line
        longer than ``max_positions`` (default: the task's --max-source-positions) is an error naming it."""
        if self.record is None:
            raise SyntaxDataError(os.path.join(self.data_dir, RECORD_FILE), "missing: this data-bin was prepared "
                                  "without a preparation record; prepare it again, or give tokenised, BPE'd input")
        if self._raw_encoder is None:
            override = None
            if str(self.cfg.inference_parser) != "auto":  # an explicit --inference-parser parses raw text too
                backend = str(self.cfg.inference_parser)
                spec = self.record.language(self.cfg.source_lang, self.data_dir)
                pretok = bool((spec.parser or {}).get("options", {}).get("pretokenized")) or backend == "conllu"
                override = {"backend": backend, "options": backend_options(
                    backend, lang=self.cfg.inference_parser_lang or self.cfg.source_lang,
                    model=self.cfg.inference_parser_model, model_dir=self.cfg.inference_parser_model,
                    pretokenized=pretok)}
            self._raw_encoder = RawSourceEncoder(self.record, self.data_dir, self.cfg.source_lang, self.src_dict,
                                                 self.src_label_dict, parser=override)
        return self._raw_encoder.encode(lines, first_line, bool(self.syntax_request.required("source")),
                                        max_positions or self.cfg.max_source_positions)

    def recorded_text(self) -> RecordedText:
        """The record's text processing: output detokenised as the training text was written (its ``encode``
        leaves raw lines to :meth:`encode_raw`)."""
        return RecordedText(self.record, self.data_dir, self.cfg.target_lang)

    def build_bpe(self, args):
        """fairseq-interactive asks for the BPE with no dataset loaded: with no ``--bpe`` given and a preparation
        record present, raw source lines are encoded by :meth:`encode_raw` and the output detokenised as the
        training text was written (:meth:`recorded_text`). fairseq-generate (which loads its split first) keeps
        fairseq's behaviour: its S-/T-/H- lines stay tokenised."""
        if ((args is None or getattr(args, "_name", None) is None) and not self._tokenizer_given
                and self.record is not None and not self.datasets):
            self.raw_text_input = True
            return self.recorded_text()
        return super().build_bpe(args)

    def build_tokenizer(self, args):
        self._tokenizer_given = args is not None and getattr(args, "_name", None) is not None
        return super().build_tokenizer(args)

    def get_interactive_tokens_and_lengths(self, lines, encode_fn):
        """fairseq-interactive's lines: encoded from the raw text with the parse of the user's words (the record's
        pipeline) when no --bpe / --tokenizer is given. A line that cannot be translated (the parser fails on
        it, it is too long) is reported on stderr by its number in the whole input and gets an empty
        translation; the session goes on. What fails every line (no record, a parser that does not load) ends
        it with one line."""
        if not self.raw_text_input:
            return super().get_interactive_tokens_and_lengths(lines, encode_fn)
        first = self._lines_read + 1
        self._lines_read += len(lines)
        try:
            try:
                encoded = self.encode_raw(lines, first_line=first)
            except InputLineError:  # one at a time: the others still translate
                sources = []
                for k, line in enumerate(lines):
                    try:
                        sources += self.encode_raw([line], first_line=first + k).sources
                    except InputLineError as e:
                        print(f"error: {e} (an empty translation)", file=sys.stderr, flush=True)
                        sources += self.encode_raw([""], first_line=first + k).sources
                encoded = EncodedSources(sources)
        except SyntaxDataError as e:  # this method is fairseq-interactive's alone: its session ends here
            raise SystemExit(f"error: {e}") from None
        # fairseq-interactive hands inference_step the batch's tokens alone (its own Batch drops every other
        # field): the parse of each line is found again there by the line's token ids; lines whose ids are the
        # same (a character outside the vocabulary can make two lines so) are taken in input order, as
        # fairseq's length sort is stable
        self._interactive_sources = {}
        for src in encoded.sources:
            self._interactive_sources.setdefault(tuple(src.ids.tolist()), []).append(src)
        return encoded, [t.numel() for t in encoded]

    def build_dataset_for_inference(self, src_tokens, src_lengths, constraints=None):
        """fairseq's inference dataset; for lines encoded from raw text (:meth:`encode_raw`), with the source
        syntax fields the model takes built from their aligned trees."""
        base = super().build_dataset_for_inference(src_tokens, src_lengths, constraints=constraints)
        if not isinstance(src_tokens, EncodedSources) or not self.syntax_request.required("source"):
            return base
        side = self._side_of(src_tokens.sources)
        return SyntaxLanguagePairDataset(base, self.syntax_request, side, None)

    # --- what the model needs -------------------------------------------------
    def build_model(self, cfg, from_checkpoint=False):
        model = super().build_model(cfg, from_checkpoint)
        needs_fn = getattr(model, "syntax_needs", None)
        if callable(needs_fn):
            self.add_model_needs(needs_fn())
            if not from_checkpoint:  # training: before a criterion, a trainer or a checkpoint exists
                self.check_data_for_training(getattr(cfg, "arch", None) or type(model).__name__)
        if not from_checkpoint:
            self._model_for_training = model  # its criterion is checked against it (build_criterion)
        return model

    def build_criterion(self, cfg, from_checkpoint=False):
        """fairseq's criterion; one that cannot feed from the model built for training (parse-head losses on a
        model without parse heads, L_sync without a SyncAttn layer) is refused before training starts."""
        criterion = super().build_criterion(cfg, from_checkpoint)
        model = getattr(self, "_model_for_training", None)
        if model is not None and callable(getattr(criterion, "check_model", None)):
            criterion.check_model(model)
        return criterion

    def check_data_for_training(self, model_name: str) -> None:
        """Every syntax side the models read or learn (inputs and parse supervision) is in the data-bin for the
        training split and the splits loaded so far (fairseq-train loads its validation splits before it
        builds the model): a missing side is one error naming the files, before anything is trained or
        written. (Decoding needs only the inputs: :meth:`_load_side` checks those.)"""
        data_path = self.data_dir
        src, tgt = self.cfg.source_lang, self.cfg.target_lang
        splits = [self.cfg.train_subset] + [s for s in self.datasets if s != self.cfg.train_subset]
        for side, lang in (("source", src), ("target", tgt)):
            fields = self.syntax_request.needs(side)
            if not fields:
                continue
            files = ["words", "heads"] + (["labels"] if "labels" in fields else [])
            for split in splits:
                prefix = next((p for p in (syntax_io.syntax_prefix(data_path, split, a, b, lang)
                                           for a, b in ((src, tgt), (tgt, src))) if os.path.exists(p + ".idx")),
                              None)
                if prefix is None:
                    continue  # no token data for this split either: fairseq names the missing split
                missing = [f for f in files if not syntax_io.syntax_exists(prefix, f)]
                if missing:
                    use = "an input" if self.syntax_request.required(side) else "what its parse loss learns"
                    names = missing[0] if len(missing) == 1 else "{" + ",".join(missing) + "}"
                    again = "--syntax source,target" if side == "target" else "--syntax source (or source,target)"
                    raise SyntaxDataError(
                        f"{prefix}.{names}.{{bin,idx}}",
                        f"missing: the model ({model_name}) needs the {side} side's syntax "
                        f"({','.join(sorted(fields))}: {use}) for split '{split}'; prepare the data-bin with "
                        f"{again}, or train a model that does not use it",
                    )

    def add_model_needs(self, needs: SyntaxNeeds) -> None:
        """A model built on this task declares what it needs: resolve the request again (and give the new one
        to the datasets loaded before the model was built)."""
        if not isinstance(needs, SyntaxNeeds):
            raise TypeError(f"syntax_needs() must return a SyntaxNeeds, not {type(needs).__name__}")
        self.model_needs.append(needs)
        self._set_request(self._resolve_request())

    def _resolve_request(self) -> SyntaxRequest:
        return resolve_request(self._explicit["source"], self._explicit["target"], self._strategy, self.model_needs)

    def _set_request(self, request: SyntaxRequest) -> None:
        self.syntax_request = request
        for ds in self.datasets.values():
            if isinstance(ds, SyntaxLanguagePairDataset) and ds.request != request:
                ds.request = request

    # --- data -----------------------------------------------------------------
    def filter_indices_by_size(self, indices, dataset, max_positions=None, ignore_invalid_inputs=False):
        """fairseq's filter of pairs longer than the model reads, counted and checked (data/long_pairs.py)."""
        split = next((name for name, d in self.datasets.items() if d is dataset), "?")
        return filter_long_pairs(indices, dataset, max_positions, ignore_invalid_inputs,
                                 self.cfg.max_skipped_fraction, split)

    def load_dataset(self, split, epoch=1, combine=False, **kwargs):
        task_cfg = kwargs.get("task_cfg")
        if task_cfg is not None:  # fairseq-generate: the checkpoint's saved task config
            self._adopt_saved_config(task_cfg)
        if self.cfg.truncate_source:
            raise OptionError("--truncate-source would cut tokens away from their syntax; it is not supported here")
        paths = utils.split_paths(self.cfg.data)
        if split != self.cfg.train_subset:
            paths = paths[:1]
        data_path = paths[(epoch - 1) % len(paths)]
        src, tgt = self.cfg.source_lang, self.cfg.target_lang
        check_pairs(data_path, split, src, tgt)  # a .bin without its .idx, or the reverse
        for prefix in split_prefixes(data_path, split, src, tgt):  # sizes checked before fairseq maps the files
            check_mmap_dataset(prefix)
        super().load_dataset(split, epoch=epoch, combine=combine, **kwargs)
        base = self.datasets[split]
        src_syn = self._load_side(data_path, split, src, tgt, src, "source", base.src_sizes, combine)
        tgt_syn = None
        if base.tgt is not None:
            tgt_syn = self._load_side(data_path, split, src, tgt, tgt, "target", base.tgt_sizes, combine)
        self.datasets[split] = SyntaxLanguagePairDataset(base, self.syntax_request, src_syn, tgt_syn)

    def inference_step(self, generator, models, sample, prefix_tokens=None, constraints=None):
        """Decoding; source syntax inputs missing from the batch are parsed on the fly, and an empty source
        (EOS alone: an empty input line) gets an empty translation.

        Batches built from token ids only (fairseq's hub ``generate`` on token tensors, ``fairseq-interactive``
        with ``--bpe``) lack the source parse: a model that takes it gets it here, from ``--inference-parser``.
        """
        self.add_missing_source_inputs(sample)
        hypos = super().inference_step(generator, models, sample, prefix_tokens=prefix_tokens, constraints=constraints)
        lengths = sample["net_input"]["src_lengths"].tolist()
        device = sample["net_input"]["src_tokens"].device
        eos = self.target_dictionary.eos()
        for b, n in enumerate(lengths):
            if n <= 1:
                hypos[b] = [{"tokens": torch.tensor([eos], device=device), "score": torch.tensor(0.0, device=device),
                             "attention": None, "alignment": torch.zeros(0, 2, dtype=torch.long),
                             "positional_scores": torch.zeros(1, device=device), "steps": []}]
        return hypos

    def add_missing_source_inputs(self, sample) -> None:
        net = sample["net_input"]
        missing = sorted(f for f in self.syntax_request.required("source") if "src_" + f not in net)
        if not missing:
            return
        src = net["src_tokens"]
        rows = [utils.strip_pad(row, self.src_dict.pad()).cpu() for row in src]
        queues = [self._interactive_sources.get(tuple(r.tolist())) for r in rows]
        known = [q.pop(0) if q else None for q in queues]
        if all(k is not None for k in known):  # fairseq-interactive's raw lines: their parse, as encoded
            side = self._side_of(known)
        else:  # an empty source (EOS alone) has no words to parse; it gets an empty translation
            nonempty = [k for k, r in enumerate(rows) if r.numel() > 1]
            parsed = self.parse_inputs([rows[k] for k in nonempty]) if nonempty else None
            side = self._side_with_empty_rows(parsed, nonempty, len(rows))
        fields = collate_rows(side, missing, self.syntax_request.strategy_of("source"), src.size(1),
                              self.cfg.left_pad_source, prefix="src_")
        for name, value in fields.items():
            net[name] = value.to(src.device)

    def _side_with_empty_rows(self, parsed: Optional[SideSyntax], nonempty, n: int) -> SideSyntax:
        """``parsed`` (the rows ``nonempty``) with zero-length rows for the other of ``n`` rows."""
        from fairseq.data import ListDataset

        empty = torch.zeros(0, dtype=torch.long)
        where = {k: i for i, k in enumerate(nonempty)}
        cols = {}
        for name in ("words", "heads", "labels"):
            ds = getattr(parsed, name) if parsed is not None else None
            if name == "labels" and (self.src_label_dict is None or (parsed is not None and ds is None)):
                cols[name] = None
                continue
            cols[name] = [torch.as_tensor(ds[where[k]]) if k in where else empty for k in range(n)]
        sizes = np.array([len(x) for x in cols["words"]])
        datasets = {f: ListDataset(v, sizes) if v is not None else None for f, v in cols.items()}
        return SideSyntax(datasets["words"], datasets["heads"], datasets["labels"], self.src_label_dict,
                          name="input")

    def _side_of(self, sources) -> SideSyntax:
        """The aligned syntax of encoded raw lines, as a side of a dataset (rows in the given order)."""
        from fairseq.data import ListDataset

        sizes = np.array([len(s.words) for s in sources])
        words = ListDataset([torch.as_tensor(s.words) for s in sources], sizes)
        heads = ListDataset([torch.as_tensor(s.heads) for s in sources], sizes)
        labels = None
        if self.src_label_dict is not None and all(s.labels is not None for s in sources):
            labels = ListDataset([torch.as_tensor(s.labels) for s in sources], sizes)
        return SideSyntax(words, heads, labels, self.src_label_dict, name="input")

    def parse_inputs(self, src_tokens) -> SideSyntax:
        """Parse token-id rows (BPE subwords + EOS) and align the trees to the subwords."""
        from fairseq.data import ListDataset


        if self._inference_parser is None:
            cfg = self.cfg
            backend = str(cfg.inference_parser)
            record = self.record.languages.get(cfg.source_lang) if self.record is not None else None
            if backend == "auto" and record is not None and record.parser is not None:
                backend = record.parser["backend"]
                options = {**parser_options(record.parser, self.data_dir), "pretokenized": True}
            else:
                backend = "stanza" if backend == "auto" else backend
                options = backend_options(backend, lang=cfg.inference_parser_lang or cfg.source_lang,
                                          model=cfg.inference_parser_model, model_dir=cfg.inference_parser_model,
                                          pretokenized=True)
            self._inference_parser = build_parser(backend, **options)
        bpe_lines = [self.src_dict.string(t) for t in src_tokens]  # Dictionary.string leaves EOS out
        word_lines = [" ".join(split_subwords(line)[1]) for line in bpe_lines]
        sents = self._inference_parser.parse(word_lines)
        self._inference_parser.check(word_lines, sents, 1, "input")
        words, heads, labels = [], [], []
        for k, (sent, line) in enumerate(zip(sents, bpe_lines)):
            w, h, lab = align_sentence(sent, line, f"input sentence {k + 1}")
            words.append(torch.tensor(w))
            heads.append(torch.tensor(h))
            if self.src_label_dict is not None:
                labels.append(torch.tensor([self.src_label_dict.index(x) for x in lab]))
        sizes = np.array([len(w) for w in words])
        label_ds = ListDataset(labels, sizes) if self.src_label_dict is not None else None
        return SideSyntax(ListDataset(words, sizes), ListDataset(heads, sizes), label_ds, self.src_label_dict,
                          name=f"input parsed with {self.cfg.inference_parser}")

    def _adopt_saved_config(self, task_cfg):
        """fairseq-generate: the syntax options the checkpoint was trained with (explicit fields and parent
        strategy) replace this command line's 'auto' (an explicit option here wins)."""
        strategy = getattr(task_cfg, "parent_strategy", None)
        if strategy is not None and str(strategy) != "auto" and self._strategy is None:
            self._strategy = str(strategy)
        for side, opt in (("source", "source_syntax"), ("target", "target_syntax")):
            explicit = _parse_fields(getattr(task_cfg, opt, None), opt.replace("_", "-"))
            if explicit is not None and self._explicit[side] is None:
                self._explicit[side] = explicit
        self._set_request(self._resolve_request())

    def _load_side(self, data_path, split, src, tgt, lang, side, token_sizes, combine):
        """Open the syntax datasets of one side (None if there are none)."""
        prefixes = []
        for k in range(10_000):
            split_k = split + (str(k) if k > 0 else "")
            found = None
            for a, b in ((src, tgt), (tgt, src)):
                p = syntax_io.syntax_prefix(data_path, split_k, a, b, lang)
                if os.path.exists(p + ".idx"):  # the token dataset of this direction
                    found = p
                    break
            if found is None or not (k == 0 or combine):
                break
            prefixes.append(found)
            if not combine:
                break
        if not prefixes or not syntax_io.syntax_exists(prefixes[0], "words"):
            where = os.path.join(data_path, f"{split}.{src}-{tgt}.{lang}.words.{{bin,idx}}")
            required = self.syntax_request.required(side)
            if required:
                raise SyntaxDataError(
                    where,
                    f"{side} syntax is a model input ({','.join(sorted(required))}) but the syntax "
                    "datasets are missing: run preprocess/binarize.py (or preprocess/prepare.py)",
                )
            if self.syntax_request.needs(side):
                logger.info("%s: no %s syntax data; batches of split %r carry no %s supervision",
                            where, side, split, side)
            return None
        label_dict = self.src_label_dict if side == "source" else self.tgt_label_dict
        parts = {f: [] for f in ("words", "heads", "labels")}
        for p in prefixes:
            for f in ("words", "heads"):
                parts[f].append(syntax_io.load_field(p, f))
            if syntax_io.syntax_exists(p, "labels") and label_dict is not None:
                parts["labels"].append(syntax_io.load_field(p, "labels"))
        # shards are combined exactly as fairseq combines the token shards
        ratios = [1] * len(prefixes)
        ratios[0] = self.cfg.upsample_primary

        def combine_parts(datasets):
            return datasets[0] if len(datasets) == 1 else ConcatDataset(datasets, ratios)

        words, heads = combine_parts(parts["words"]), combine_parts(parts["heads"])
        labels = combine_parts(parts["labels"]) if len(parts["labels"]) == len(prefixes) else None
        where = f"split '{split}', {side} side ({lang}, {prefixes[0]})"
        syntax_io.check_sizes(token_sizes, words.sizes, where)
        syntax_io.check_sizes(words.sizes, heads.sizes, where + " heads vs words", offset=0)
        if labels is not None:
            syntax_io.check_sizes(words.sizes, labels.sizes, where + " labels vs words", offset=0)
        return SideSyntax(words, heads, labels, label_dict, name=where)
