"""fairseq's token batches (``LanguagePairDataset``), read and collated with a few numpy calls per batch.

Collation must keep up with a GPU. fairseq 0.12 reads each
sentence through ``MMapIndexedDataset.__getitem__`` (two lru_caches and a
tensor per side) and ``language_pair_dataset.collate`` pads every sentence
with its own tensor copy (``data_utils.collate_tokens``, three times per
batch: source, target and the shifted decoder input) and counts each
sentence's non-pad tokens with three tensor calls: per-sentence Python work
(what it costs: docs/benchmarks.md, "Collation").

:class:`TokenPairs` builds the same batch, value for value and key for key:
items are read as views of the memory maps (:mod:`mmap_views`) and copied
into int64 tensors as fairseq does; the collater concatenates a side's
sentences once and writes each padded (B, T) matrix with one fancy-index
assignment; rows are sorted with fairseq's own call
(``src_lengths.sort(descending=True)``), so ties keep fairseq's order.

Only the configuration that syntax_translation uses takes this path
(:meth:`TokenPairs.reads` / :meth:`TokenPairs.collates`): a plain
``LanguagePairDataset`` without alignments, constraints, language ids, or
BOS/EOS rewriting of items (reading also needs memory-mapped token data).
Everything else goes through fairseq unchanged. ``tests/test_token_collation.py``
compares the two on real treebank text and random batches.
"""
from __future__ import annotations

from typing import List, Optional

import numpy as np
import torch

from fairseq_syntax.data.datasets.mmap_views import mmap_reader
from fairseq_syntax.data.alignment.parent_strategies import concatenation_layout


class TokenPairs:
    """Fast reading and collation of one ``LanguagePairDataset``'s tokens (see the module docstring)."""

    def __init__(self, dataset):
        self.dataset = dataset
        self._readers = None

    # --- which configurations take the fast path -------------------------------------------------------------
    def collates(self) -> bool:
        """True when fairseq's collater would do nothing beyond ``collate()`` on source/target tokens."""
        from fairseq.data import LanguagePairDataset

        ds = self.dataset
        return (type(ds) is LanguagePairDataset and ds.align_dataset is None and ds.constraints is None
                and ds.src_lang_id is None and ds.tgt_lang_id is None and ds.src_dict.pad() == (
                    ds.tgt_dict.pad() if ds.tgt_dict is not None else ds.src_dict.pad()))

    def reads(self) -> bool:
        """True when items are plain memory-mapped sentences (no EOS/BOS rewriting in ``__getitem__``)."""
        ds = self.dataset
        if not self.collates() or ds.append_eos_to_target or ds.append_bos or ds.remove_eos_from_source:
            return False
        return self._get_readers() is not None

    def _get_readers(self):
        if self._readers is None:
            ds = self.dataset
            src = mmap_reader(ds.src)
            tgt = mmap_reader(ds.tgt) if ds.tgt is not None else None
            if src is None or (ds.tgt is not None and tgt is None):
                return None
            self._readers = (src, tgt)
        return self._readers

    def __getstate__(self):  # DataLoader workers: the readers hold views of the memory maps
        return {"dataset": self.dataset, "_readers": None}

    # --- items --------------------------------------------------------------------------------------------------
    def item(self, index: int) -> dict:
        """``LanguagePairDataset.__getitem__(index)`` for the plain configuration (:meth:`reads`)."""
        src, tgt = self._get_readers()
        index = int(index)
        return {
            "id": index,
            "source": torch.from_numpy(src(index).astype(np.int64)),
            "target": torch.from_numpy(tgt(index).astype(np.int64)) if tgt is not None else None,
        }

    # --- batches ------------------------------------------------------------------------------------------------
    def collate(self, samples: List[dict], pad_to_length: Optional[dict] = None) -> dict:
        """``LanguagePairDataset.collater(samples, pad_to_length)`` for the configurations of :meth:`collates`."""
        if len(samples) == 0:
            return {}
        ds = self.dataset
        pad, eos, multiple = ds.src_dict.pad(), ds.eos, ds.pad_to_multiple
        bsz = len(samples)
        ids = torch.from_numpy(np.fromiter((s["id"] for s in samples), dtype=np.int64, count=bsz))
        src = _Side([s["source"] for s in samples], pad)
        src_tokens = src.matrix(ds.left_pad_source, _min_width(pad_to_length, "source"), multiple)
        src_lengths, sort_order = torch.from_numpy(src.nonpad).sort(descending=True)
        order = sort_order.numpy()
        batch_ids = ids.index_select(0, sort_order)
        prev_output_tokens = target = None
        if samples[0].get("target", None) is not None:
            tgt = _Side([s["target"] for s in samples], pad)
            width = _min_width(pad_to_length, "target")
            target = torch.from_numpy(tgt.matrix(ds.left_pad_target, width, multiple)[order])
            ntokens = int(tgt.nonpad[order].sum())
            if samples[0].get("prev_output_tokens", None) is not None:
                prev_output_tokens = torch.from_numpy(
                    _Side([s["prev_output_tokens"] for s in samples], pad).matrix(ds.left_pad_target, None, multiple)
                )
            elif ds.input_feeding:
                prev_output_tokens = torch.from_numpy(tgt.matrix(ds.left_pad_target, width, multiple, eos_first=eos))
        else:
            ntokens = int(src_lengths.sum())
        batch = {
            "id": batch_ids,
            "nsentences": bsz,
            "ntokens": ntokens,
            "net_input": {"src_tokens": torch.from_numpy(src_tokens[order]), "src_lengths": src_lengths},
            "target": target,
        }
        if prev_output_tokens is not None:
            batch["net_input"]["prev_output_tokens"] = prev_output_tokens.index_select(0, sort_order)
        return batch


