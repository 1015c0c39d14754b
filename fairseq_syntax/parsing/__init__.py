"""Dependency-parser adapters: each turns lines of text into CoNLL-U Sentences.

Every backend implements :class:`~fairseq_syntax.parsing.base.Parser`
(``parse(lines) -> list[Sentence]``, one tree per input line) and shares the
one CoNLL-U writer (:func:`fairseq_syntax.data.trees.conllu.write_conllu`); the
one batching file driver is :func:`fairseq_syntax.preparation.parse_files.parse_file`.
"""
from fairseq_syntax.parsing.base import (  # noqa: F401
    BACKENDS,
    Parser,
    backend_options,
    build_parser,
)
