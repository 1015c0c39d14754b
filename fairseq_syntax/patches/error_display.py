"""How an expected failure reaches the user: one line, ``error: WHERE: WHAT``, and a non-zero exit status
(docs/design.md, "Errors").

Expected failures are the plugin's :class:`~fairseq_syntax.errors.SyntaxDataError` (bad data, a file that is
missing, truncated or not UTF-8, a data-bin that lacks what a model needs, a checkpoint that cannot be read)
and :class:`~fairseq_syntax.errors.OptionError` (options that do not go together), and an ``OSError`` that
names its file (a path that is not there, not a folder, not readable). Anything else is a bug and keeps its
traceback. ``FAIRSEQ_SYNTAX_DEBUG=1`` shows the traceback of an expected failure too.

The plugin's own commands go through :func:`fairseq_syntax.cli.run`; fairseq's commands (``fairseq-train``,
``fairseq-generate``, ...) get the same display from :func:`install_excepthook`, which the plugin installs
when fairseq loads it (``--user-dir``); a user's own script that imports the plugin keeps Python's tracebacks.
Through the hook too, options that do not go together (an ``OptionError``: a parse-head layer the model does
not have, a criterion the model cannot feed, ...) exit with status 2 and the rest with 1: the hook raises
``SystemExit``, which CPython honours from ``sys.excepthook`` (atexit handlers still run). Where another hook
wraps the plugin's (``torch.distributed`` wraps it in every rank of a torchrun or ``--distributed-no-spawn``
run, to prefix the lines with the rank), the hook prints its line and returns, and the status is Python's 1.
fairseq's multi-GPU training (``torch.multiprocessing.spawn``, one process per GPU) raises a worker's failure
in the parent as torch's ``ProcessRaisedException`` carrying the worker's traceback as text: when that
traceback ends in one of the plugin's expected failures, the hook shows its one line and its status.
"""
import errno
import os
import sys
from typing import Dict, Optional, Tuple

from fairseq_syntax.errors import OptionError, SyntaxDataError

DEBUG_ENV = "FAIRSEQ_SYNTAX_DEBUG"

#: fairseq's messages for a missing checkpoint (--path) or split, raised as OSErrors without a file name
FAIRSEQ_FILE_MESSAGES = ("Model file not found:", "Dataset not found:")

#: exit status of an expected failure: 1 for data and files, 2 for options (argparse's status for usage errors)
DATA_STATUS, OPTION_STATUS = 1, 2


def debug_requested() -> bool:
    """True when ``FAIRSEQ_SYNTAX_DEBUG`` asks for tracebacks (read when a failure happens, not at import)."""
    return os.environ.get(DEBUG_ENV, "").strip().lower() not in ("", "0", "no", "false")


def plugin_error_classes() -> Dict[str, type]:
    """SyntaxDataError, OptionError and their subclasses (InputLineError, ...), by the name a traceback gives
    them (``module.Class``)."""
    found, todo = {}, [SyntaxDataError, OptionError]
    while todo:
        cls = todo.pop()
        found[f"{cls.__module__}.{cls.__qualname__}"] = cls
        todo.extend(cls.__subclasses__())
    return found


def worker_error(exc: BaseException) -> Optional[Tuple[type, str]]:
    """The class and message of a plugin error that ended a worker of ``torch.multiprocessing.spawn`` (its
    ``ProcessRaisedException`` holds the worker's ``traceback.format_exc()``), or None."""
    if type(exc).__name__ != "ProcessRaisedException" or not type(exc).__module__.startswith("torch."):
        return None
    text, classes = str(exc).rstrip(), plugin_error_classes()
    at, name = max((text.rfind(f"\n{name}: "), name) for name in classes)
    if at < 0:
        return None
    message = text[at + len(name) + 3:]
    # the plugin's exception ended the worker only if it is the traceback's last one: nothing follows its
    # message ("During handling of the above exception" and "raise ... from" chains put the last one last)
    if "\nTraceback (most recent call last):" in message or "\nDuring handling of" in message:
        return None
    return classes[name], " ".join(message.split())


#: fairseq's trainer, resuming from a checkpoint that does not fit the model (a plain Exception naming the file)
FAIRSEQ_MISFIT = "Cannot load model parameters from checkpoint "


