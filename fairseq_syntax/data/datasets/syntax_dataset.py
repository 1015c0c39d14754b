"""Language-pair dataset with aligned syntax, collated in model coordinates.

Wraps fairseq's :class:`~fairseq.data.LanguagePairDataset` (which keeps doing tokens, batching, sorting and
padding) and adds per-token syntax fields to each batch under ``sample["syntax"]`` (and, for the fields a model
consumes at inference, also under ``sample["net_input"]``).

Coordinates (docs/design.md, "Index conventions", inside fairseq):

* **source** fields align with ``net_input["src_tokens"]`` (n BPE tokens, EOS, left-padded by default): parents
  are shifted by the row's pad offset; EOS is its own parent; padding holds -1 as parent and 0 elsewhere.
* **target** fields align with ``net_input["prev_output_tokens"]``: position 0 is the EOS that starts decoding
  (its own parent), so subword k appears as k + 1; arcs to later positions are kept for the consumer to mask.
* ``src_supervised`` / ``tgt_supervised`` mark the positions that carry a real token (not EOS, not padding):
  only those are supervised.

Fields (per side, as requested by the task): ``parents`` (long; float64 for the ``middle`` strategy, because
fairseq's trainer casts a batch's float32 tensors to fp16 / bf16, which cannot hold every x.5 position, and
leaves float64 alone; PASCAL converts them where it computes its weights), ``depths`` (long), ``labels`` (long,
ids of the label dictionary), ``words`` (long, 1-based node index of each token).

``__getitem__`` only reads zero-copy views of the memory-mapped datasets; the collater derives every syntax field
for the whole batch at once (vectorised over the concatenated sentences, fairseq's token batch through
:mod:`~fairseq_syntax.data.datasets.token_collation` where it applies), so its cost barely grows with the batch.
"""
from __future__ import annotations

from typing import List, Optional, Sequence, Tuple

import numpy as np
import torch
from fairseq.data import BaseWrapperDataset

from fairseq_syntax.data.datasets.mmap_views import array_reader
from fairseq_syntax.data.alignment.parent_strategies import (
    ConcatenatedTrees,
    CycleError,
    concatenation_layout,
)
from fairseq_syntax.data.datasets.syntax_request import SIDE_FIELDS, SyntaxRequest
from fairseq_syntax.data.datasets.token_collation import TokenPairs
from fairseq_syntax.errors import SyntaxDataError

__all__ = ["SIDE_FIELDS", "SideSyntax", "SyntaxLanguagePairDataset", "SyntaxRequest", "collate_rows"]


class SideSyntax:
    """The syntax datasets of one side (words, heads and optional labels)."""

    def __init__(self, words, heads, labels=None, label_dict=None, name: str = ""):
        self.words = words
        self.heads = heads
        self.labels = labels
        self.label_dict = label_dict
        self.name = name
        self._readers = None

    def __len__(self):
        return len(self.words)

    def read(self, index: int, labels: bool):
        """(word, head, labels or None) of one sentence as 1-D integer numpy arrays, unchecked."""
        if self._readers is None:
            self._readers = tuple(array_reader(d) if d is not None else None
                                  for d in (self.words, self.heads, self.labels))
        rw, rh, rl = self._readers
        return rw(index), rh(index), (rl(index) if labels and rl is not None else None)

    def __getstate__(self):  # DataLoader workers: the readers hold views of the memory maps
        state = dict(self.__dict__)
        state["_readers"] = None
        return state


#: one sentence of one side as read from the syntax datasets: (word, head, labels or None), integer arrays
RawSide = Tuple[np.ndarray, np.ndarray, Optional[np.ndarray]]


def _read_side(side: SideSyntax, index: int, labels: bool) -> RawSide:
    """The raw (word, head, labels) arrays of one sentence, checked; bad data names the sentence.

    Nothing is derived here: the collater computes parents, depths and
    labels for the whole batch at once. The check runs on Python lists with
    C builtins: per-call overhead, not arithmetic, is what costs on arrays of
    ~30 numbers.
    """
    try:
        word, head, lab = side.read(index, labels)
        w, h = word.tolist(), head.tolist()
    except (IndexError, ValueError, TypeError) as e:
        raise SyntaxDataError(f"{side.name}, sentence {index}", f"malformed syntax data: {e}") from e
    n = len(w)
    if len(h) != n:
        raise SyntaxDataError(f"{side.name}, sentence {index}",
                              f"malformed syntax data: {len(h)} heads for {n} subwords")
    # words run 1..W in order: start at 1, never decrease, and W distinct values up to W (so no gaps)
    if n and not (w[0] == 1 and w == sorted(w) and len(set(w)) == w[-1] and min(h) >= 0 and max(h) <= w[-1]):
        raise SyntaxDataError(
            f"{side.name}, sentence {index}",
            f"malformed syntax data: word indices must run 1..W in order and heads lie in 0..W (words {w}, heads {h})",
        )
    if labels:
        if lab is None:
            raise SyntaxDataError(side.name, "labels were requested but no labels dataset was loaded")
        if len(lab) != n:
            raise SyntaxDataError(f"{side.name}, sentence {index}",
                                  f"malformed syntax data: {len(lab)} labels for {n} subwords")
    return word, head, lab


