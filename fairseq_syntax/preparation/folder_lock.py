"""One preparation at a time per folder: a lock file in ``--destdir`` and in ``--workdir``.

Two prepares writing into one folder interleave their temporary files, their caches and their data-bin.
:func:`holding` takes ``FOLDER/.prepare.lock`` for each folder and removes it when the run ends, however it
ends short of a kill. The lock is the kernel's (``flock`` on the open file, held for the run; the kernel drops
it when the process dies, so two runs can never both hold it, even when both find a dead run's lock at the
same moment); the file holds the holder's pid, host, the start time of its process and its command line, for
the messages. A second run finds the lock held and stops with one line naming the folder, the holder's pid and
host. A lock file whose process is gone (killed: ``kill -9`` leaves it behind) is taken over with a line saying
so. A lock file written on another host is refused even when its flock is free: on a network file system the
kernel's lock may or may not reach the other host (NFS emulates it with POSIX locks, which do; others do
not), and the line says which file to remove once that run is gone. Forked children of the holder do not
keep its lock (their copy of the file is closed after the fork), so a holder killed before its children
frees the folder.

Sharded runs (``--shard I/N``) of one job share their work folder by design and take no lock.
"""
import contextlib
import fcntl
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


#: lock file path -> (the open file holding the flock, the pid that took it)
_HELD = {}


def _close_in_child():
    """After a fork, in the child: close its copies of the lock files (the parent alone holds the locks)."""
    for fd, _ in _HELD.values():
        with contextlib.suppress(OSError):
            os.close(fd)
    _HELD.clear()


os.register_at_fork(after_in_child=_close_in_child)


def _refuse(folder: str, path: str, holder: dict, same_host: bool):
    where = f"pid {holder.get('pid')}" + ("" if same_host else f" on host {holder.get('host')}")
    gone = "" if same_host else f", or remove {path} once that run is gone"
    raise SyntaxDataError(folder, f"in use by another prepare ({where}, started {holder.get('started')}): "
                          f"wait for it to finish{gone}")


def acquire(folder: str, command: str) -> str:
    """Take ``folder``'s lock (the folder must exist); returns the lock file's path."""
    path = os.path.join(folder, LOCK_FILE)
    me = {"pid": os.getpid(), "host": socket.gethostname(), "process_start": _process_start(os.getpid()),
          "started": time.strftime("%Y-%m-%d %H:%M:%S"), "command": command}
    while True:
        fd = os.open(path, os.O_CREAT | os.O_RDWR, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            holder = _read(path) or {}
            _refuse(folder, path, holder, holder.get("host", socket.gethostname()) == me["host"])
        try:
            current = os.stat(path)
        except FileNotFoundError:
            current = None
        if current is None or not os.path.samestat(os.fstat(fd), current):
            os.close(fd)  # its holder released it (and removed the file) between our open and our lock
            continue
        left = os.pread(fd, 1 << 16, 0)  # what a run that held it wrote (empty for a new file)
        try:
            holder = json.loads(left.decode("utf-8")) if left.strip() else None
        except ValueError:
            holder = None
        if left.strip() and not (isinstance(holder, dict) and holder.get("host")):
            # cut short by a kill while its holder wrote it: whoever that was, it holds the flock no longer
            logger.warning("%s: taking over a lock file that names no holder (%s)", folder, path)
        elif holder:  # a run that ended without releasing (killed), or one on another host
            same_host = holder.get("host") == me["host"]
            if not same_host or (holder.get("pid") != me["pid"] and _alive(holder)):
                os.close(fd)
                _refuse(folder, path, holder, same_host)
            logger.warning("%s: taking over the lock of prepare pid %s (started %s), which is no longer running",
                           folder, holder.get("pid"), holder.get("started"))
        data = json.dumps(me).encode("utf-8")
        os.ftruncate(fd, 0)
        os.pwrite(fd, data, 0)
        os.fsync(fd)
        _HELD[path] = (fd, os.getpid())
        return path


def release(path: str) -> None:
    """Remove a lock this process holds, then drop the kernel's lock (a waiter that opened the removed file
    finds another file at the path and tries again)."""
    fd, pid = _HELD.get(path, (None, None))
    if fd is None or pid != os.getpid():  # not ours (a forked child inherits the table, not the lock's duty)
        return
    del _HELD[path]
    try:
        with contextlib.suppress(FileNotFoundError):
            os.remove(path)
    finally:
        os.close(fd)


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
