"""Reading the text inputs of every tool under one set of rules (docs/design.md, "Errors").

The rules, the same for raw text, tokenised or BPE'd text, CoNLL-U, hypotheses and references:

- UTF-8, decoded line by line: a byte that is not UTF-8 is a :class:`SyntaxDataError` naming the file, the
  line and the column (and what to do), not a ``UnicodeDecodeError`` from deep inside a reader;
- a byte-order mark at the start of the file is dropped;
- a line ends at ``\\n``; a ``\\r`` before it (Windows line ends, CRLF) is dropped. A ``\\r`` anywhere else
  in a line is an error: fairseq-preprocess and Python's text mode would take it as a line break and the
  sides of a corpus would no longer line up;
- a missing file, a directory or an unreadable file is a :class:`SyntaxDataError` naming the path.

:func:`open_text` gives a file object that yields lines ending in ``\\n`` (as a text-mode file does);
:func:`count_lines` counts them.
"""
import io
import os
from typing import Iterator, List, Optional, Tuple

from fairseq_syntax.errors import SyntaxDataError

BOM = b"\xef\xbb\xbf"


def check_readable(path: str) -> None:
    """A SyntaxDataError naming ``path`` if it is not a readable file."""
    if not os.path.exists(path):
        raise SyntaxDataError(path, "no such file")
    if os.path.isdir(path):
        raise SyntaxDataError(path, "is a directory, not a file")
    if not os.access(path, os.R_OK):
        raise SyntaxDataError(path, "cannot be read (permission denied)")


def decode_text(raw: bytes, path: str, first_line: int) -> str:
    """Bytes of ``path`` that start at line ``first_line`` (whole lines; the file's start when 1) as text
    under the rules above."""
    if first_line == 1 and raw.startswith(BOM):
        raw = raw[len(BOM):]
    if b"\r" in raw:  # (a search: the replace copies the block)
        raw = raw.replace(b"\r\n", b"\n")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        line_start = raw.rfind(b"\n", 0, e.start) + 1
        lineno = first_line + raw.count(b"\n", 0, e.start)
        raise SyntaxDataError(
            f"{path}:{lineno}",
            f"not UTF-8 text (byte 0x{raw[e.start]:02x} at column {e.start - line_start + 1}); convert the file "
            "to UTF-8, e.g. `iconv -f latin1 -t utf-8 FILE > FILE.utf8` if it is Latin-1",
        ) from None
    cr = text.find("\r")
    if cr >= 0:
        raise SyntaxDataError(
            f"{path}:{first_line + text.count(chr(10), 0, cr)}",
            f"a carriage return inside the line (column {cr - (text.rfind(chr(10), 0, cr) + 1) + 1}): readers "
            "downstream would split the line there; remove it (e.g. `tr -d '\\r'`)",
        )
    return text


#: bytes read and decoded at once (then extended to the end of the line)
BLOCK_BYTES = 1 << 20


