"""``syntax_translation``: translation with aligned dependency syntax.

Extends fairseq's TranslationTask: tokens, dictionaries, batching and generation are fairseq's. On top, it
loads the aligned syntax datasets of the source and/or target side (``{split}.{src}-{tgt}.{lang}.{words,
heads,labels}``, written by ``fairseq-syntax-prepare``) next to the token data, validates their lengths
against the tokens (:mod:`fairseq_syntax.data.syntax_sides`), and collates parents (under the chosen subword
parent strategy), depths, labels and word indices in the model's coordinates (see
:mod:`fairseq_syntax.data.syntax_dataset`).

Which fields are collated: ``--source-syntax`` / ``--target-syntax`` take a comma list of
``parents,depths,labels,words``, ``none``, or ``auto`` (the default), which asks the model: a model may define
``syntax_needs() ->`` :class:`~fairseq_syntax.data.syntax_request.SyntaxNeeds`. A model without it (fairseq's
``transformer``) gets no syntax and trains as with the ``translation`` task. The task's
:class:`SyntaxRequest` is resolved from its options and the needs of the models built on it
(:func:`~fairseq_syntax.data.syntax_request.resolve_request`), replaced, not changed, when a model is built,
and handed to every dataset it loads.

``fairseq-generate`` passes the checkpoint's saved task config to :meth:`load_dataset`; the syntax options are
read from it, so they need not be repeated at decoding time. Input without syntax files (raw text in
``fairseq-interactive`` and the hub interface, token input) is the business of
:mod:`fairseq_syntax.inference.raw_input`; fairseq's decoding hooks here hand it over.
"""

import logging
import os
import types
from dataclasses import dataclass, field, replace
from typing import List, Optional

import torch
from fairseq import utils
from fairseq.data import Dictionary
from fairseq.dataclass import ChoiceEnum
from fairseq.tasks import register_task
from fairseq.tasks.translation import TranslationConfig, TranslationTask

from fairseq_syntax.data import syntax_io
from fairseq_syntax.data.long_pairs import filter_long_pairs
from fairseq_syntax.data.mmap_check import (
    check_mmap_dataset,
    check_pairs,
    split_prefixes,
)
from fairseq_syntax.data.parent_strategies import STRATEGIES
from fairseq_syntax.data.syntax_dataset import SyntaxLanguagePairDataset
from fairseq_syntax.data.syntax_request import (
    SIDE_FIELDS,
    SyntaxNeeds,
    SyntaxRequest,
    resolve_request,
)
from fairseq_syntax.data.syntax_sides import check_training_sides, load_side
from fairseq_syntax.errors import OptionError, SyntaxDataError
from fairseq_syntax.inference.raw_input import RawInput
from fairseq_syntax.inference.source import EncodedSources
from fairseq_syntax.preparation.record import UNFINISHED_FILE, PreparationRecord

logger = logging.getLogger(__name__)

