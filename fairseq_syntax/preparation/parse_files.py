"""Parsing a file: one sentence per line in, CoNLL-U out, in batches, in resumable chunks committed one by one
(:mod:`fairseq_syntax.preparation.chunked`), over ``--workers`` processes that each build their own parser,
or one shard of a job. ``fairseq-syntax-parse`` and ``prepare``'s parse step run it."""
from __future__ import annotations

import io
import json
import logging
from typing import Callable, List, Tuple

from fairseq_syntax.data.trees.conllu import write_conllu
from fairseq_syntax.errors import SyntaxDataError
from fairseq_syntax.parsing.base import Parser, build_parser
from fairseq_syntax.parsing.identity import parser_identity
from fairseq_syntax.preparation.chunked import read_lines, run_chunked

logger = logging.getLogger(__name__)


def with_text(sent, line: str):
    """``sent`` with the CoNLL-U comment ``# text = LINE``: the text its parser read (stripped), which
    SentencePiece later cuts and the pieces are aligned into (piece_align.py); a parser's own ``# text`` is
    replaced, its other comments kept."""
    sent.comments = [c for c in sent.comments if not c.startswith(("# text =", "# text="))] + [
        f"# text = {line.strip()}"]
    return sent


def _parse_chunk(parser: Parser, first: int, lines: List[str], path: str, batch_size: int):
    """Parse one chunk of lines (items first.. of the file) in batches; its CoNLL-U text (each sentence with the
    line it was parsed from as its ``# text``) and sentence count."""
    buf = io.StringIO()
    n = 0
    for start in range(0, len(lines), batch_size):
        batch = lines[start : start + batch_size]
        sents = parser.parse(batch)
        parser.check(batch, sents, first + start + 1, path)
        n += write_conllu((with_text(s, line) for s, line in zip(sents, batch)), buf)
    return buf.getvalue(), n


def _build(backend: str, options: dict) -> Parser:
    return build_parser(backend, **options)


class _NonEmpty:
    """Item check of the first pass: empty input lines are errors naming file and line."""

    def __init__(self, path):
        self.path = path

    def __call__(self, i, line):
        if not line.strip():
            raise SyntaxDataError(f"{self.path}:{i + 1}", "empty line: every line must hold one sentence")


#: lines per committed chunk of a parse (a multiple of the batch size)
DEFAULT_CHUNK_SIZE = 2048


def parse_chunked(
    in_path: str,
    out_path: str,
    parser: Parser = None,
    spec: Tuple[str, dict] = None,
    batch_size: int = 256,
    workers: int = 1,
    chunk_size: int = DEFAULT_CHUNK_SIZE,
    shard: Tuple[int, int] = None,
    progress: bool = True,
    on_commit: Callable[[int, int], None] = None,
):
    """Parse ``in_path`` into CoNLL-U ``out_path`` in resumable chunks (:mod:`fairseq_syntax.preparation.chunked`).

    ``spec = (backend, options)`` builds the parser (in each of ``workers`` processes, or here);
    a ready ``parser`` object serves one process. Output is in input order and the same for any number
    of workers. ``shard = (i, n)`` parses only shard i of n. Returns the
    :class:`~fairseq_syntax.preparation.chunked.ChunkResult`.
    """

    if parser is None and spec is None:
        raise ValueError("parse_chunked needs a parser or a (backend, options) spec")
    if spec is None and getattr(parser, "spec", None) is not None:
        spec = parser.spec  # built by build_parser: its chunks are keyed by its model, not by its class
    if workers > 1 and spec is None:
        raise ValueError("parsing with several workers needs a (backend, options) spec: each worker builds its "
                         "own parser")
    chunk_size = -(-max(chunk_size, 1) // batch_size) * batch_size  # whole batches: same batches at any size
    if spec is not None:
        key = "parse " + json.dumps({"backend": spec[0], "options": spec[1], "batch": batch_size,  # and the model
                                     "identity": parser_identity(spec[0], spec[1]),  # behind them; the output
                                     "comments": "text"}, sort_keys=True)  # carries each line as # text
    else:  # a parser made by hand: nothing says which model it holds
        key = f"parse {type(parser).__module__}.{type(parser).__qualname__} batch={batch_size} comments=text"
        logger.warning("%s: a parser without a (backend, options) spec (not made by build_parser): its parses' "
                       "chunks are reused by its class alone; another model of the same class needs another "
                       "output file", out_path)
    return run_chunked(
        read_lines(in_path), out_path, _parse_chunk, key, chunk_size=chunk_size, task_args=(in_path, batch_size),
        init=_build, init_args=tuple(spec) if spec else (), state=parser, workers=workers, shard=shard,
        validate=_NonEmpty(in_path), progress=progress, desc=f"parse {in_path}", unit="sent", on_commit=on_commit,
    )


def parse_file(
    parser: Parser,
    in_path: str,
    out_path: str,
    batch_size: int = 256,
    progress: bool = True,
    on_batch: Callable[[int], None] = None,
    **chunk_options,
) -> int:
    """Parse ``in_path`` (one sentence per line) into CoNLL-U ``out_path``.

    Empty input lines are errors (they would desynchronise the parallel
    corpus); every line is checked before anything is parsed. The output is
    written in resumable chunks (:func:`parse_chunked`, whose options
    ``chunk_options`` takes). Returns the number of sentences written.
    """
    done = [0]

    def count(c, n):
        done[0] += n
        if on_batch:
            on_batch(done[0])

    res = parse_chunked(in_path, out_path, parser, batch_size=batch_size, progress=progress, on_commit=count,
                        **chunk_options)
    return res.units
