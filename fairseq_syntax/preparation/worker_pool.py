"""The spawned worker processes of a chunked preparation step (:func:`worker_pool`): each ends with its parent,
builds its task's state once (in its first task, so that a failure to build it comes back as that task's
error), and runs chunks with :func:`_call`."""
import contextlib
import multiprocessing
import os
import signal
from typing import Any

from fairseq_syntax.process_tree import die_with_parent

_STATE: Any = None
_INIT: Any = None


def _init_worker(init, init_args, parent_pid=None):
    """Worker start: end with the parent however it ends (:mod:`fairseq_syntax.process_tree`), and remember how
    to build the state (built by the first task, so that a failure to build it, e.g. a missing model file,
    comes back to the parent as that task's error)."""
    global _INIT
    die_with_parent(parent_pid)
    with contextlib.suppress(Exception):  # the parent handles Ctrl-C
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    _INIT = (init, init_args)


def _call(task, first, items, task_args):
    global _STATE, _INIT
    if _INIT is not None:
        init, init_args = _INIT
        _STATE = init(*init_args) if init is not None else None
        _INIT = None
    return task(_STATE, first, items, *task_args)


@contextlib.contextmanager
def worker_pool(workers: int, init, init_args):
    """Spawned worker processes (a ProcessPoolExecutor: a worker that dies, e.g. killed for memory, fails
    the run instead of hanging it). A worker imports only the modules of its task (the package itself imports
    neither torch nor fairseq), so it starts in a fraction of a second."""
    from concurrent.futures import ProcessPoolExecutor

    pool = ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn"),
                               initializer=_init_worker, initargs=(init, init_args, os.getpid()))
    try:
        yield pool
    except BaseException:
        procs = list((getattr(pool, "_processes", None) or {}).values())
        manager = getattr(pool, "_executor_manager_thread", None)  # shutdown() forgets it
        pool.shutdown(wait=False, cancel_futures=True)
        for p in procs:  # do not wait for chunks nobody will commit
            with contextlib.suppress(Exception):
                p.terminate()
        # Let the pool's manager thread see its dead workers and close its wakeup pipe before the error goes
        # up: left running, it can close that pipe while the interpreter's exit hook writes to it (an unlocked
        # check in CPython 3.11's concurrent.futures; gh-125451), and the run ends with a second traceback
        # ("Bad file descriptor") after its own error message. Seen once under the test suite's load.
        if manager is not None:
            manager.join(timeout=30)
        raise
    else:
        pool.shutdown(wait=True)
