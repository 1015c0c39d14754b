"""A checkpoint file that cannot be read is named, with what to do (docs/design.md, "Errors").

torch reports an empty checkpoint as a bare ``EOFError`` and a truncated one (a save cut off by a kill or a
full disk) as ``PytorchStreamReader failed reading zip archive: failed finding central directory``, neither
naming the file. fairseq reads every checkpoint through ``checkpoint_utils.load_checkpoint_to_cpu`` (training
resuming from checkpoint_last.pt, fairseq-generate's ``--path``, the hub interface, the plugin's analysis
commands): :func:`install` wraps that function so that these failures become a
:class:`~fairseq_syntax.errors.SyntaxDataError` naming the checkpoint, shown as one line
(:mod:`fairseq_syntax.patches.error_display`). So do a checkpoint torch's safe loader refuses (a global outside the
allow-list of :mod:`fairseq_syntax.patches.checkpoint_safety`: loading it could run code, and it is not loaded), a
file that is not a pickle at all, and (wrapping ``load_model_ensemble_and_task``) a checkpoint whose
parameters do not fit the model its options build here (another architecture, or another data-bin's
dictionaries).
"""
import functools
import os
import pickle
import re
import struct
import zipfile

from fairseq_syntax.errors import SyntaxDataError

#: torch's messages for a file that is not a whole zip archive
_UNREADABLE = ("PytorchStreamReader", "zip archive", "central directory", "archive is corrupted")


def unreadable_checkpoint(path: str, exc: BaseException) -> SyntaxDataError:
    """The error to raise for a checkpoint file torch could not read: the file's state, torch's own message,
    and what to do (removing checkpoint_last.pt is advised only for a file that is certainly incomplete: empty,
    or a zip archive without its end)."""
    size = os.path.getsize(path) if os.path.exists(path) else 0
    reason = " ".join(str(exc).split())[:200] or type(exc).__name__
    incomplete = size == 0 or "central directory" in reason
    state = "empty (0 bytes)" if size == 0 else f"{size:,} bytes, torch: {reason}"
    if incomplete:
        cause = "a checkpoint cut off, e.g. by a kill or a full disk while it was saved"
    else:
        cause = "truncated, corrupt or not a checkpoint, or a read that failed (try again first on a network disk)"
    todo = "use another checkpoint (e.g. checkpoint_best.pt or an epoch's checkpointN.pt)"
    if os.path.basename(path) == "checkpoint_last.pt" and incomplete:
        todo = ("remove it, then train again to start over or give --restore-file with another checkpoint (e.g. "
                "checkpoint_best.pt, or an epoch's checkpointN.pt) to resume from there")
    elif os.path.basename(path) == "checkpoint_last.pt":
        todo = "if it stays unreadable, " + todo + " with --restore-file"
    return SyntaxDataError(path, f"cannot be read ({state}): {cause}; {todo}")


def refused_checkpoint(path: str, exc: BaseException) -> SyntaxDataError:
    """The error for a file torch's safe loader (``weights_only=True``) refused: an object outside the allow-list
    (named), or bytes that are not a checkpoint."""
    text = " ".join(str(exc).split())
    unsafe = re.search(r"unsupported GLOBAL (\S+)", text) or re.search(r"Unsupported global: GLOBAL (\S+)", text)
    if unsafe:
        return SyntaxDataError(path, f"refused and not loaded: it holds {unsafe.group(1)}, which is not among the "
                               "objects a checkpoint of fairseq or this plugin holds (loading it could run code); "
                               "use a checkpoint from a source you trust")
    detail = re.search(r"WeightsUnpickler error: (.*?)(?: Check the documentation|$)", text)
    if detail is None and not isinstance(exc, pickle.UnpicklingError):
        text = f"{type(exc).__name__}: {text}"
    return SyntaxDataError(path, f"not a checkpoint torch can read ({(detail.group(1) if detail else text)[:120]}): "
                           "truncated, corrupt or another kind of file; use another checkpoint")


