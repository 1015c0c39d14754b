"""Parser interface, backend registry and the batched file driver."""
from __future__ import annotations

import abc
import importlib
from typing import Callable, Dict, List, Sequence

from tqdm import tqdm

from fairseq_syntax.data.conllu import Sentence, write_conllu
from fairseq_syntax.data.tree import check_tree
from fairseq_syntax.errors import SyntaxDataError

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


def build_parser(backend: str, **options) -> Parser:
    """Instantiate a backend by name (imports its library lazily)."""
    if backend not in BACKENDS:
        raise ValueError(f"unknown parser backend {backend!r}; choose from {sorted(BACKENDS)}")
    mod, cls = BACKENDS[backend].split(":")
    return getattr(importlib.import_module(mod), cls)(**options)


def parse_file(
    parser: Parser,
    in_path: str,
    out_path: str,
    batch_size: int = 256,
    progress: bool = True,
    on_batch: Callable[[int], None] = None,
) -> int:
    """Parse ``in_path`` (one sentence per line) into CoNLL-U ``out_path``.

    Empty input lines are errors (they would desynchronise the parallel
    corpus). Returns the number of sentences written.
    """
    with open(in_path, encoding="utf-8") as f:
        lines = [ln.rstrip("\n") for ln in f]
    for i, ln in enumerate(lines, 1):
        if not ln.strip():
            raise SyntaxDataError(f"{in_path}:{i}", "empty line: every line must hold one sentence")
    n = 0
    with open(out_path, "w", encoding="utf-8") as out, tqdm(
        total=len(lines), desc=f"parse {in_path}", unit="sent", disable=not progress
    ) as bar:
        for start in range(0, len(lines), batch_size):
            chunk = lines[start : start + batch_size]
            sents = parser.parse(chunk)
            parser.check(chunk, sents, start + 1, in_path)
            n += write_conllu(sents, out)
            bar.update(len(chunk))
            if on_batch:
                on_batch(n)
    return n
