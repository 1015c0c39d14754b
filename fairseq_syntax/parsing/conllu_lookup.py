"""A "parser" that looks sentences up in a CoNLL-U file.

For ``fairseq-interactive`` with parses made elsewhere (your own parser, gold
trees) and for tests: a line is parsed by finding the CoNLL-U sentence whose
surface tokens (or syntactic words) are exactly the line's whitespace tokens.
A line with no such sentence is an error naming the file and the line.
"""
from __future__ import annotations

from typing import Dict, List, Sequence, Tuple

from fairseq_syntax.data.trees.conllu import Sentence, read_conllu
from fairseq_syntax.errors import SyntaxDataError
from fairseq_syntax.parsing.base import MODEL_NEEDED, ModelMissing, Parser


class ConllULookupParser(Parser):
    pretokenized = True

    def __init__(self, path: str = None, **kwargs):
        if not path:
            raise ModelMissing("conllu", MODEL_NEEDED["conllu"])
        self.path = path
        self.index: Dict[Tuple[str, ...], Sentence] = {}
        for sent in read_conllu(path):
                self.index.setdefault(tuple(sent.tokens), sent)
                self.index.setdefault(tuple(sent.words), sent)

    def parse(self, lines: Sequence[str]) -> List[Sentence]:
        out = []
        for line in lines:
            sent = self.index.get(tuple(line.split()))
            if sent is None:
                raise SyntaxDataError(self.path, f"no sentence with the tokens of the input {line[:80]!r}")
            out.append(sent)
        return out

    def check(self, lines, sents, first_line, path):
        """The trees were checked when the file was read; the tokens are the line's by construction."""
