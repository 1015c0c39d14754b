"""Chunked, resumable, parallel processing of line-oriented corpora.

The long preprocessing steps (parsing, language-ID filtering, BPE application) map input items (lines, or pairs
of lines) to output text, item by item and in order. :func:`run_chunked` cuts the items into chunks of
``chunk_size``, maps each chunk with a task function, in this process or in ``workers`` spawned processes (each
building its own state, e.g. a parser model, once), and commits every chunk atomically:

    OUT.chunks/00000012.out    the output of chunk 12 (items 12*K .. 13*K-1)
    OUT.chunks/00000012.json   its manifest: job key, SHA-1 of the chunk's input, item count, output size, SHA-1
    OUT.chunks/done.json       written once OUT is assembled; the chunk files are then removed

Every file, OUT too, is written to a temporary name, fsync'ed and renamed (``os.replace``), a manifest after its
data. A chunk counts as finished only when its manifest names the same job key (the step and its options) and
input digest and its data has the recorded size and SHA-1; otherwise it is redone (reported if truncated or
corrupt), never read. So a run killed at any point (even ``kill -9``) and started again with the same command
continues after the last finished chunk and writes the same bytes as an uninterrupted run.

Sharding (``shard=(i, n)``): the chunks are split into ``n`` contiguous, deterministic ranges; a sharded run
processes only range ``i`` and never assembles OUT. Shards on several machines (a SLURM array) commit into one
``OUT.chunks`` on a shared file system; the same command without a shard then finds their chunks finished and
only assembles OUT (processing whatever is missing). Usage: docs/data.md, "At scale: workers, shards, resuming".
"""
from __future__ import annotations

import contextlib
import glob
import hashlib
import json
import logging
import os
from collections import deque
from typing import (
    Any,
    Callable,
    Dict,
    Iterable,
    Iterator,
    List,
    Optional,
    Sequence,
    Tuple,
)

from fairseq_syntax.durable_files import (  # noqa: F401  (atomic_write: re-exported)
    atomic_write,
    temporary_name,
    write_boundary,
)
from fairseq_syntax.errors import SyntaxDataError
from fairseq_syntax.preparation.progress_log import ProgressLog
from fairseq_syntax.preparation.worker_pool import _call, worker_pool  # noqa: F401  (importable from here)
from fairseq_syntax.text_reading import read_text_lines

logger = logging.getLogger(__name__)

FORMAT = 1


def parse_shard(spec: Optional[str]) -> Optional[Tuple[int, int]]:
    """``"I/N"`` (0 <= I < N) -> (I, N); None or "" -> None."""
    if not spec:
        return None
    try:
        i, n = (int(x) for x in spec.split("/"))
    except ValueError:
        raise ValueError(f"--shard must be I/N with integers 0 <= I < N (e.g. 3/8), not {spec!r}") from None
    if not (n >= 1 and 0 <= i < n):
        raise ValueError(f"--shard {spec}: need 0 <= I < N")
    return i, n


def shard_chunks(n_chunks: int, shard: Optional[Tuple[int, int]]) -> range:
    """The chunk indices of a shard: contiguous, deterministic, together covering every chunk once."""
    if shard is None:
        return range(n_chunks)
    i, n = shard
    return range(i * n_chunks // n, (i + 1) * n_chunks // n)


def _sha1(data: bytes) -> str:
    return hashlib.sha1(data).hexdigest()


def _item_bytes(item) -> bytes:
    if isinstance(item, str):
        return item.encode("utf-8") + b"\n"
    return "\x1f".join(item).encode("utf-8") + b"\n"


def items_digest(items: Sequence) -> str:
    h = hashlib.sha1()
    for x in items:
        h.update(_item_bytes(x))
    return h.hexdigest()


def _fsync_dir(path: str) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def file_sha1(path: str) -> str:
    h = hashlib.sha1()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 22), b""):
            h.update(block)
    return h.hexdigest()


