"""Allow-list of the globals pickled in fairseq checkpoints (torch weights_only).

torch >= 2.6 loads with ``weights_only=True`` by default and refuses any
global not allow-listed. fairseq 0.12 checkpoints pickle, besides tensors
and plain containers, the ones below (found by saving checkpoints with
``fairseq-train`` and listing them with
``torch.serialization.get_unsafe_globals_in_checkpoint``; see
tests/test_checkpoint_safety.py, which re-checks a fresh checkpoint). We add
exactly these to torch's safe globals instead of switching safety off.
"""
from __future__ import annotations

import argparse
import collections


def fairseq_checkpoint_globals():
    from fairseq.logging import meters

    return [
        argparse.Namespace,
        collections.OrderedDict,
        meters.AverageMeter,
        meters.TimeMeter,
        meters.StopwatchMeter,
    ]


def allow_fairseq_checkpoint_globals() -> None:
    import torch.serialization as ser

    if hasattr(ser, "add_safe_globals"):
        ser.add_safe_globals(fairseq_checkpoint_globals())
