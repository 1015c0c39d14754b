"""A progress line for a long preparation step that runs without a progress bar (logs, batch jobs)."""
import logging
import time

logger = logging.getLogger(__name__)


class ProgressLog:
    """Without a progress bar (logs, batch jobs), a log line at most every ``interval`` seconds: done, total,
    elapsed time and what is left at the rate so far."""

    def __init__(self, desc: str, total: int, done: int = 0, unit: str = "sent", interval: float = 60.0):
        self.desc, self.total, self.done, self.unit, self.interval = desc, total, done, unit, interval
        self.start_done = done
        self.t0 = self.last = time.monotonic()

    def update(self, n: int) -> None:
        self.done += n
        now = time.monotonic()
        if now - self.last < self.interval or self.done >= self.total:
            return
        self.last = now
        rate = (self.done - self.start_done) / max(now - self.t0, 1e-9)
        left = (self.total - self.done) / rate if rate > 0 else float("nan")
        logger.info("%s: %s / %s %s (%.0f%%), %.1f min so far, about %.1f min left", self.desc, f"{self.done:,}",
                    f"{self.total:,}", self.unit, 100.0 * self.done / max(self.total, 1), (now - self.t0) / 60,
                    left / 60)
