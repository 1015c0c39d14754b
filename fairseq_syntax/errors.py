"""Errors raised on malformed syntax data and inconsistent options (docs/design.md, "Errors").

Every message names where the problem is (file and line, or split, side and
sentence index) and what is wrong, so that a user can fix the input; nothing
is skipped, clipped or remapped silently.
"""


class SyntaxDataError(ValueError):
    """Malformed parse, text or syntax dataset.

    ``where`` is a location such as ``"data/train.de.conllu:1234"`` or
    ``"split 'valid', source side, sentence 17"``.
    """

    def __init__(self, where: str, what: str):
        self.where = where
        self.what = what
        super().__init__(f"{where}: {what}")

    def __reduce__(self):  # picklable, so that an error in a worker process reaches the parent intact
        return (type(self), (self.where, self.what))


class OptionError(ValueError):
    """An inconsistent combination of options, found by a library function; a command shows it as its usage
    error (argparse's ``parser.error``: the usage line, the message, exit status 2)."""


class InputLineError(SyntaxDataError):
    """One line of a user's raw input cannot be translated (the parser fails on it, it is too long, ...): the
    other lines can. ``line`` is its 1-based number in the whole input."""

    def __init__(self, line: int, what: str):
        self.line = line
        super().__init__(f"input line {line}", what)

    def __reduce__(self):
        return (type(self), (self.line, self.what))