def _min_width(pad_to_length: Optional[dict], key: str) -> Optional[int]:
    return pad_to_length[key] if pad_to_length is not None else None


class _Side:
    """One side's sentences of a batch, concatenated once."""

    def __init__(self, tensors: List[torch.Tensor], pad: int):
        arrays = [t.numpy() for t in tensors]
        self.dtype = arrays[0].dtype
        self.lengths = np.fromiter((len(a) for a in arrays), dtype=np.int64, count=len(arrays))
        self.flat = np.concatenate(arrays)
        self.starts, self.row = concatenation_layout(self.lengths)
        #: non-pad tokens per sentence (fairseq's src_lengths / tgt_lengths)
        self.nonpad = np.bincount(self.row, weights=self.flat != pad, minlength=len(arrays)).astype(np.int64)
        self.pad = pad

    def matrix(self, left_pad: bool, min_width: Optional[int], multiple: int, eos_first: Optional[int] = None):
        """The padded (B, T) matrix of ``data_utils.collate_tokens`` (``move_eos_to_beginning`` with ``eos_first``)."""
        bsz = len(self.lengths)
        width = int(self.lengths.max())
        if min_width is not None:
            width = max(width, min_width)
        if multiple != 1 and width % multiple != 0:
            width = int(((width - 0.1) // multiple + 1) * multiple)
        out = np.full((bsz, width), self.pad, dtype=self.dtype)
        first = (width - self.lengths) if left_pad else np.zeros(bsz, dtype=np.int64)  # column of token 0
        rows = np.arange(bsz, dtype=np.int64) * width + first  # flat index of each row's token 0
        flat_pos = np.arange(len(self.flat), dtype=np.int64) - self.starts[self.row] + rows[self.row]
        flat_out = out.reshape(-1)
        if eos_first is None:
            flat_out[flat_pos] = self.flat
        else:  # token k moves to column k + 1; the last token goes; EOS takes column 0
            keep = np.ones(len(self.flat), dtype=bool)
            nonempty = self.lengths > 0
            keep[(self.starts + self.lengths - 1)[nonempty]] = False
            flat_out[flat_pos[keep] + 1] = self.flat[keep]
            flat_out[rows[nonempty]] = eos_first
        return out
