"""Checks of fairseq's memory-mapped datasets (``PREFIX.idx`` + ``PREFIX.bin``) before fairseq opens them.

fairseq's ``MMapIndexedDataset`` maps the files without checking their sizes: a truncated ``.idx`` ends in
numpy's ``ValueError: buffer is smaller than requested size`` (and an ``AttributeError`` from its
``__del__``), a truncated ``.bin`` in wrong tokens or a crash much later. The index format (fairseq 0.12,
``MMapIndexedDataset.Index``): a 9-byte magic, version (uint64, 1), dtype code (uint8), sentence count N
(uint64), then N int32 sizes and N int64 byte offsets into ``.bin``; the ``.bin`` ends where the last
sentence does. :func:`check_mmap_dataset` checks exactly that and names the file that is wrong.
"""
import os
import re
import struct
from typing import List

import numpy as np

from fairseq_syntax.errors import SyntaxDataError

MAGIC = b"MMIDIDX\x00\x00"
OTHER_MAGIC = b"TNTIDX\x00\x00"  # fairseq's IndexedDataset (--dataset-impl lazy / cached)
HEADER_BYTES = len(MAGIC) + 8 + 1 + 8
#: fairseq's dtype codes (indexed_dataset._code_to_dtype: uint8 ... uint64), as item sizes in bytes
ITEM_BYTES = {1: 1, 2: 1, 3: 2, 4: 4, 5: 8, 6: 8, 7: 8, 8: 2, 9: 4, 10: 8}
_AGAIN = "prepare the data-bin again (the same prepare command with --overwrite)"


def check_mmap_dataset(prefix: str) -> int:
    """Check ``prefix.idx`` and ``prefix.bin`` against each other; returns the sentence count (-1 for an index
    of another of fairseq's formats, ``--dataset-impl lazy`` or ``cached``, which is left to fairseq)."""
    idx, bin_ = prefix + ".idx", prefix + ".bin"
    for path in (idx, bin_):
        if not os.path.isfile(path):
            raise SyntaxDataError(path, f"missing (its {'.bin' if path == idx else '.idx'} is there); {_AGAIN}")
    size = os.path.getsize(idx)
    with open(idx, "rb") as f:
        head = f.read(HEADER_BYTES)
        if head.startswith(OTHER_MAGIC):
            return -1
        if len(head) < HEADER_BYTES or not head.startswith(MAGIC):
            raise SyntaxDataError(idx, f"not a fairseq index ({size} bytes, no header); {_AGAIN}")
        version, code, n = struct.unpack("<QBQ", head[len(MAGIC):])
        if version != 1 or code not in ITEM_BYTES:
            raise SyntaxDataError(idx, f"unknown index version {version} or dtype code {code}; {_AGAIN}")
        expected = HEADER_BYTES + 12 * n
        if size != expected:
            raise SyntaxDataError(idx, f"truncated or corrupt: {size} bytes where an index of {n} sentences has "
                                  f"{expected}; {_AGAIN}")
        if n == 0:
            end = 0
        else:
            f.seek(HEADER_BYTES + 4 * (n - 1))
            last_size = int(np.frombuffer(f.read(4), dtype=np.int32)[0])
            f.seek(HEADER_BYTES + 4 * n + 8 * (n - 1))
            last_pointer = int(np.frombuffer(f.read(8), dtype=np.int64)[0])
            end = last_pointer + last_size * ITEM_BYTES[code]
    bin_size = os.path.getsize(bin_)
    if bin_size != end:
        raise SyntaxDataError(bin_, f"truncated or corrupt: {bin_size} bytes where its index ({idx}) says "
                              f"{end}; {_AGAIN}")
    return n


def split_prefixes(data_dir: str, split: str, src: str, tgt: str) -> List[str]:
    """The prefixes of every mmap dataset of ``split`` (its shards split1, split2, ... too) in ``data_dir``:
    tokens of both languages and their syntax fields, in either direction's file names."""
    pattern = re.compile(rf"^{re.escape(split)}\d*\.({re.escape(src)}-{re.escape(tgt)}|{re.escape(tgt)}-"
                         rf"{re.escape(src)})\.[^/]+\.idx$")
    try:
        names = sorted(os.listdir(data_dir))
    except OSError:
        return []
    return [os.path.join(data_dir, name[:-4]) for name in names if pattern.match(name)]


def check_pairs(data_dir: str, split: str, src: str, tgt: str) -> None:
    """Every dataset of ``split`` has both its files: a ``.bin`` without its ``.idx`` (or the reverse) is named,
    with what to do (fairseq would only say the split was not found)."""
    pattern = re.compile(rf"^{re.escape(split)}\d*\.({re.escape(src)}-{re.escape(tgt)}|{re.escape(tgt)}-"
                         rf"{re.escape(src)})\.[^/]+\.(bin|idx)$")
    try:
        names = set(os.listdir(data_dir))
    except OSError:
        return
    for name in sorted(n for n in names if pattern.match(n)):
        other = name[:-3] + ("idx" if name.endswith(".bin") else "bin")
        if other not in names:
            raise SyntaxDataError(os.path.join(data_dir, other), f"missing, while {name} is there: the data-bin is "
                                  "incomplete (copied or cut short?): copy it whole, or prepare it again "
                                  "(fairseq-syntax-prepare ... --overwrite)")
