"""Language-pair dataset with aligned syntax, collated in model coordinates.

Wraps fairseq's :class:`~fairseq.data.LanguagePairDataset` (which keeps doing
tokens, batching, sorting and padding) and adds per-token syntax fields to
each batch under ``sample["syntax"]`` (and, for the fields a model consumes
at inference, also under ``sample["net_input"]``).

Coordinates (DESIGN.md, "Inside fairseq"):

* **source** fields align with ``net_input["src_tokens"]``: the sentence's n
  BPE tokens followed by EOS, left-padded by default. Every parent index is
  shifted by the row's pad offset; EOS is its own parent (depth 0, word 0,
  label ``<eos>``); padding positions hold -1 as parent and 0 elsewhere.
* **target** fields align with ``net_input["prev_output_tokens"]`` (decoder
  input coordinates): position 0 holds the EOS that starts decoding and is
  its own parent; position j >= 1 holds y_j, the j-th target BPE token, so a
  parent subword k (0-based) appears as k + 1. Arcs to later positions are
  kept: the consumer masks them (future masking, Deguchi et al. 2019 Fig. 3).
* ``src_supervised`` / ``tgt_supervised`` mark the positions that carry a
  real token (not EOS, not padding): only those are supervised.

Fields (per side, as requested by the task): ``parents`` (long; float for
the ``middle`` strategy), ``depths`` (long), ``labels`` (long, ids of the
label dictionary), ``words`` (long, 1-based node index of each token).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, FrozenSet, Optional

import numpy as np
import torch
from fairseq.data import BaseWrapperDataset

from fairseq_syntax.data.parent_strategies import STRATEGIES, subword_depths, subword_parents
from fairseq_syntax.errors import SyntaxDataError

SIDE_FIELDS = ("parents", "depths", "labels", "words")
TARGET_COORDINATES = ("target", "decoder_input")


@dataclass
class SyntaxRequest:
    """Which syntax fields to collate; shared between a task and its datasets.

    ``source`` / ``target``: subsets of :data:`SIDE_FIELDS`. ``inputs``: names
    such as ``"src_parents"`` that the model takes as forward() arguments and
    that therefore also go into ``net_input``. ``strategy``: the subword
    parent strategy of both sides, unless ``target_strategy`` is set (a model
    may use PASCAL's ``middle`` parents in the encoder and DBSA's ``chain``
    parents in the decoder). ``target_coordinates``: ``"target"`` or
    ``"decoder_input"`` (see the module docstring).
    """

    strategy: str = "chain"
    source: FrozenSet[str] = frozenset()
    target: FrozenSet[str] = frozenset()
    inputs: FrozenSet[str] = frozenset()
    target_strategy: Optional[str] = None
    target_coordinates: str = "target"

    def __post_init__(self):
        for s in (self.strategy, self.target_strategy):
            if s is not None and s not in STRATEGIES:
                raise ValueError(f"parent strategy must be one of {STRATEGIES}, not {s!r}")
        if self.target_coordinates not in TARGET_COORDINATES:
            raise ValueError(f"target coordinates must be one of {TARGET_COORDINATES}, not "
                             f"{self.target_coordinates!r}")
        for side in ("source", "target"):
            bad = set(getattr(self, side)) - set(SIDE_FIELDS)
            if bad:
                raise ValueError(f"unknown {side} syntax field(s) {sorted(bad)}; known: {SIDE_FIELDS}")

    def strategy_of(self, side: str) -> str:
        if side == "target" and self.target_strategy is not None:
            return self.target_strategy
        return self.strategy

    def needs(self, side: str) -> FrozenSet[str]:
        return self.source if side == "source" else self.target

    def required(self, side: str) -> FrozenSet[str]:
        """Fields of a side the model takes as inputs: a split must have them.

        The other fields only supervise training (e.g. DBSA's gold parents);
        a split without syntax data (a test set at decoding time) simply
        comes without them.
        """
        prefix = "src_" if side == "source" else "tgt_"
        return frozenset(f for f in self.needs(side) if prefix + f in self.inputs)


class SideSyntax:
    """The syntax datasets of one side (words, heads and optional labels)."""

    def __init__(self, words, heads, labels=None, label_dict=None, name: str = ""):
        self.words = words
        self.heads = heads
        self.labels = labels
        self.label_dict = label_dict
        self.name = name

    def __len__(self):
        return len(self.words)


def _side_item(side: SideSyntax, index: int, fields, strategy: str, decoder_input: bool) -> Dict[str, np.ndarray]:
    """Unpadded per-position arrays for one sentence, EOS included; bad data names the sentence."""
    try:
        return _side_arrays(side, index, fields, strategy, decoder_input)
    except (IndexError, ValueError) as e:
        raise SyntaxDataError(f"{side.name}, sentence {index}", f"malformed syntax data: {e}") from e


def _side_arrays(side: SideSyntax, index: int, fields, strategy: str, decoder_input: bool) -> Dict[str, np.ndarray]:
    word = side.words[index].numpy().astype(np.int64)
    head = side.heads[index].numpy().astype(np.int64)
    n = len(word)
    if n and (word[0] != 1 or (np.diff(word) < 0).any() or (np.diff(word) > 1).any() or head.min() < 0
              or head.max() > word[-1]):
        raise ValueError(f"word indices must run 1..W in order and heads lie in 0..W (words {word.tolist()}, "
                         f"heads {head.tolist()})")
    out = {}
    shift = 1 if decoder_input else 0  # decoder input: position j holds y_j
    eos_pos = 0 if decoder_input else n
    if "parents" in fields:
        par = subword_parents(word, head, strategy) + shift
        out["parents"] = np.insert(par, eos_pos, eos_pos).astype(par.dtype)
    if "depths" in fields:
        out["depths"] = np.insert(subword_depths(word, head), eos_pos, 0)
    if "words" in fields:
        out["words"] = np.insert(word, eos_pos, 0)
    if "labels" in fields:
        if side.labels is None:
            raise SyntaxDataError(side.name, "labels were requested but no labels dataset was loaded")
        lab = side.labels[index].numpy().astype(np.int64)
        out["labels"] = np.insert(lab, eos_pos, side.label_dict.eos())
    return out


class SyntaxLanguagePairDataset(BaseWrapperDataset):
    """A LanguagePairDataset plus the syntax of its source and/or target side."""

    def __init__(
        self,
        dataset,
        request: SyntaxRequest,
        src_syntax: Optional[SideSyntax] = None,
        tgt_syntax: Optional[SideSyntax] = None,
    ):
        super().__init__(dataset)
        self.request = request
        self.src_syntax = src_syntax
        self.tgt_syntax = tgt_syntax
        for attr in ("append_bos", "remove_eos_from_source"):
            if getattr(dataset, attr, False):
                raise SyntaxDataError(
                    "syntax_translation",
                    f"the token dataset uses {attr}; syntax coordinates assume tokens followed by EOS only",
                )

    def batch_by_size(self, indices, max_tokens=None, max_sentences=None, required_batch_size_multiple=1):
        """fairseq's batching, without losing the last batch.

        fairseq 0.12's ``data_utils.batch_by_size`` drops the final batch when
        its size is not a multiple of ``--required-batch-size-multiple``
        (default 8; facebookresearch/fairseq#5036), so up to 7 of the longest
        sentences of every split were silently never trained on, validated or
        translated. The batches are fairseq's; the dropped tail is put back.
        """
        batches = self.dataset.batch_by_size(
            indices,
            max_tokens=max_tokens,
            max_sentences=max_sentences,
            required_batch_size_multiple=required_batch_size_multiple,
        )
        covered = sum(len(b) for b in batches)
        if covered < len(indices):
            batches = list(batches) + [np.asarray(indices[covered:], dtype=np.int64)]
        return batches

    def _side(self, side: str) -> Optional[SideSyntax]:
        syn = self.src_syntax if side == "source" else self.tgt_syntax
        if self.request.required(side) and syn is None:
            raise SyntaxDataError(
                "syntax_translation",
                f"{side} syntax ({', '.join(sorted(self.request.required(side)))}) is a model input but no {side} "
                "syntax data was found next to the token data: run preprocess/binarize.py for this split",
            )
        return syn

    def __getitem__(self, index):
        item = self.dataset[index]
        syntax = {}
        decoder_input = self.request.target_coordinates == "decoder_input"
        for side, prefix, decoder_input in (("source", "src_", False), ("target", "tgt_", decoder_input)):
            fields = self.request.needs(side)
            if not fields:
                continue
            syn = self._side(side)
            if syn is None:  # supervision-only fields, split without syntax data
                continue
            arrays = _side_item(syn, index, fields, self.request.strategy_of(side), decoder_input)
            tokens = item["source" if side == "source" else "target"]
            if tokens is not None and len(tokens) != len(next(iter(arrays.values()))):
                raise SyntaxDataError(
                    f"{syn.name}, sentence {index}",
                    f"{len(tokens)} tokens (with EOS) but {len(next(iter(arrays.values())))} syntax positions",
                )
            for k, v in arrays.items():
                syntax[prefix + k] = v
        if syntax:
            item["syntax"] = syntax
        return item

    def collater(self, samples, **kwargs):
        batch = self.dataset.collater(samples, **kwargs)
        if not batch or "syntax" not in samples[0]:
            return batch
        by_id = {s["id"]: s["syntax"] for s in samples}
        order = batch["id"].tolist()
        ds = self.dataset
        out = {}
        if self.request.source and self.src_syntax is not None:
            width = batch["net_input"]["src_tokens"].size(1)
            out.update(
                _collate_side(
                    [by_id[i] for i in order], "src_", width, ds.left_pad_source, self.request.source,
                    _label_pad(self.src_syntax),
                )
            )
            out["src_supervised"] = _supervised(batch["net_input"]["src_tokens"], ds.src_dict, decoder_input=False)
        if self.request.target and self.tgt_syntax is not None and batch.get("target") is not None:
            width = batch["target"].size(1)
            out.update(
                _collate_side(
                    [by_id[i] for i in order], "tgt_", width, ds.left_pad_target, self.request.target,
                    _label_pad(self.tgt_syntax),
                )
            )
            out["tgt_supervised"] = _supervised(batch["target"], ds.tgt_dict,
                                                decoder_input=self.request.target_coordinates == "decoder_input")
        batch["syntax"] = out
        for name in self.request.inputs:
            if name in out:
                batch["net_input"][name] = out[name]
        return batch


def collate_rows(side: SideSyntax, fields, strategy: str, width: int, left_pad: bool, prefix: str = "src_"):
    """Source fields of sentences 0..n-1 of ``side``, in that row order, padded to ``width``.

    For batches that were collated without syntax (fairseq-interactive): the
    same coordinates as :meth:`SyntaxLanguagePairDataset.collater`.
    """
    rows = []
    for i in range(len(side)):
        arrays = _side_item(side, i, fields, strategy, decoder_input=False)
        rows.append({prefix + k: v for k, v in arrays.items()})
    return _collate_side(rows, prefix, width, left_pad, fields, _label_pad(side))


def _label_pad(side: Optional[SideSyntax]) -> int:
    return side.label_dict.pad() if side is not None and side.label_dict is not None else 1


def _collate_side(rows, prefix, width, left_pad, fields, label_pad):
    """Pad per-sentence arrays to ``width`` and shift indices by the pad offset."""
    out = {}
    bsz = len(rows)
    pad_value = {"parents": -1, "depths": 0, "labels": label_pad, "words": 0}
    for f in fields:
        key = prefix + f
        arrs = [r[key] for r in rows]
        is_float = arrs[0].dtype.kind == "f"
        pad = pad_value[f]
        buf = np.full((bsz, width), pad, dtype=np.float32 if is_float else np.int64)
        for b, a in enumerate(arrs):
            n = len(a)
            off = width - n if left_pad else 0
            if f == "parents":
                buf[b, off : off + n] = a + off
            else:
                buf[b, off : off + n] = a
        out[key] = torch.from_numpy(buf)
    return out


def _supervised(tokens: torch.Tensor, dictionary, decoder_input: bool) -> torch.Tensor:
    """Real-token positions (not EOS, not pad) of ``tokens`` (src_tokens or target), in their coordinates
    or, with ``decoder_input``, in those of prev_output_tokens.

    For the decoder input, position j >= 1 holds y_j = target[j - 1]; the last
    target token (EOS) is never a decoder input, and position 0 (the EOS that
    starts decoding) is not supervised.
    """
    real = tokens.ne(dictionary.pad()) & tokens.ne(dictionary.eos())
    if not decoder_input:
        return real
    # target[:, j-1] is the decoder input at position j
    sup = torch.zeros_like(real)
    sup[:, 1:] = real[:, :-1]
    return sup
