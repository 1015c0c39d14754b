"""Command-line entry points (``preprocess/*.py`` and ``fairseq-syntax-*``)."""
import logging
import os
import sys

from fairseq_syntax.patches.error_display import exit_status, report
from fairseq_syntax.errors import OptionError, SyntaxDataError


def prog_name(script: str) -> str:
    """The name --help shows: the console script that is running (fairseq-syntax-parse), else
    preprocess/SCRIPT.py."""
    name = os.path.basename(sys.argv[0]) if sys.argv else ""
    return name if name.startswith("fairseq-syntax-") else f"preprocess/{script}.py"


def setup_logging():
    # force: importing fairseq's models already ran a basicConfig(level=DEBUG) (wav2vec2_classification.py),
    # which would print every library's debug messages (matplotlib's font search, ...)
    logging.basicConfig(
        format="%(asctime)s | %(levelname)s | %(name)s | %(message)s",
        level=logging.INFO,
        stream=sys.stderr,
        force=True,
    )


def run(main, argv=None):
    """Run ``main(argv)``; an expected failure (bad data, a missing or unreadable file or model, inconsistent
    options) ends it with one line on stderr and exit status 1 (2 for options), as
    :mod:`fairseq_syntax.patches.error_display` says; ``FAIRSEQ_SYNTAX_DEBUG=1`` shows its traceback."""

    setup_logging()
    try:
        return main(argv)
    except (SyntaxDataError, OptionError, OSError, KeyboardInterrupt) as e:
        if not report(e):
            raise
        sys.exit(exit_status(e))
