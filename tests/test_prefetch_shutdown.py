"""fairseq's prefetching thread ends cleanly at exit (fairseq_syntax.patches.prefetch_shutdown)."""
import time

import pytest
from fairseq.data.iterators import BufferedIterator

from fairseq_syntax.patches.prefetch_shutdown import stop_prefetch_threads


class Slow:
    """An iterable whose items take a while to build (a slow collater)."""

    def __init__(self, n, delay):
        self.n, self.delay = n, delay

    def __len__(self):
        return self.n

    def __iter__(self):
        for i in range(self.n):
            time.sleep(self.delay)
            yield i


def test_running_consumer_is_stopped_after_its_current_batch():
    stop_prefetch_threads()  # those of trainings run in this process before (the suite calls CLIs in-process)
    it = BufferedIterator(2, Slow(1000, 0.02))
    assert next(it) == 0  # the consumer thread is running and will keep building batches
    consumer = it._consumer
    assert consumer.is_alive()
    t = time.monotonic()
    assert stop_prefetch_threads() == 1
    assert not consumer.is_alive() and time.monotonic() - t < 5
    assert consumer.count < 1000  # it did not build the rest of the epoch


@pytest.mark.slow  # a fresh fairseq process: 11 s
def test_a_process_that_stops_mid_epoch_exits_with_status_zero(tmp_path):
    """The crash this prevents: a daemon thread inside torch while Python finalises (exit status 134)."""
    import subprocess
    import sys
    import textwrap

    script = tmp_path / "stop.py"
    script.write_text(textwrap.dedent("""
        import torch
        import fairseq_syntax.plugin  # installs the exit hook
        from fairseq.data.iterators import BufferedIterator

        class Work:
            def __len__(self):
                return 10 ** 6
            def __iter__(self):
                while True:
                    yield torch.randn(200, 200) @ torch.randn(200, 200)

        it = BufferedIterator(1, Work())
        next(it)
    """))
    for _ in range(3):
        p = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
        assert p.returncode == 0, p.stderr[-2000:]
        assert "terminate called" not in p.stderr
