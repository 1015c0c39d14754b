"""Files that are either absent, as they were, or complete: the write boundaries of the preparation steps.

Every file a preparation step leaves for a later step or a later run (a chunk and its manifest, an assembled
output, the BPE codes and their stamp, the tokenised text, the record) is written to a temporary name in the
same folder, flushed, synced and renamed over the final name (:func:`atomic_write`, :func:`replace_file`).
Each such rename is a *write boundary*: a run killed anywhere stops between two of them. A cached result is
reused only when a stamp vouches for it (:func:`stamp_for`, :func:`vouched`): the stamp holds the SHA-256 of
the file it vouches for and a digest of what the file was made from (inputs and options), it is removed
before the file is replaced and written after it, so a kill between the two leaves a file without a stamp,
which the next run makes again.

Each boundary is told to :data:`boundary_observers` (none in a normal run): a test adds one to list the
boundaries of a run, or to kill the process at one of them and check that the next run finishes it.
"""
import hashlib
import json
import os
from typing import Callable, List, Optional

#: called, in order, with the path of every durable write once it is complete
boundary_observers: List[Callable[[str], None]] = []


def write_boundary(path: str) -> None:
    """One durable write is complete (``path``): its observers are told."""
    for observe in boundary_observers:
        observe(path)


#: this process's part of temporary names, by pid (a forked child makes its own)
_process_tokens = {}


def temporary_name(path: str) -> str:
    """A temporary name beside ``path``, private to this process and the same for every call in it: the host's
    name, the pid and random bits drawn once per process. The pid alone is not private on a file system that
    several hosts share (the shards of a SLURM array, containers whose processes have the same small pids): two
    processes writing the same file there would write into one temporary file."""
    pid = os.getpid()
    token = _process_tokens.get(pid)
    if token is None:
        import secrets
        import socket

        token = _process_tokens[pid] = f"{socket.gethostname()}.{pid}.{secrets.token_hex(4)}"
    return f"{path}.tmp.{token}"


def _failed_write(tmp: str, path: str, exc: OSError) -> OSError:
    """Remove the temporary file of a failed write; the error names the file meant (a full disk's ENOSPC from
    write() or fsync() names none)."""
    if os.path.exists(tmp):
        os.remove(tmp)
    if exc.filename is None:
        return OSError(exc.errno, exc.strerror or str(exc), path)
    return exc


def replace_file(tmp: str, path: str) -> str:
    """Sync ``tmp`` and rename it over ``path`` (a write boundary)."""
    try:
        with open(tmp, "rb+") as f:
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except OSError as e:
        raise _failed_write(tmp, path, e) from None
    write_boundary(path)
    return path


def atomic_write(path: str, data: bytes) -> None:
    """Write data to path so that path is either absent/old or complete: temp file, fsync, rename; on a failed
    write (a full disk) the temporary file is removed and the error names ``path``."""
    tmp = temporary_name(path)
    try:
        with open(tmp, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except OSError as e:
        raise _failed_write(tmp, path, e) from None
    write_boundary(path)


def file_sha256(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _stamp_path(path: str) -> str:
    return path + ".done"


def _made_from(inputs: dict) -> str:
    return hashlib.sha256(json.dumps(inputs, sort_keys=True).encode("utf-8")).hexdigest()


def vouched(path: str, inputs: dict) -> bool:
    """Whether ``path`` is the file its stamp vouches for, made from ``inputs`` (a JSON-able dict of input
    digests and options): the stamp names the same inputs and the file's SHA-256 now is the stamped one."""
    try:
        with open(_stamp_path(path), encoding="utf-8") as f:
            stamp = json.load(f)
        return stamp.get("made_from") == _made_from(inputs) and stamp.get("sha256") == file_sha256(path)
    except (OSError, ValueError, AttributeError):
        return False


def stamped_sha256(path: str) -> Optional[str]:
    """The SHA-256 ``path``'s stamp holds (right after :func:`vouched` or :func:`stamp_for`: the file's own,
    without reading it again), or None without a stamp."""
    try:
        with open(_stamp_path(path), encoding="utf-8") as f:
            return json.load(f).get("sha256")
    except (OSError, ValueError, AttributeError):
        return None


def unstamp(path: str) -> None:
    """Remove ``path``'s stamp (before ``path`` is replaced: a kill then leaves a file nobody vouches for)."""
    stamp = _stamp_path(path)
    if os.path.exists(stamp):
        os.remove(stamp)
        write_boundary(stamp)


def stamp_for(path: str, inputs: dict, extra: Optional[dict] = None) -> None:
    """Vouch for ``path`` as made from ``inputs`` (written after ``path`` itself)."""
    atomic_write(_stamp_path(path), json.dumps({"made_from": _made_from(inputs), "sha256": file_sha256(path),
                                                "inputs": inputs, **(extra or {})}, sort_keys=True).encode("utf-8"))