class TextFile(io.TextIOBase):
    """A read-only text file under the rules above: iterate it, or ``readline()`` / ``read(size)`` (whole
    lines of at least ``size`` bytes). Decoded a block of about a megabyte at a time, so that a file of
    millions of lines costs about what Python's own text mode does. ``lineno`` counts the lines returned."""

    def __init__(self, path: str):
        super().__init__()
        path = os.fspath(path)
        check_readable(path)
        self.path = path
        try:
            self._f = open(self.path, "rb")
        except OSError as e:
            raise SyntaxDataError(self.path, f"cannot be opened ({e.strerror})") from None
        self.lineno = 0
        self._decoded = 0  # lines decoded so far (errors name the file's own line)
        self._lines: List[str] = []  # decoded lines without their line ends, not returned yet from self._next on
        self._next = 0
        self._open_end = False  # the last of self._lines is the file's last line and has no line end
        # bytes read ahead by next_text, not decoded yet from self._pos on, and the positions of their line ends
        self._buf, self._pos, self._ends, self._end_i = b"", 0, None, 0

    @property
    def name(self) -> str:
        return self.path

    def readable(self) -> bool:
        return True

    def _read_block(self, size: int, counted: bool = True) -> str:
        """At least ``size`` bytes (all when negative) extended to the end of a line, decoded; "" at the end.
        ``counted``: add its lines to the lines decoded (else the caller does)."""
        rest = self._buf[self._pos:]  # what next_text read ahead comes first
        self._buf, self._pos, self._ends = b"", 0, None
        raw = rest + (self._f.read() if size < 0 else self._f.read(size))
        if raw and size >= 0 and not raw.endswith(b"\n"):
            raw += self._f.readline()
        if not raw:
            return ""
        text = decode_text(raw, self.path, self._decoded + 1)
        if counted:
            self._decoded += text.count("\n") + (0 if text.endswith("\n") else 1)
        return text

    def _fill(self) -> bool:
        text = self._read_block(BLOCK_BYTES, counted=False)
        if not text:
            return False
        parts = text.split("\n")  # "\n" alone ends a line (str.splitlines would also split on \x0b, \u2028, ...)
        last = parts.pop()
        self._open_end = bool(last)
        if last:
            parts.append(last)
        self._decoded += len(parts)
        self._lines, self._next = parts, 0
        return True

    def _pending(self, a: int, b: int) -> str:
        """Decoded lines a to b (not returned yet) as one text, each with its line end (the file's last as it is)."""
        if a >= b:
            return ""
        text = "\n".join(self._lines[a:b])
        return text if b == len(self._lines) and self._open_end else text + "\n"

    def readline(self, size: int = -1) -> str:
        if self._next >= len(self._lines) and not self._fill():
            return ""
        line = self._lines[self._next]
        self._next += 1
        self.lineno += 1
        return line if self._open_end and self._next == len(self._lines) else line + "\n"

    def next_text(self, n: int) -> Tuple[str, int]:
        """(the next ``n`` lines as one text, each with its line end but the file's last as it is; how many: fewer
        than ``n`` at the end of the file), decoded in one piece from the bytes read: the lines are found by their
        line ends' positions in the bytes, without a string per line."""
        import numpy as np

        chunks: List[str] = []
        got = 0
        if self._next < len(self._lines):  # lines decoded by readline and not returned yet come first
            got = min(n, len(self._lines) - self._next)
            chunks.append(self._pending(self._next, self._next + got))
            self._next += got
        while got < n:
            if self._ends is None or self._end_i >= len(self._ends):  # no whole line left: read on
                rest, more = self._buf[self._pos:], self._f.read(BLOCK_BYTES)
                self._buf, self._pos, self._ends, self._end_i = rest + more, 0, None, 0
                if not more:
                    if rest:  # the file's last line, without a line end
                        chunks.append(self._decode(rest, 1))
                        got += 1
                    self._buf = b""
                    break
                self._ends = np.flatnonzero(np.frombuffer(self._buf, np.uint8) == 10)
                continue
            take = min(n - got, len(self._ends) - self._end_i)
            cut = int(self._ends[self._end_i + take - 1]) + 1
            chunks.append(self._decode(self._buf[self._pos:cut], take))
            self._pos, self._end_i = cut, self._end_i + take
            got += take
        self.lineno += got
        return "".join(chunks), got

    def _decode(self, raw: bytes, lines: int) -> str:
        """``raw``, the next ``lines`` lines of the file, decoded (errors name the file's line)."""
        text = decode_text(raw, self.path, self._decoded + 1)
        self._decoded += lines
        return text

    def __iter__(self) -> Iterator[str]:
        return self

    def __next__(self) -> str:
        line = self.readline()
        if not line:
            raise StopIteration
        return line

    def read(self, size: Optional[int] = -1) -> str:
        count = len(self._lines) - self._next
        pending = self._pending(self._next, len(self._lines)) if count > 0 else ""
        self._lines, self._next = [], 0
        if pending:  # lines decoded by readline and not returned yet come first
            self.lineno += count
            if size is not None and 0 <= size <= len(pending):
                return pending
        text = self._read_block(-1 if size is None or size < 0 else size)
        self.lineno += text.count("\n") + (1 if text and not text.endswith("\n") else 0)
        return pending + text

    def close(self) -> None:
        if not self.closed:
            self._f.close()
        super().close()


def open_text(path: str) -> TextFile:
    """Open a text input for reading (see the module docstring for the rules)."""
    return TextFile(path)


def read_text_lines(path: str) -> Iterator[str]:
    """The lines of a text input without their line ends."""
    with open_text(path) as f:
        while True:
            text = f.read(BLOCK_BYTES)
            if not text:
                return
            parts = text.split("\n")
            if text.endswith("\n"):
                parts.pop()
            yield from parts


def count_lines(path: str) -> int:
    """The number of lines of a text input as :func:`open_text` reads them (a last line without ``\\n``
    counts), checking the rules on the way."""
    with open_text(path) as f:
        while f.read(BLOCK_BYTES):
            pass
        return f.lineno