class SyntaxLanguagePairDataset(BaseWrapperDataset):
    """A LanguagePairDataset plus the syntax of its source and/or target side."""

    def __init__(
        self,
        dataset,
        request: SyntaxRequest,
        src_syntax: Optional[SideSyntax] = None,
        tgt_syntax: Optional[SideSyntax] = None,
        stable_rows: bool = False,
    ):
        super().__init__(dataset)
        self.request = request
        self.src_syntax = src_syntax
        self.tgt_syntax = tgt_syntax
        # decoding raw lines: rows of equal source length in dataset order (fairseq's length sort is not stable;
        # fairseq-interactive finds each row's parse again by its tokens, in line order: :func:`stable_rows`)
        self.stable_rows = stable_rows
        for attr in ("append_bos", "remove_eos_from_source"):
            if getattr(dataset, attr, False):
                raise SyntaxDataError(
                    "syntax_translation",
                    f"the token dataset uses {attr}; syntax coordinates assume tokens followed by EOS only",
                )
        tokens = TokenPairs(dataset)
        self._tokens = tokens if tokens.collates() else None  # fairseq's own path otherwise
        self._read_tokens = tokens.reads()

    def ordered_indices(self):
        """fairseq's order (shuffled, then by length); with ``stable_rows``, by source length and, within one
        length, by index: fairseq-interactive's lines of one length come in line order across its batches."""
        if not self.stable_rows:
            return self.dataset.ordered_indices()
        return np.argsort(self.dataset.src_sizes, kind="mergesort")

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
        item = self._tokens.item(index) if self._read_tokens else self.dataset[index]
        syntax = {}
        req = self.request
        for side, fields, syn in (("source", req.source, self.src_syntax), ("target", req.target, self.tgt_syntax)):
            if not fields:
                continue
            if syn is None:  # supervision-only fields, split without syntax data (model inputs: an error)
                self._side(side)
                continue
            raw = _read_side(syn, index, "labels" in fields)
            tokens = item[side]
            if tokens is not None and tokens.shape[0] != len(raw[0]) + 1:
                raise SyntaxDataError(
                    f"{syn.name}, sentence {index}",
                    f"{len(tokens)} tokens (with EOS) but {len(raw[0]) + 1} syntax positions",
                )
            syntax[side] = raw
        if syntax:
            item["syntax"] = syntax
        return item

    def collater(self, samples, **kwargs):
        """fairseq's batch plus the syntax fields, computed for the whole batch at once (:func:`_collate_side`)."""
        if self._tokens is not None and set(kwargs) <= {"pad_to_length"}:
            batch = self._tokens.collate(samples, **kwargs)
        else:
            batch = self.dataset.collater(samples, **kwargs)
        if self.stable_rows and batch:
            batch = stable_rows(batch)
        if not batch or "syntax" not in samples[0]:
            return batch
        by_id = {s["id"]: s["syntax"] for s in samples}
        order = batch["id"].tolist()
        ds = self.dataset
        req = self.request
        out = {}
        if req.source and self.src_syntax is not None:
            src = batch["net_input"]["src_tokens"]
            out.update(
                _collate_side([by_id[i]["source"] for i in order], order, self.src_syntax, "src_", req.source,
                              req.strategy_of("source"), src.size(1), ds.left_pad_source, decoder_input=False)
            )
            out["src_supervised"] = _supervised(src, ds.src_dict, decoder_input=False)
        if req.target and self.tgt_syntax is not None and batch.get("target") is not None:
            decoder_input = req.target_coordinates == "decoder_input"
            out.update(
                _collate_side([by_id[i]["target"] for i in order], order, self.tgt_syntax, "tgt_", req.target,
                              req.strategy_of("target"), batch["target"].size(1), ds.left_pad_target,
                              decoder_input=decoder_input)
            )
            out["tgt_supervised"] = _supervised(batch["target"], ds.tgt_dict, decoder_input=decoder_input)
        batch["syntax"] = out
        for name in req.inputs:
            if name in out:
                batch["net_input"][name] = out[name]
        return batch


