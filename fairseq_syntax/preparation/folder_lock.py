"""One preparation at a time per folder: a lock file in ``--destdir`` and in ``--workdir``.

Two prepares writing into one folder interleave their temporary files, their caches and their data-bin.
:func:`holding` takes ``FOLDER/.prepare.lock`` for each folder (created exclusively; it holds the holder's
pid, host, the start time of its process and its command line) and removes it when the run ends, however it
ends short of a kill. A second run finds the lock and stops with one line naming the folder, the holder's pid
and host. A lock whose process is gone (killed: ``kill -9`` leaves it behind) is taken over with a line saying
so; on another host a lock cannot be checked, and the line says which file to remove once that run is gone.

Sharded runs (``--shard I/N``) of one job share their work folder by design and take no lock.
"""
import contextlib
import json
import logging
import os
import socket
import sys
import time
from typing import Iterable, Optional

from fairseq_syntax.errors import SyntaxDataError

logger = logging.getLogger(__name__)
LOCK_FILE = ".prepare.lock"


def _process_start(pid: int) -> Optional[str]:
    """The start time of process pid (Linux: /proc/PID/stat field 22), or None where it cannot be read."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as f:
            return f.read().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


def _alive(holder: dict) -> bool:
    """Whether the process a lock names still runs (the same process: a reused pid starts at another time)."""
    pid = holder.get("pid")
    if not isinstance(pid, int):
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    start = _process_start(pid)
    return start is None or holder.get("process_start") in (None, start)


def _read(path: str) -> Optional[dict]:
    for _ in range(20):  # a lock being written by its holder: read again shortly
        try:
            with open(path, encoding="utf-8") as f:
                return json.load(f)
        except FileNotFoundError:
            return None
        except ValueError:
            time.sleep(0.05)
    return {}


def acquire(folder: str, command: str) -> str:
    """Take ``folder``'s lock (the folder must exist); returns the lock file's path."""
    path = os.path.join(folder, LOCK_FILE)
    me = {"pid": os.getpid(), "host": socket.gethostname(), "process_start": _process_start(os.getpid()),
          "started": time.strftime("%Y-%m-%d %H:%M:%S"), "command": command}
    while True:
        try:
            fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            holder = _read(path)
            if holder is None:
                continue  # released meanwhile
            same_host = holder.get("host") == me["host"]
            if same_host and not _alive(holder):
                logger.warning("%s: taking over the lock of prepare pid %s (started %s), which is no longer running",
                               folder, holder.get("pid"), holder.get("started"))
                with contextlib.suppress(FileNotFoundError):
                    os.remove(path)
                continue
            where = f"pid {holder.get('pid')}" + ("" if same_host else f" on host {holder.get('host')}")
            gone = "" if same_host else f", or remove {path} once that run is gone"
            raise SyntaxDataError(folder, f"in use by another prepare ({where}, started {holder.get('started')}): "
                                  f"wait for it to finish{gone}")
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(me, f)
            f.flush()
            os.fsync(f.fileno())
        return path


def release(path: str) -> None:
    """Remove a lock this process holds (a lock taken over by another run is left to it)."""
    holder = _read(path)
    if holder and holder.get("pid") == os.getpid():
        with contextlib.suppress(FileNotFoundError):
            os.remove(path)


@contextlib.contextmanager
def holding(folders: Iterable[str], command: Optional[str] = None):
    """Hold the lock of each folder (made when missing; one lock per distinct folder) for the block; a folder
    this made and that is empty again at the end is removed (a run refused early leaves nothing behind)."""
    command = command if command is not None else " ".join(sys.argv)
    made, held = [], []
    try:
        for folder in sorted({os.path.realpath(f) for f in folders}):
            if not os.path.isdir(folder):
                os.makedirs(folder)
                made.append(folder)
            held.append(acquire(folder, command))
        yield
    finally:
        for path in held:
            release(path)
        for folder in reversed(made):
            with contextlib.suppress(OSError):
                os.rmdir(folder)  # only when empty
