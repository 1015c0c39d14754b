"""Zero-copy reads of fairseq's memory-mapped datasets.

fairseq's ``MMapIndexedDataset.__getitem__`` goes through two lru_caches and
copies every item into a new int64 tensor; at ~30 numbers per sentence that
per-call overhead, not the copy, is most of the cost of reading a sentence.
:func:`array_reader` returns, for such a dataset, a function from an index to
a numpy view of the item in the memory map (its stored dtype, read-only).
"""
from __future__ import annotations

from typing import Callable

import numpy as np
import torch


def array_reader(dataset) -> Callable[[int], np.ndarray]:
    """index -> 1-D integer numpy array of ``dataset[index]``.

    For fairseq's ``MMapIndexedDataset`` a zero-copy view of the memory map;
    anything else (``ConcatDataset`` of shards, ``ListDataset``, tensors in
    memory) through ``dataset[index]``, read anew every time.
    """
    read = mmap_reader(dataset)
    if read is not None:
        return read

    def read_item(i):
        x = dataset[i]
        return x.numpy() if torch.is_tensor(x) else np.asarray(x)

    return read_item


def mmap_reader(dataset):
    """The zero-copy reader of a fairseq ``MMapIndexedDataset`` (exactly that type), else None."""
    try:
        from fairseq.data.indexed_dataset import MMapIndexedDataset

        if type(dataset) is not MMapIndexedDataset:
            return None
        index = dataset._index
        pointers, sizes = index._pointers, index._sizes  # byte offsets and lengths of the items
        flat = np.frombuffer(dataset._bin_buffer, dtype=index.dtype)  # the whole .bin, not copied
        itemsize = flat.itemsize
        if not len(pointers) == len(sizes) == len(dataset):
            return None
    except Exception:  # another fairseq version: the caller uses its public __getitem__
        return None

    def read(i):
        start = pointers[i] // itemsize
        return flat[start : start + sizes[i]]

    if len(dataset):
        read(0)
    return read
