"""Allow-list of the globals pickled in fairseq checkpoints (torch weights_only).

torch >= 2.6 loads with ``weights_only=True`` by default and refuses any
global that is not allow-listed. A fairseq 0.12 checkpoint holds tensors,
plain containers and numbers, plus one class: ``argparse.Namespace`` (the
model config of architectures registered with ``register_model_architecture``
is stored as a Namespace inside ``cfg``; trainer meters are saved as plain
state tuples). This was found by saving checkpoints with ``fairseq-train``
and listing them with ``torch.serialization.get_unsafe_globals_in_checkpoint``;
tests/test_checkpoint_safety.py re-checks a freshly trained checkpoint of
every kind we save. We add exactly these to torch's safe globals instead of
switching the safety off.
"""
import argparse

#: every global a fairseq checkpoint of this plugin pickles
FAIRSEQ_CHECKPOINT_GLOBALS = (argparse.Namespace,)


def allow_fairseq_checkpoint_globals() -> None:
    import torch.serialization as ser

    if hasattr(ser, "add_safe_globals"):  # torch >= 2.4
        ser.add_safe_globals(list(FAIRSEQ_CHECKPOINT_GLOBALS))
