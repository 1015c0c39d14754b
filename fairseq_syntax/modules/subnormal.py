"""Subnormal floats on the CPU: dropping them where they only cost time.

CKY attention's joint softmax (Watanabe et al. 2017, Eq. 13-14) gives the cells it all but ignores weights
below float32's smallest normal number (the exp of a score 87 below the best), and their gradients are
subnormal too. An x86 CPU computes with subnormal operands or results in microcode, many times slower (what
that cost the CKY table's backward on real text, and what dropping them saves: docs/cky.md, "Speed on real
text"). A value below 1.2e-38 vanishes when added to any normal one, so dropping it keeps the gradients; only
the time changes.

Two mechanisms, both used by the table's backward (:mod:`fairseq_syntax.modules.cky_table`):

* :func:`flush_subnormal` sets a tensor's subnormal entries to 0 (any device, any thread count);
* :func:`subnormals_flushed` turns on the CPU's flush-to-zero and denormals-are-zero modes
  (``torch.set_flush_denormal``) for a block of code on the calling thread, for the subnormal values that
  arise inside it, and restores the previous mode after.
"""
from contextlib import contextmanager

import torch
from torch import Tensor


def flush_subnormal(x: Tensor) -> Tensor:
    """x with its subnormal entries (0 < |x| < the dtype's smallest normal number) set to 0."""
    tiny = torch.finfo(x.dtype).tiny
    return x.masked_fill(x.abs() < tiny, 0.0)


def cpu_flushes_subnormals() -> bool:
    """Whether this thread's CPU floating-point mode flushes subnormal values to zero now.

    Probed, as torch has no getter: half of float32's smallest normal number survives a multiplication
    by one unless the mode flushes it (to zero on the way in, denormals-are-zero, or out, flush-to-zero).
    """
    half_tiny = torch.tensor(torch.finfo(torch.float32).tiny, dtype=torch.float32) * 0.5
    return bool(half_tiny.mul(1.0).item() == 0.0)


@contextmanager
def subnormals_flushed(device: torch.device):
    """Inside the block, this thread's CPU flushes subnormal values to zero; a no-op off the CPU.

    Only the calling thread's mode changes: intra-op threads (``OMP_NUM_THREADS`` > 1) keep theirs,
    which is why the table's backward also drops subnormal gradients with :func:`flush_subnormal`.
    """
    if device.type != "cpu" or cpu_flushes_subnormals() or not torch.set_flush_denormal(True):
        yield
        return
    try:
        yield
    finally:
        torch.set_flush_denormal(False)
