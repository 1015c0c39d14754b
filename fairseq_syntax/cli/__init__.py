"""Command-line entry points (``preprocess/*.py`` and ``fairseq-syntax-*``)."""
import logging
import sys


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
    """Run ``main(argv)``; print data errors as one clear line, exit 1."""
    from fairseq_syntax.errors import SyntaxDataError

    setup_logging()
    try:
        return main(argv)
    except SyntaxDataError as e:
        print(f"error: {e}", file=sys.stderr)
        sys.exit(1)
