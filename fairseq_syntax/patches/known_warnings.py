"""Silences the warnings and log lines that every fairseq command prints and that ask nothing of the user.

fairseq 0.12 with the hydra, omegaconf and torch this project pins prints about twenty lines of them on every
command (a training, a decoding, ``fairseq-interactive``, the hub's ``translate``), which hide the lines that
matter. Each is filtered by its category, the start of its text and, where the warning names its module, that
module, so that any other warning of the same libraries still shows:

* hydra's deprecations of the API fairseq's ``convert_namespace_to_omegaconf`` calls (the experimental
  ``initialize`` / ``compose``, no ``version_base``, ``# @package _group_`` headers, the schema matched by the
  name ``config``, the ``strict`` flag): fairseq's use, nothing the user can change;
* torch's DataLoader asked for pinned memory without an accelerator (fairseq asks for it on every device);
* torch's deprecation of ``torch.cuda.amp.autocast(...)``, which fairseq's ``train_step`` calls, and of the
  attention masks of two types that fairseq's transformer layers give it;
* hydra's DEBUG lines "Setting JobRuntime:name=..." (importing fairseq leaves the root logger at DEBUG in the
  commands that configure no logging of their own: fairseq-generate, fairseq-interactive);
* fairseq's "--user-dir=... has already been imported" for the plugin's own package (the plugin's commands
  import it before fairseq reads ``--user-dir``).

:func:`install` is run by the plugin's start-up (:mod:`fairseq_syntax.patches.startup`).
"""
import logging
import re
import warnings

#: (category, start of the message (a regular expression), module that warns (None: any)); hydra's messages
#: that start with a newline are matched after it
WARNINGS = (
    (UserWarning, r"hydra\.experimental\.(initialize|compose)\(\) is no longer experimental", r"hydra\."),
    (UserWarning, r"\s*The version_base parameter is not specified", r"hydra\."),
    (UserWarning, r"In '[^']*': Usage of deprecated keyword in package header '# @package _group_'", r"hydra\."),
    # warned with a stack level above hydra's callers: attributed to whatever module is there (or "sys")
    (UserWarning, r"\s*'config' is validated against ConfigStore schema with the same name", None),
    (UserWarning, r"\s*The strict flag in the compose API is deprecated", r"hydra\."),
    (UserWarning, r"'pin_memory' argument is set as true but no accelerator is found", r"torch\.utils\.data\."),
    (FutureWarning, r"`torch\.cuda\.amp\.autocast\(args\.\.\.\)` is deprecated", r"fairseq\."),
    (UserWarning, r"Support for mismatched key_padding_mask and attn_mask is deprecated", r"torch\.nn\.functional"),
)


class _DropRecords(logging.Filter):
    """Drops the log records whose message matches ``pattern``."""

    def __init__(self, pattern: str):
        super().__init__()
        self.pattern = re.compile(pattern)

    def filter(self, record: logging.LogRecord) -> bool:
        return not self.pattern.match(record.getMessage())


def _package_dir() -> str:
    import os

    return os.path.dirname(os.path.abspath(__file__))


def filter_warnings() -> None:
    """Add the warning filters above (again: ``warnings`` keeps one of each). Whoever saves and restores the
    filters around a block (pytest around every test) calls this inside it."""
    for category, message, module in WARNINGS:
        warnings.filterwarnings("ignore", message=message, category=category, module=module or "")


def install() -> None:
    """Add the warning filters and log filters above (each once)."""
    filter_warnings()
    records = {
        "hydra.core.utils": r"Setting JobRuntime:name=",
        "fairseq.utils": re.escape(f"--user-dir={_package_dir()} has already been imported"),
    }
    for name, pattern in records.items():
        logger = logging.getLogger(name)
        if not any(isinstance(f, _DropRecords) for f in logger.filters):
            logger.addFilter(_DropRecords(pattern))
