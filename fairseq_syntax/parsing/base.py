"""Parser interface, backend registry and the batched file driver."""
from __future__ import annotations

import abc
import importlib
import io
import json
import logging
from typing import Callable, Dict, List, Sequence, Tuple

from fairseq_syntax.data.chunked import read_lines, run_chunked
from fairseq_syntax.data.conllu import Sentence, write_conllu
from fairseq_syntax.data.tree import check_tree
from fairseq_syntax.errors import SyntaxDataError

logger = logging.getLogger(__name__)

#: backend name -> "module:class"
BACKENDS: Dict[str, str] = {
    "stanza": "fairseq_syntax.parsing.stanza_backend:StanzaParser",
    "spacy": "fairseq_syntax.parsing.spacy_backend:SpacyParser",
    "udpipe": "fairseq_syntax.parsing.udpipe_backend:UDPipeParser",
    "conllu": "fairseq_syntax.parsing.conllu_lookup:ConllULookupParser",
}


class Parser(abc.ABC):
    """Parses lines (raw, or whitespace-tokenised when ``pretokenized``)."""

    pretokenized: bool = False

    @abc.abstractmethod
    def parse(self, lines: Sequence[str]) -> List[Sentence]:
        """One Sentence per line, in order."""

    def check(self, lines: Sequence[str], sents: List[Sentence], first_line: int, path: str) -> None:
        """One tree per line; in pre-tokenized mode the tokens are the input's."""
        if len(sents) != len(lines):
            raise SyntaxDataError(
                f"{path}:{first_line}", f"the parser returned {len(sents)} sentences for {len(lines)} lines"
            )
        for k, (line, s) in enumerate(zip(lines, sents)):
            where = f"{path}:{first_line + k}"
            check_tree(s.heads, where)
            if self.pretokenized and s.tokens != line.split():
                raise SyntaxDataError(where, f"the parser changed the given tokenisation: {s.tokens[:8]}...")


def backend_options(backend: str, lang: str = "en", model: str = None, model_dir: str = None, gpu: bool = False,
                    pretokenized: bool = False) -> dict:
    """Constructor options of a backend from the common command-line options."""
    if backend == "stanza":
        return dict(lang=lang, model_dir=model_dir, gpu=gpu, pretokenized=pretokenized)
    if backend == "spacy":
        return dict(model=model or "ja_ginza", gpu=gpu, pretokenized=pretokenized)
    if backend == "udpipe":
        return dict(model_path=model, pretokenized=pretokenized)
    if backend == "conllu":
        return dict(path=model)
    raise ValueError(f"unknown parser backend {backend!r}; choose from {sorted(BACKENDS)}")


def effective_workers(workers: int, gpu: bool) -> int:
    """On a GPU a parser stays one process per GPU: run one --shard per GPU instead."""
    if gpu and workers > 1:
        logger.warning("--gpu: one parser process per GPU, so --workers %d is ignored; to use several GPUs run "
                       "one --shard I/N per GPU (CUDA_VISIBLE_DEVICES=I)", workers)
        return 1
    return max(1, workers)


def build_parser(backend: str, **options) -> Parser:
    """Instantiate a backend by name (imports its library lazily)."""
    if backend not in BACKENDS:
        raise ValueError(f"unknown parser backend {backend!r}; choose from {sorted(BACKENDS)}")
    mod, cls = BACKENDS[backend].split(":")
    return getattr(importlib.import_module(mod), cls)(**options)


def load_parser(backend: str, options: dict, what: str) -> Parser:
    """Build a parser, or fail with one line naming ``what`` (e.g. "--parser-model-target en.udpipe") and the
    reason: a missing spaCy package, UDPipe file or stanza model is a user error, not a traceback."""
    try:
        return build_parser(backend, **options)
    except ImportError as e:
        raise SyntaxDataError(what, f"the {backend} parser's library is not installed ({e})") from None
    except Exception as e:  # spaCy's OSError E050, UDPipe's None model, stanza's missing resources, ...
        reason = " ".join(str(e).split()) or type(e).__name__
        raise SyntaxDataError(what, f"cannot load the {backend} parser: {reason[:400]}") from None


def _parse_chunk(parser: Parser, first: int, lines: List[str], path: str, batch_size: int):
    """Parse one chunk of lines (items first.. of the file) in batches; its CoNLL-U text and sentence count."""
    buf = io.StringIO()
    n = 0
    for start in range(0, len(lines), batch_size):
        batch = lines[start : start + batch_size]
        sents = parser.parse(batch)
        parser.check(batch, sents, first + start + 1, path)
        n += write_conllu(sents, buf)
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
    """Parse ``in_path`` into CoNLL-U ``out_path`` in resumable chunks (:mod:`fairseq_syntax.data.chunked`).

    ``spec = (backend, options)`` builds the parser (in each of ``workers`` processes, or here);
    a ready ``parser`` object serves one process. Output is in input order and the same for any number
    of workers. ``shard = (i, n)`` parses only shard i of n. Returns the
    :class:`~fairseq_syntax.data.chunked.ChunkResult`.
    """

    if parser is None and spec is None:
        raise ValueError("parse_chunked needs a parser or a (backend, options) spec")
    if workers > 1 and spec is None:
        raise ValueError("parsing with several workers needs a (backend, options) spec: each worker builds its "
                         "own parser")
    chunk_size = -(-max(chunk_size, 1) // batch_size) * batch_size  # whole batches: same batches at any size
    if spec is not None:
        key = "parse " + json.dumps({"backend": spec[0], "options": spec[1], "batch": batch_size}, sort_keys=True)
    else:
        key = f"parse {type(parser).__module__}.{type(parser).__qualname__} batch={batch_size}"
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
