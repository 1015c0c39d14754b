"""``syntax_translation``: translation with aligned dependency syntax.

Extends fairseq's TranslationTask: tokens, dictionaries, batching and generation are fairseq's. On top, it
loads the aligned syntax datasets of the source and/or target side (``{split}.{src}-{tgt}.{lang}.{words,
heads,labels}``, written by ``fairseq-syntax-prepare``) next to the token data, validates their lengths
against the tokens (:mod:`fairseq_syntax.data.datasets.syntax_sides`), and collates parents (under the chosen subword
parent strategy), depths, labels and word indices in the model's coordinates (see
:mod:`fairseq_syntax.data.datasets.syntax_dataset`).

Which fields are collated: ``--source-syntax`` / ``--target-syntax`` take a comma list of
``parents,depths,labels,words``, ``none``, or ``auto`` (the default), which asks the model: a model may define
``syntax_needs() ->`` :class:`~fairseq_syntax.data.datasets.syntax_request.SyntaxNeeds`. A model without it (fairseq's
``transformer``) gets no syntax and trains as with the ``translation`` task. The task's
:class:`SyntaxRequest` is resolved from its options and the needs of the models built on it
(:func:`~fairseq_syntax.data.datasets.syntax_request.resolve_request`), replaced, not changed, when a model is built,
and handed to every dataset it loads.

``fairseq-generate`` passes the checkpoint's saved task config to :meth:`load_dataset`; the syntax options are
read from it, so they need not be repeated at decoding time. Input without syntax files (raw text in
``fairseq-interactive`` and the hub interface, token input) is the business of
:mod:`fairseq_syntax.inference.raw_input`; fairseq's decoding hooks here hand it over.
"""

import logging
import os
from dataclasses import replace
from typing import List, Optional

import torch
from fairseq import utils
from fairseq.data import Dictionary
from fairseq.tasks import register_task
from fairseq.tasks.translation import TranslationTask

from fairseq_syntax.data.alignment import syntax_io
from fairseq_syntax.data.datasets.long_pairs import filter_long_pairs
from fairseq_syntax.data.alignment.mmap_check import (
    check_mmap_dataset,
    check_pairs,
    split_prefixes,
)
from fairseq_syntax.data.datasets.syntax_dataset import SyntaxLanguagePairDataset
from fairseq_syntax.data.datasets.syntax_request import (
    SyntaxNeeds,
    SyntaxRequest,
    resolve_request,
)
from fairseq_syntax.data.datasets.syntax_sides import check_training_sides, load_side
from fairseq_syntax.errors import OptionError, SyntaxDataError
from fairseq_syntax.inference.raw_input import RawInput
from fairseq_syntax.inference.source import EncodedSources
from fairseq_syntax.preparation.databin_record import UNFINISHED_FILE, PreparationRecord
from fairseq_syntax.preparation.trained_on import (
    SAVED_BPE_CODES,
    SAVED_DICTIONARIES,
    SAVED_SYNTAX_OPTIONS,
)
from fairseq_syntax.tasks.checkpoint_state import TrainedOnState
from fairseq_syntax.tasks.syntax_options import SyntaxTranslationConfig, parse_fields

logger = logging.getLogger(__name__)

#: the checkpoint's task_state keys (fairseq_syntax/preparation/trained_on.py), importable from here
__all__ = ["SAVED_SYNTAX_OPTIONS", "SAVED_DICTIONARIES", "SAVED_BPE_CODES", "SyntaxTranslationConfig",
           "SyntaxTranslationTask"]


@register_task("syntax_translation", dataclass=SyntaxTranslationConfig)
class SyntaxTranslationTask(TrainedOnState, TranslationTask):
    """Translation whose batches carry aligned dependency syntax."""

    cfg: SyntaxTranslationConfig

    def __init__(self, cfg, src_dict, tgt_dict, src_label_dict=None, tgt_label_dict=None):
        super().__init__(cfg, src_dict, tgt_dict)
        self.src_label_dict = src_label_dict
        self.tgt_label_dict = tgt_label_dict
        self._explicit = {
            "source": parse_fields(cfg.source_syntax, "source-syntax"),
            "target": parse_fields(cfg.target_syntax, "target-syntax"),
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
        """fairseq's filter of pairs longer than the model reads, counted and checked (data/datasets/long_pairs.py)."""
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

    def _adopt_saved_config(self, task_cfg):
        """fairseq-generate: the syntax options the checkpoint was trained with (explicit fields and parent
        strategy) replace this command line's 'auto' (an explicit option here wins)."""
        strategy = getattr(task_cfg, "parent_strategy", None)
        if strategy is not None and str(strategy) != "auto" and self._strategy is None:
            self._strategy = str(strategy)
        for side, opt in (("source", "source_syntax"), ("target", "target_syntax")):
            explicit = parse_fields(getattr(task_cfg, opt, None), opt.replace("_", "-"))
            if explicit is not None and self._explicit[side] is None:
                self._explicit[side] = explicit
        self._set_request(self._resolve_request())