def one_line(exc: BaseException) -> Optional[str]:
    """The one-line message of an expected failure (without ``error: ``), or None for anything else."""
    from_worker = worker_error(exc)
    if from_worker is not None:
        return from_worker[1]
    if isinstance(exc, AssertionError) and str(exc) == "--batch-size cannot be larger than --buffer-size":
        return "--batch-size is larger than --buffer-size (fairseq-interactive reads that many lines at a time): " \
               "give --buffer-size at least as large"
    if isinstance(exc, KeyboardInterrupt):
        return "interrupted (Ctrl-C); a killed prepare or training resumes when the same command runs again"
    if type(exc) is Exception and str(exc).startswith(FAIRSEQ_MISFIT):
        from fairseq_syntax.patches.checkpoint_reading import mismatched_checkpoint

        path = str(exc)[len(FAIRSEQ_MISFIT):].split(";")[0]
        cause = exc.__cause__ or exc.__context__
        return " ".join(str(mismatched_checkpoint(path, cause or exc)).split())
    if isinstance(exc, (SyntaxDataError, OptionError)):
        return " ".join(str(exc).split())
    if isinstance(exc, OSError) and exc.filename is None and str(exc).startswith(FAIRSEQ_FILE_MESSAGES):
        return " ".join(str(exc).split())  # fairseq's own message names the file or split
    if isinstance(exc, OSError) and exc.errno == errno.ENOSPC:
        where = f"{exc.filename}: " if exc.filename is not None else ""
        return (f"{where}no space left on the device: free some and run the same command again (prepare resumes "
                "from its finished steps, training from checkpoint_last.pt)")
    if isinstance(exc, OSError) and exc.filename is not None:
        what = exc.strerror or type(exc).__name__
        if isinstance(exc, NotADirectoryError):
            what += " (a file is in the way of a folder on this path)"
        elif isinstance(exc, FileExistsError):
            what += " (a file is where a folder should be made)"
        return f"{exc.filename}: {what} ({DEBUG_ENV}=1 shows where it came from)"
    return None


def exit_status(exc: BaseException) -> int:
    if isinstance(exc, KeyboardInterrupt):
        return 130  # the shell's status for a command ended by SIGINT
    from_worker = worker_error(exc)
    cls = from_worker[0] if from_worker is not None else type(exc)
    return OPTION_STATUS if issubclass(cls, OptionError) else DATA_STATUS


def report(exc: BaseException) -> bool:
    """Print an expected failure as one line on stderr; False (nothing printed) for anything else or when
    tracebacks are asked for."""
    message = one_line(exc)
    if message is None or debug_requested():
        return False
    print(f"error: {message}", file=sys.stderr, flush=True)
    return True


_installed = False


def fairseq_program_running() -> bool:
    """True when the program is one of fairseq's commands (``fairseq-train``, ``python -m fairseq_cli.train``):
    not a user's script that imported the plugin, whose own errors keep their tracebacks."""
    if os.path.basename(sys.argv[0] if sys.argv else "").startswith("fairseq-"):
        return True
    spec = getattr(sys.modules.get("__main__"), "__spec__", None)
    return bool(spec and (spec.name or "").startswith("fairseq_cli."))


def install_excepthook() -> None:
    """Show an expected failure that ends a fairseq command as one line (exit status 2 for options, else 1),
    leaving every other exception, and every exception of a program that is not a fairseq command, to the hook
    installed before. Whether the program is one is decided when the exception comes, not here. Idempotent."""
    global _installed
    if _installed:
        return
    previous = sys.excepthook

    def hook(exc_type, exc, tb):
        if not (fairseq_program_running() and report(exc)):
            previous(exc_type, exc, tb)
            return
        if sys.excepthook is hook:  # the outermost hook: CPython takes the exit status from this SystemExit
            raise SystemExit(exit_status(exc))
        # wrapped by another hook (torch.distributed's, in every rank of a torchrun / --distributed-no-spawn run,
        # writes the lines this hook printed, prefixed with the rank, after it returns): return, status 1

    sys.excepthook = hook
    _installed = True
