"""Worker processes end with the command that started them, however it ends (docs/design.md, "Errors").

A command killed by its own pid (``kill -9 PID``, an out-of-memory kill, a scheduler ending the job) does
not take its children with it: fairseq-preprocess's forked binarizer workers would go on writing into the
data-bin of a run that is over, and a spawned parser worker would stay, holding its model in memory. On Linux
each child asks the kernel to kill it when its parent goes (``prctl(PR_SET_PDEATHSIG, SIGKILL)``):
:func:`die_with_parent` in a child (the plugin's own worker processes call it when they start), and
:func:`end_children_with_this_process` for every process forked from here on (fairseq's worker pools; a
command that starts workers calls it first). Elsewhere both do nothing.
"""
import ctypes
import os
import signal
import sys

_PR_SET_PDEATHSIG = 1
_parent_at_fork = None
_registered = False


_prctl = None


def _load_prctl():
    """libc's prctl, looked up once (in the parent: no dynamic loading in a freshly forked child)."""
    global _prctl
    if _prctl is None:
        libc = ctypes.CDLL(None, use_errno=True)
        _prctl = libc.prctl
    return _prctl


def die_with_parent(parent_pid=None) -> bool:
    """Ask the kernel to kill this process when its parent ends (Linux); True if that is in place. When the
    parent is gone already (it ended between the fork and this call), exit now."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        if _load_prctl()(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0:
            return False
    except (OSError, AttributeError):
        return False
    if parent_pid is not None and os.getppid() != parent_pid:
        os._exit(1)
    return True


def _before_fork():
    global _parent_at_fork
    _parent_at_fork = os.getpid()


def _after_fork_in_child():
    die_with_parent(_parent_at_fork)


def end_children_with_this_process() -> None:
    """Every process forked from now on (in this process and, inherited, in its children) is killed when the
    process that forked it ends. Idempotent."""
    global _registered
    if _registered or not sys.platform.startswith("linux"):
        return
    try:
        _load_prctl()
    except (OSError, AttributeError):
        return
    os.register_at_fork(before=_before_fork, after_in_child=_after_fork_in_child)
    _registered = True