def stable_rows(batch: dict) -> dict:
    """The batch's rows by source length, longest first, and rows of one length by dataset index.

    fairseq sorts a batch's rows with ``src_lengths.sort(descending=True)``, which on the CPU does not keep the
    order of equal lengths (from about 64 rows on). fairseq-interactive hands the model the tokens alone, and
    the task finds each row's parse again by its token ids, taking lines of identical ids in line order: two
    lines that differ only outside the vocabulary would swap their trees. Every tensor of the batch and of its
    ``net_input`` with one entry per row is permuted alike.
    """
    ids = batch["id"]
    order = np.lexsort((ids.numpy(), -batch["net_input"]["src_lengths"].numpy()))
    if np.array_equal(order, np.arange(len(order))):
        return batch
    perm = torch.from_numpy(order)

    def take(d):
        return {k: v.index_select(0, perm) if torch.is_tensor(v) and v.dim() and v.size(0) == len(order) else v
                for k, v in d.items()}

    out = take(batch)
    out["net_input"] = take(batch["net_input"])
    return out


def collate_rows(side: SideSyntax, fields, strategy: str, width: int, left_pad: bool, prefix: str = "src_"):
    """Source fields of sentences 0..n-1 of ``side``, in that row order, padded to ``width``.

    For batches that were collated without syntax (fairseq-interactive): the
    same coordinates as :meth:`SyntaxLanguagePairDataset.collater`.
    """
    rows = [_read_side(side, i, "labels" in fields) for i in range(len(side))]
    return _collate_side(rows, range(len(side)), side, prefix, fields, strategy, width, left_pad, decoder_input=False)


def _label_pad(side: Optional[SideSyntax]) -> int:
    return side.label_dict.pad() if side is not None and side.label_dict is not None else 1


def _concat(arrays: List[np.ndarray]) -> np.ndarray:
    return np.concatenate(arrays) if arrays else np.zeros(0, dtype=np.int64)


def _collate_side(rows: List[RawSide], ids: Sequence[int], side: SideSyntax, prefix: str, fields, strategy: str,
                  width: int, left_pad: bool, decoder_input: bool):
    """The (B, width) matrices of one side's fields for a whole batch, in model coordinates.

    ``rows``: each row's raw sentence (from :func:`_read_side`), in batch row
    order; ``ids``: their dataset indices (named in errors). The sentences
    are concatenated; parents and depths are computed for all of them at
    once (:class:`~fairseq_syntax.data.alignment.parent_strategies.ConcatenatedTrees`);
    each field is written into its padded matrix with one fancy-index
    assignment. A row of n subwords has n + 1 positions (EOS included) from
    column ``off`` on (``width - n - 1`` when left-padded, else 0): subword i
    at ``off + i`` and EOS at ``off + n``, or in decoder-input coordinates
    EOS at ``off`` and subword i at ``off + 1 + i``. Parents are columns of
    the same row; EOS is its own parent; padding holds -1 (parents), the
    label dictionary's pad (labels) or 0.
    """
    bsz = len(rows)
    lengths = np.fromiter((len(r[0]) for r in rows), dtype=np.int64, count=bsz)
    total = int(lengths.sum())
    off = width - 1 - lengths if left_pad else np.zeros(bsz, dtype=np.int64)
    first_col = off + 1 if decoder_input else off  # column of each row's subword 0
    eos_col = off if decoder_input else off + lengths
    words = _concat([r[0] for r in rows])
    trees = None
    if "parents" in fields or "depths" in fields:
        trees = ConcatenatedTrees(words, _concat([r[1] for r in rows]), lengths)
        starts, row = trees.starts, trees.row
    else:
        starts, row = concatenation_layout(lengths)
    col_shift = (first_col - starts)[row]  # concatenated position -> column in its row
    flat = np.arange(total, dtype=np.int64) + col_shift + row * width  # concatenated position -> index in B * width
    eos_flat = np.arange(bsz, dtype=np.int64) * width + eos_col
    out = {}
    for f in fields:
        if f == "parents":
            val = trees.parents(strategy) + col_shift
            # float64, not float32: fairseq's half-precision casts of the batch would round x.5 middles
            buf = np.full((bsz, width), -1, dtype=np.float64 if val.dtype.kind == "f" else np.int64)
            eos_val = eos_col
        elif f == "depths":
            try:
                val = trees.depths()
            except CycleError as e:
                raise SyntaxDataError(f"{side.name}, sentence {ids[int(e.rows[0])]}",
                                      f"malformed syntax data: {e}") from e
            buf = np.zeros((bsz, width), dtype=np.int64)
            eos_val = 0
        elif f == "words":
            val = words
            buf = np.zeros((bsz, width), dtype=np.int64)
            eos_val = 0
        elif f == "labels":
            val = _concat([r[2] for r in rows])
            buf = np.full((bsz, width), _label_pad(side), dtype=np.int64)
            eos_val = side.label_dict.eos()
        else:  # SyntaxRequest rejects unknown fields
            raise ValueError(f"unknown syntax field {f!r}")
        flat_buf = buf.reshape(-1)
        flat_buf[flat] = val
        flat_buf[eos_flat] = eos_val
        out[prefix + f] = torch.from_numpy(buf)
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
