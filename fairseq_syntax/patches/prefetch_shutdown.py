"""Stop fairseq's prefetching threads before the interpreter shuts down.

fairseq's ``BufferedIterator`` (``--data-buffer-size``, default 10) collates
batches in a daemon thread (``BackgroundConsumer``). When ``fairseq-train``
stops mid-epoch (``--max-update``), that thread is usually still building the
next batches; if it is inside torch's C++ code when the interpreter
finalises, the process aborts with "terminate called without an active
exception" (exit status 134) after training has finished and saved its
checkpoints. The slower a collater, the likelier: seen here with every syntax
field collated. At exit, this module lets each running consumer finish the
batch it is on and end (no further batches), draining its queue so that it
never blocks, before Python finalises. Prefetching during training is
unchanged.
"""
import atexit
import queue
import threading
import time

_installed = False


def stop_prefetch_threads(timeout: float = 30.0) -> int:
    """End every running fairseq ``BackgroundConsumer`` thread; returns how many were stopped."""
    from fairseq.data.iterators import BackgroundConsumer

    stopped = 0
    for thread in threading.enumerate():
        if not isinstance(thread, BackgroundConsumer) or not thread.is_alive():
            continue
        thread._max_len = 0  # its loop breaks after the batch it is building
        deadline = time.monotonic() + timeout
        while thread.is_alive() and time.monotonic() < deadline:
            try:  # make room for that batch and the end marker
                while True:
                    thread._queue.get_nowait()
            except queue.Empty:
                pass
            thread.join(timeout=0.05)
        stopped += not thread.is_alive()
    return stopped


def install() -> None:
    """Register :func:`stop_prefetch_threads` to run at exit (once)."""
    global _installed
    if not _installed:
        atexit.register(stop_prefetch_threads)
        _installed = True