class ChunkStore:
    """The chunk directory of one output file and one job key."""

    def __init__(self, out_path: str, key: Optional[str]):
        self.out_path = out_path  # key None: read chunks of any key
        self.dir = out_path + ".chunks"
        self.key = key

    def data_path(self, c: int) -> str:
        return os.path.join(self.dir, f"{c:08d}.out")

    def manifest_path(self, c: int) -> str:
        return os.path.join(self.dir, f"{c:08d}.json")

    def _manifest(self, c: int) -> Optional[dict]:
        path = self.manifest_path(c)
        try:
            with open(path, encoding="utf-8") as f:
                return json.load(f)
        except FileNotFoundError:
            return None
        except (ValueError, OSError) as e:
            logger.warning("%s: unreadable chunk manifest (%s); the chunk is redone", path, e)
            return None

    def read(self, c: int, digest: Optional[str] = None) -> Optional[bytes]:
        """The data of chunk c if it is finished (for this key and input digest) and intact, else None."""
        m = self._manifest(c)
        if m is None or (self.key is not None and m.get("key") != self.key) or \
                (digest is not None and m.get("input_sha1") != digest):
            return None
        path = self.data_path(c)
        try:
            with open(path, "rb") as f:
                data = f.read()
        except FileNotFoundError:
            logger.warning("%s: missing (its manifest exists); the chunk is redone", path)
            return None
        if len(data) != m.get("bytes") or _sha1(data) != m.get("sha1"):
            logger.warning("%s: corrupt or truncated (%d bytes, manifest says %s bytes with another checksum); "
                           "the chunk is redone", path, len(data), m.get("bytes"))
            return None
        return data

    def commit(self, c: int, text: str, digest: str, n_items: int, n_units: int) -> None:
        data = text.encode("utf-8")
        os.makedirs(self.dir, exist_ok=True)
        atomic_write(self.data_path(c), data)
        manifest = dict(format=FORMAT, key=self.key, chunk=c, input_sha1=digest, items=n_items, units=n_units,
                        bytes=len(data), sha1=_sha1(data))
        atomic_write(self.manifest_path(c), json.dumps(manifest).encode("utf-8"))
        _fsync_dir(self.dir)

    def units(self, c: int) -> int:
        return int((self._manifest(c) or {}).get("units", 0))

    # --- completion ----------------------------------------------------------
    def done_record(self) -> Optional[dict]:
        try:
            with open(os.path.join(self.dir, "done.json"), encoding="utf-8") as f:
                return json.load(f)
        except (OSError, ValueError):
            return None

    def is_complete(self, digests: List[str]) -> Optional[dict]:
        """The done record if OUT was assembled from exactly these inputs and is intact."""
        rec = self.done_record()
        if not rec or rec.get("key") != self.key or rec.get("chunks") != digests:
            return None
        try:
            if os.path.getsize(self.out_path) != rec.get("bytes") or file_sha1(self.out_path) != rec.get("sha1"):
                logger.warning("%s: differs from the output recorded as complete; it is rebuilt", self.out_path)
                return None
        except FileNotFoundError:
            return None
        return rec

    def assemble(self, digests: List[str], n_items: int) -> dict:
        """Concatenate the (verified) chunks into OUT atomically; record completion; remove the chunks."""
        tmp = temporary_name(self.out_path)
        h = hashlib.sha1()
        size = units = 0
        with open(tmp, "wb") as out:
            for c, d in enumerate(digests):
                data = self.read(c, d)
                if data is None:
                    raise RuntimeError(f"{self.data_path(c)}: chunk vanished or changed while assembling "
                                       f"{self.out_path}; run the command again")
                out.write(data)
                h.update(data)
                size += len(data)
                units += self.units(c)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, self.out_path)
        write_boundary(self.out_path)
        rec = dict(format=FORMAT, key=self.key, chunks=digests, items=n_items, units=units, bytes=size,
                   sha1=h.hexdigest())
        os.makedirs(self.dir, exist_ok=True)
        atomic_write(os.path.join(self.dir, "done.json"), json.dumps(rec).encode("utf-8"))
        _fsync_dir(os.path.dirname(os.path.abspath(self.out_path)))
        self.clean()
        return rec

    def clean(self) -> None:
        """Remove chunk files and stale temporary files (keep done.json)."""
        for p in glob.glob(os.path.join(self.dir, "*")):
            if os.path.basename(p) != "done.json":
                with contextlib.suppress(OSError):
                    os.remove(p)


class ChunkResult:
    """What a run did: ``items`` in all, ``units`` of output (e.g. sentences), ``reused`` items from
    chunks finished earlier, ``processed`` items now, ``complete`` (OUT assembled)."""

    def __init__(self, items=0, units=0, reused=0, processed=0, complete=False):
        self.items, self.units, self.reused, self.processed, self.complete = items, units, reused, processed, complete

    def __repr__(self):
        return (f"ChunkResult(items={self.items}, units={self.units}, reused={self.reused}, "
                f"processed={self.processed}, complete={self.complete})")


def _chunks(items: Iterable, size: int, start_chunk: int = 0) -> Iterator[Tuple[int, list]]:
    buf: list = []
    c = start_chunk
    for x in items:
        buf.append(x)
        if len(buf) == size:
            yield c, buf
            buf = []
            c += 1
    if buf:
        yield c, buf


