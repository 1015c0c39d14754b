"""Sentence pairs longer than the model reads: named, counted, and not dropped silently.

fairseq leaves out the training pairs longer than ``--max-source-positions`` / ``--max-target-positions``
with a warning in the log, however many they are (a limit set too low can drop most of a corpus unnoticed), and
stops on one in a test split with an exception. :func:`filter_long_pairs` keeps fairseq's filter and says how many:
in training a warning with the count and share, and a refusal (one line) above ``max_fraction`` of the split
unless the user raises it; elsewhere one line naming the first such pair and the options to give.
"""
import logging

from fairseq_syntax.errors import OptionError, SyntaxDataError

logger = logging.getLogger(__name__)


def filter_long_pairs(indices, dataset, max_positions, ignore_invalid_inputs: bool, max_fraction: float,
                      split: str):
    """The indices of ``dataset`` (split ``split``) whose pairs fit ``max_positions``, as fairseq's
    ``filter_indices_by_size``, with the checks above."""
    total = len(indices)
    kept, ignored = dataset.filter_indices_by_size(indices, max_positions)
    if len(ignored) == 0:
        return kept
    first = int(ignored[0])
    size = dataset.size(first)
    size = tuple(int(x) for x in size) if isinstance(size, (tuple, list)) else int(size)
    if not ignore_invalid_inputs:
        raise SyntaxDataError(f"split {split}", f"{len(ignored):,} of {total:,} sentence pairs are longer than the "
                              f"model reads (max positions {max_positions}; pair {first} has "
                              f"{size}): give --skip-invalid-size-inputs-valid-test to leave them "
                              "out, or larger --max-source-positions / --max-target-positions")
    share = len(ignored) / max(total, 1)
    if share > max_fraction:
        raise OptionError(f"--max-source-positions / --max-target-positions {max_positions}: {len(ignored):,} of "
                          f"{total:,} pairs of split {split} ({share:.1%}) are longer and would be left out; raise "
                          f"the limits, or allow it with --max-skipped-fraction {share:.3f} or more")
    logger.warning("split %s: %d of %d pairs (%.2f%%) are longer than max positions %s and are left out (first: "
                   "pair %d, %s)", split, len(ignored), total, 100 * share, max_positions, first, size)
    return kept