#: torch's line for a parameter of another shape
_SIZE_MISMATCH = re.compile(r"size mismatch for (\S+): copying a param with shape torch\.Size\(\[([^\]]*)\]\) "
                            r"from checkpoint, the shape in current model is torch\.Size\(\[([^\]]*)\]\)")


def mismatched_checkpoint(path: str, exc: BaseException) -> SyntaxDataError:
    """The error for a checkpoint whose parameters do not fit the model built from its options here: the first
    parameter of another shape, with both shapes, else torch's first line of missing or unexpected keys."""
    text = str(exc)
    shape = _SIZE_MISMATCH.search(text)
    if shape:
        name, theirs, ours = shape.groups()
        return SyntaxDataError(path, f"its {name} is [{theirs}], the model built here has [{ours}] (another "
                               "dictionary or another size: give the data-bin and the model options it was trained "
                               f"with){_more(text)}")
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    detail = next((line for line in lines if line.startswith(("size mismatch", "Missing key", "Unexpected key"))),
                  lines[-1] if lines else type(exc).__name__)
    return SyntaxDataError(path, "its parameters do not fit the model built here (trained with another "
                           f"architecture, or on a data-bin with other dictionaries?): {detail[:300]}")


def _more(text: str) -> str:
    """How many more parameters torch found of another shape, as a clause ("" for none)."""
    n = len(_SIZE_MISMATCH.findall(text)) - 1
    return f"; {n} more of another shape" if n > 0 else ""


#: what torch's safe unpickler raises, besides ``UnpicklingError``, on bytes that are no pickle: seen on random
#: files (1 in 11): an opcode popping an empty stack or reading a memo slot never written, a string that is not
#: UTF-8, a truncated struct
_GARBAGE_PICKLE = (IndexError, KeyError, ValueError, struct.error, TypeError, OverflowError)


def _is_legacy_file(path) -> bool:
    """A file torch reads as a bare pickle (not the zip archive every checkpoint since torch 1.6 is)."""
    return os.path.isfile(path) and not zipfile.is_zipfile(path)  # is_zipfile: False on a read error


def _is_unreadable(exc: BaseException) -> bool:
    if isinstance(exc, EOFError):
        return True
    return isinstance(exc, RuntimeError) and any(s in str(exc) for s in _UNREADABLE)


def install() -> None:
    """Wrap fairseq's ``checkpoint_utils.load_checkpoint_to_cpu`` (idempotent)."""
    from fairseq import checkpoint_utils

    original = checkpoint_utils.load_checkpoint_to_cpu
    if getattr(original, "_fairseq_syntax_wrapped", False):
        return

    @functools.wraps(original)
    def load_checkpoint_to_cpu(path, *args, **kwargs):
        try:
            return original(path, *args, **kwargs)
        except pickle.UnpicklingError as e:
            raise refused_checkpoint(str(path), e) from e
        except _GARBAGE_PICKLE as e:
            if not _is_legacy_file(path):
                raise
            raise refused_checkpoint(str(path), e) from e
        except (EOFError, RuntimeError) as e:
            if not _is_unreadable(e):
                raise
            raise unreadable_checkpoint(str(path), e) from e

    load_checkpoint_to_cpu._fairseq_syntax_wrapped = True
    checkpoint_utils.load_checkpoint_to_cpu = load_checkpoint_to_cpu
    ensemble = checkpoint_utils.load_model_ensemble_and_task

    @functools.wraps(ensemble)
    def load_model_ensemble_and_task(filenames, *args, **kwargs):
        try:
            return ensemble(filenames, *args, **kwargs)
        except RuntimeError as e:
            if "Error(s) in loading state_dict" not in str(e):
                raise
            raise mismatched_checkpoint(os.pathsep.join(map(str, filenames)), e) from e

    checkpoint_utils.load_model_ensemble_and_task = load_model_ensemble_and_task