def run_chunked(
    items: Callable[[], Iterable],
    out_path: str,
    task: Callable,
    key: str,
    *,
    chunk_size: int,
    task_args: tuple = (),
    init: Callable = None,
    init_args: tuple = (),
    state: Any = None,
    workers: int = 1,
    shard: Optional[Tuple[int, int]] = None,
    validate: Callable[[int, Any], None] = None,
    progress: bool = True,
    desc: str = "",
    unit: str = "sent",
    on_commit: Callable[[int, int], None] = None,
    total: Optional[int] = None,
    range_items: Callable[[int, int], Iterable] = None,
) -> ChunkResult:
    """Map ``items()`` chunk by chunk to OUT, resumably (see the module docstring).

    ``task(state, first_index, chunk_items, *task_args) -> (text, n_units)`` maps one chunk (a top-level
    function: it is sent to worker processes); ``state`` is ``init(*init_args)``, built once per worker
    process, or given (``state``) or built here when ``workers`` is 1. ``items`` is called twice (a
    first pass computes the chunks' input digests, checks each item with ``validate(index, item)`` and
    finds the finished chunks; the second feeds the unfinished ones). The key names the step and every
    option that changes its output: chunks made under another key are redone. For a shard, ``total``
    (the number of items) and ``range_items(a, b)`` (the items a..b-1) let a run read only its own items.
    """
    if chunk_size < 1:
        raise ValueError("chunk_size must be positive")
    if os.path.isdir(out_path):  # found now, not after the whole step has run
        raise SyntaxDataError(out_path, "is a folder: give the path of the file to write")
    from tqdm import tqdm

    store = ChunkStore(out_path, key)
    source, first_chunk, ranged = items, 0, False
    if shard is not None and range_items is not None and total is not None:  # read only the shard's items
        ranged = True
        mine = shard_chunks(-(-total // chunk_size), shard)
        a, b = mine.start * chunk_size, min(mine.stop * chunk_size, total)
        source, first_chunk = (lambda: range_items(a, b)), mine.start
    digests: Dict[int, str] = {}
    sizes: Dict[int, int] = {}
    for c, chunk in _chunks(source(), chunk_size, first_chunk):
        if validate is not None:
            for k, x in enumerate(chunk):
                validate(c * chunk_size + k, x)
        digests[c] = items_digest(chunk)
        sizes[c] = len(chunk)
    n_items = sum(sizes.values())
    if not ranged:
        all_digests = [digests[c] for c in range(len(digests))]
        rec = store.is_complete(all_digests)
        if rec is not None:
            store.clean()
            return ChunkResult(n_items, rec.get("units", 0), n_items, 0, True)
        mine = shard_chunks(len(digests), shard)
    finished = {c for c in mine if store.read(c, digests[c]) is not None}
    todo = [c for c in mine if c not in finished]
    reused = sum(sizes[c] for c in finished)

    def commit(c, result):
        text, n_units = result
        store.commit(c, text, digests[c], sizes[c], n_units)
        bar.update(sizes[c])
        if not progress:
            progress_log.update(sizes[c])
        if on_commit:
            on_commit(c, n_units)

    total = sum(sizes[c] for c in mine)
    progress_log = ProgressLog(desc or out_path, total, reused, unit)
    with tqdm(total=total, initial=reused, desc=desc, unit=unit, disable=not progress, mininterval=1.0,
              smoothing=0.1) as bar:
        if todo:
            os.makedirs(store.dir, exist_ok=True)
            todo_set = set(todo)
            feed = ((c, ch) for c, ch in _chunks(source(), chunk_size, first_chunk) if c in todo_set)
            if workers <= 1:
                if state is None and init is not None:
                    state = init(*init_args)
                for c, chunk in feed:
                    commit(c, task(state, c * chunk_size, chunk, *task_args))
            else:
                with worker_pool(min(workers, len(todo)), init, init_args) as pool:
                    window: deque = deque()
                    for c, chunk in feed:
                        window.append((c, pool.submit(_call, task, c * chunk_size, chunk, task_args)))
                        while len(window) >= 2 * workers:
                            c0, r = window.popleft()
                            commit(c0, r.result())
                    while window:
                        c0, r = window.popleft()
                        commit(c0, r.result())
    processed = sum(sizes[c] for c in todo)
    if shard is not None:  # other shards may still be running: the run without --shard assembles
        return ChunkResult(n_items, sum(store.units(c) for c in mine), reused, processed, False)
    rec = store.assemble(all_digests, n_items)
    return ChunkResult(n_items, rec["units"], reused, processed, True)


def read_lines(path: str, encoding: str = "utf-8") -> Callable[[], Iterator[str]]:
    """An ``items`` callable over the lines of a text file (newline removed; read as
    :mod:`fairseq_syntax.text_reading` reads every text input)."""

    def gen():
        yield from read_text_lines(path)

    return gen


def read_pairs(path_a: str, path_b: str) -> Callable[[], Iterator[Tuple[str, str]]]:
    """An ``items`` callable over the stripped line pairs of two parallel text files."""

    def gen():
        with open(path_a, encoding="utf-8") as fa, open(path_b, encoding="utf-8") as fb:
            for a, b in zip(fa, fb):
                yield a.strip(), b.strip()

    return gen