#: the key of the training command's syntax options in a checkpoint's task state (SyntaxTranslationTask.state_dict)
SAVED_SYNTAX_OPTIONS = "fairseq_syntax_options"
#: task_state key: a digest of each dictionary the model was trained with (its token and label indices)
SAVED_DICTIONARIES = "fairseq_syntax_dictionaries"
#: task_state key: the SHA-256 of each language's BPE codes in the preparation record the model was trained with
SAVED_BPE_CODES = "fairseq_syntax_bpe_codes"

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
    inference_parser: ChoiceEnum(("auto", "self", "stanza", "spacy", "udpipe", "conllu")) = field(
        default="auto",
        metadata={
            "help": "parser for sentences decoded without syntax data when the model needs the source parse "
            "(PASCAL, S&H labels, dependency relative positions): auto (default): raw text is encoded as the "
            "data-bin's preparation.json says (its normalisation, parser and BPE: fairseq-interactive needs no "
            "--bpe), and token input is parsed by that record's parser (stanza without a record); self: no "
            "parser, a self-parsing model (--self-parse) reads its own parse head's tree (a tree in the data is "
            "not used; raw text is only tokenised); or stanza, spacy (e.g. GiNZA), udpipe, conllu (look each "
            "sentence up in the CoNLL-U file --inference-parser-model) for token input"
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
        self.raw_input = RawInput(self)  # decoding input without syntax files (inference/raw_input.py)
        self.model_needs: List[SyntaxNeeds] = []  # of the models built on this task, in order
        self.model_max_source_positions: List[int] = []  # of the models built on this task (raw lines' limit)
        self._saved_syntax_options: Optional[dict] = None  # of the first checkpoint loaded (load_state_dict)
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

    # --- decoding input without syntax files: fairseq's hooks, delegated to inference/raw_input.py -----------
    @property
    def data_dir(self) -> str:
        return utils.split_paths(self.cfg.data)[0]

    @property
    def record(self) -> Optional[PreparationRecord]:
        """How the data-bin was made (DATA-BIN/preparation.json), or None for a data-bin made without one."""
        return self.raw_input.record

    def build_bpe(self, args):
        """fairseq-interactive asks for the BPE with no dataset loaded: with no ``--bpe`` given and a preparation
        record present, raw source lines are encoded as the record says and the output detokenised as the
        training text was written. fairseq-generate (which loads its split first) keeps fairseq's behaviour:
        its S-/T-/H- lines stay tokenised."""
        if ((args is None or getattr(args, "_name", None) is None) and not self.raw_input.tokenizer_given
                and self.record is not None and not self.datasets):
            self.raw_input.raw_text = True
            return self.raw_input.recorded_text()
        if not self.datasets:  # fairseq-interactive with its own --bpe / --tokenizer: the record's segmentation
            self.raw_input.check_given_segmentation(args if getattr(args, "_name", None) is not None else None)
        return super().build_bpe(args)

    def build_tokenizer(self, args):
        self.raw_input.tokenizer_given = args is not None and getattr(args, "_name", None) is not None
        return super().build_tokenizer(args)

    def get_interactive_tokens_and_lengths(self, lines, encode_fn):
        if not self.raw_input.raw_text:
            return super().get_interactive_tokens_and_lengths(lines, encode_fn)
        return self.raw_input.interactive_lines(lines)

    def build_dataset_for_inference(self, src_tokens, src_lengths, constraints=None):
        base = super().build_dataset_for_inference(src_tokens, src_lengths, constraints=constraints)
        if isinstance(src_tokens, EncodedSources):
            return self.raw_input.dataset_for_inference(base, src_tokens)
        return base

    # --- what the model needs -------------------------------------------------
    def build_model(self, cfg, from_checkpoint=False):
        model = super().build_model(cfg, from_checkpoint)
        limits = model.max_positions() if callable(getattr(model, "max_positions", None)) else None
        if isinstance(limits, tuple) and limits and limits[0]:  # raw lines longer than a model reads are refused
            self.model_max_source_positions.append(int(limits[0]))
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
        """Every syntax side the models read or learn is in the data-bin for the training split and the splits
        loaded so far (fairseq-train loads its validation splits before it builds the model): a missing side is
        one error naming the files, before anything is trained or written."""
        splits = [self.cfg.train_subset] + [s for s in self.datasets if s != self.cfg.train_subset]
        check_training_sides(self.data_dir, splits, self.cfg.source_lang, self.cfg.target_lang,
                             self.syntax_request, model_name)

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
    def get_batch_iterator(self, dataset, seed=1, epoch=1, update_epoch_batch_itr=False, **kwargs):
        """fairseq's iterator, its batches made as at epoch 1 whatever epoch it is made at.

        fairseq 0.12.3 draws the order of the sentences of one length (which decides the batches and the row
        order within each) with numpy seed ``--seed`` + the epoch the iterator is made at, then keeps those
        batches for every later epoch: a training resumed from checkpoint_last.pt at epoch k trained on other
        batches than the same training uninterrupted (made at epoch 1), and another dropout mask fell on each
        row. Here the batches are made with the seed of epoch 1, and the iterator keeps ``--seed`` for its
        shuffle of the batches by epoch, so that a resumed run takes up the uninterrupted run's course
        (tests/test_resume_equivalence.py). An uninterrupted run is as before; batches rebuilt every epoch
        (``--update-epoch-batch-itr``, rebuild_batches, sharded data: fairseq makes them anew every epoch) keep
        fairseq's per-epoch draw. With ``--update-ordered-indices-seed`` (the seed given already holds the
        epoch) a resumed run still draws other batches, as in fairseq."""
        anew = (epoch == 1 or update_epoch_batch_itr or getattr(self.cfg, "rebuild_batches", False)
                or kwargs.get("disable_iterator_cache") or not self.can_reuse_epoch_itr(dataset))
        itr = super().get_batch_iterator(dataset, seed=seed if anew else seed + 1 - epoch, epoch=epoch,
                                         update_epoch_batch_itr=update_epoch_batch_itr, **kwargs)
        itr.seed = seed
        return itr

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
        request = self.syntax_request
        if self.raw_input.self_parsed and split != self.cfg.train_subset:
            # parser-free decoding: the model reads its own parse head's tree, so a split decoded this way needs
            # no source parse (a new test set is binarized without one: no parser anywhere)
            request = replace(request, inputs=frozenset(x for x in request.inputs if not x.startswith("src_")))
        sides = {}
        for side, lang, sizes in (("source", src, base.src_sizes), ("target", tgt, base.tgt_sizes)):
            if side == "source" or base.tgt is not None:
                label_dict = self.src_label_dict if side == "source" else self.tgt_label_dict
                sides[side] = load_side(data_path, split, src, tgt, lang, side, sizes, combine, label_dict,
                                        request, self.cfg.upsample_primary)
        src_syn, tgt_syn = sides["source"], sides.get("target")
        self.datasets[split] = SyntaxLanguagePairDataset(base, request, src_syn, tgt_syn)

    def inference_step(self, generator, models, sample, prefix_tokens=None, constraints=None):
        """Decoding; source syntax inputs missing from the batch are parsed on the fly, and an empty source
        (EOS alone: an empty input line) gets an empty translation.

        Batches built from token ids only (fairseq's hub ``generate`` on token tensors, ``fairseq-interactive``
        with ``--bpe``) lack the source parse: a model that takes it gets it here, from ``--inference-parser``.
        """
        self.raw_input.add_missing_source_inputs(sample)
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

    def state_dict(self):
        """fairseq saves this in every checkpoint (``task_state``): besides fairseq's own task state, the syntax
        options training was given, which a decoding that reads no saved task config (fairseq-interactive, the
        hub) adopts as fairseq-generate does from the saved config (:meth:`_adopt_saved_config`)."""
        state = dict(super().state_dict())
        state[SAVED_SYNTAX_OPTIONS] = {"parent_strategy": str(self.cfg.parent_strategy),
                                       "source_syntax": str(self.cfg.source_syntax),
                                       "target_syntax": str(self.cfg.target_syntax)}
        state[SAVED_DICTIONARIES] = self._dictionary_digests()
        state[SAVED_BPE_CODES] = self._codes_digests()
        return state

    def _codes_digests(self) -> dict:
        """Language -> the SHA-256 of its BPE codes in the data-bin's preparation record ({} without a record or
        BPE), once per task: raw input decoded later must be segmented with these codes."""
        if getattr(self, "_codes_digest_cache", None) is None:
            from fairseq_syntax.durable_files import file_sha256

            out = {}
            try:  # training does not depend on the record: one it cannot read leaves nothing to check later
                record = self.raw_input.record
                for lang in (self.cfg.source_lang, self.cfg.target_lang):
                    path = (record.bpe_codes(lang, self.data_dir, check_trained=False)
                            if record is not None and record.bpe and lang in record.bpe else None)
                    if path:
                        out[lang] = file_sha256(path)
            except (SyntaxDataError, OSError) as e:
                logger.warning("no BPE codes digest in the checkpoints: %s", e)
                out = {}
            self._codes_digest_cache = out
        return self._codes_digest_cache

    def _dictionary_digests(self) -> dict:
        """File name -> a digest of the dictionary's symbols in index order, for each dictionary of the task."""
        import hashlib

        out = {}
        for lang, d, labels in ((self.cfg.source_lang, self.src_dict, self.src_label_dict),
                                (self.cfg.target_lang, self.tgt_dict, self.tgt_label_dict)):
            for name, dictionary in ((f"dict.{lang}.txt", d), (f"dict.{lang}.labels.txt", labels)):
                if dictionary is not None:
                    out[name] = hashlib.sha256("\n".join(dictionary.symbols).encode("utf-8")).hexdigest()[:16]
        return out

    def _check_dictionaries(self, saved) -> None:
        """A checkpoint read with dictionaries other than its training's (another data-bin of the same sizes)
        maps every index to another token or label and decodes garbage without an error: refused."""
        if not isinstance(saved, dict):
            return  # a checkpoint saved before the digests
        mine = self._dictionary_digests()
        differ = sorted(k for k, v in saved.items() if k in mine and mine[k] != v)
        if differ:
            raise SyntaxDataError(os.path.join(self.data_dir, differ[0]), "not the dictionary this checkpoint was "
                                  f"trained with ({', '.join(differ)} differ{'s' if len(differ) == 1 else ''}): "
                                  "its indices name other tokens or labels; give the data-bin it was trained on")

    def load_state_dict(self, state_dict):
        """fairseq calls this once per checkpoint it loads, before it builds that model: the first checkpoint's
        syntax options are adopted; an ensemble whose checkpoints were trained with others is refused, naming
        them, unless this command line gives them."""
        saved = state_dict.get(SAVED_SYNTAX_OPTIONS)
        self._check_dictionaries(state_dict.get(SAVED_DICTIONARIES))
        codes = state_dict.get(SAVED_BPE_CODES)
        if isinstance(codes, dict) and codes:
            self.raw_input.expect_trained_codes(codes)  # checked where raw input is segmented
        super().load_state_dict({k: v for k, v in state_dict.items()
                                 if k not in (SAVED_SYNTAX_OPTIONS, SAVED_DICTIONARIES, SAVED_BPE_CODES)})
        if not isinstance(saved, dict):
            return
        first = self._saved_syntax_options
        if first is not None:
            differ = [k for k in saved if saved[k] != first.get(k) and str(getattr(self.cfg, k, "auto")) == "auto"]
            if differ:
                raise OptionError("the checkpoints were trained with different " + ", ".join(
                    f"--{k.replace('_', '-')} ({first.get(k)} and {saved[k]})" for k in differ)
                    + ": an ensemble reads one; give it on this command line")
            return
        self._saved_syntax_options = dict(saved)
        self._adopt_saved_config(types.SimpleNamespace(**saved))

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
