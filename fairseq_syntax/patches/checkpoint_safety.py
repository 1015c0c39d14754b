"""Allow-list of the globals pickled in fairseq checkpoints (torch weights_only).

torch >= 2.6 loads with ``weights_only=True`` by default and refuses any
global that is not allow-listed. A fairseq 0.12 checkpoint holds tensors,
plain containers and numbers, plus:

- ``argparse.Namespace``: the model config of architectures registered with
  ``register_model_architecture`` is stored as a Namespace inside ``cfg``;
- numeric numpy arrays: with ``--eval-bleu`` the validation meters keep
  sacreBLEU's n-gram counts as numpy integer arrays, saved in
  ``extra_state['metrics']``. An array is rebuilt from ``ndarray``,
  ``dtype`` and ``_reconstruct`` plus raw bytes; an array of Python objects
  would need further globals and is still refused.

These are what ``torch.serialization.get_unsafe_globals_in_checkpoint`` lists
for checkpoints of ``fairseq-train`` (with and without ``--eval-bleu``;
tests/test_e2e_cli.py and tests/test_recipes.py re-check). Exactly these are
added to torch's safe globals, so the safety stays on.
"""
import argparse


def _numpy_array_globals():
    """(object, pickled name) of what a numeric numpy array pickles, for numpy 1.x and 2.x names."""
    import numpy as np

    try:
        from numpy._core import multiarray  # numpy >= 2
    except ImportError:  # numpy 1.x
        from numpy.core import multiarray
    reconstruct = multiarray._reconstruct
    found = [
        (np.ndarray, "numpy.ndarray"),
        (np.dtype, "numpy.dtype"),
        (reconstruct, "numpy._core.multiarray._reconstruct"),  # saved under numpy 2
        (reconstruct, "numpy.core.multiarray._reconstruct"),  # saved under numpy 1
    ]
    # numpy >= 1.25 pickles a dtype's class too: the numeric ones only (not object, string, void)
    dtypes = getattr(np, "dtypes", None)
    for name in getattr(dtypes, "__all__", ()):
        if name.endswith("DType") and not name.startswith(("Object", "Str", "Bytes", "Void", "String")):
            found.append((getattr(dtypes, name), f"numpy.dtypes.{name}"))
    return found


def fairseq_checkpoint_globals():
    """Every global a fairseq checkpoint of this plugin pickles, as (object, pickled name)."""
    return [(argparse.Namespace, "argparse.Namespace")] + _numpy_array_globals()


def allowed_global_names():
    """The pickled names of fairseq_checkpoint_globals()."""
    return {name for _, name in fairseq_checkpoint_globals()}


def allow_fairseq_checkpoint_globals() -> None:
    import torch.serialization as ser

    if hasattr(ser, "add_safe_globals"):  # torch >= 2.4 (the (object, name) form: >= 2.5)
        ser.add_safe_globals(fairseq_checkpoint_globals())
