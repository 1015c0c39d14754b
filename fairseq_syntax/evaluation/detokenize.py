"""Detokenising model output so that it is written as the references are.

A parsed side's tokens are the parser's: UDPipe (and stanza) split a hyphenated
compound into three tokens (``T-Shirt`` -> ``T - Shirt``), marking the hyphen's
neighbours ``SpaceAfter=No``, and the model learns to write them so. Moses'
detokeniser joins only its own ``@-@`` marks, so ``T - Shirt`` would stay
apart in the detokenised output while the reference writes ``T-Shirt``.

:func:`detokenize` is Moses' detokeniser plus one rule: a hyphen token between
two tokens that end and start with a letter or digit is joined to both. It is
a function of the output alone, the same for every model. How often it writes
what the text had (docs/evaluation.md): on Multi30k's German training side,
2,415 of the 2,421 hyphens between two word characters (99.75%) have no space
on either side; the 6 others (``Personen - drei``) are dashes between
clauses, which the rule would wrongly join.
"""
from __future__ import annotations

import re
from typing import Iterable, Iterator

#: a hyphen token with a word character on both sides: ``T - Shirt``, ``schwarz - weiß``
IN_WORD_HYPHEN = re.compile(r"(?<=\w) - (?=\w)")


def join_hyphens(line: str) -> str:
    """``T - Shirt`` -> ``T-Shirt`` (see the module docstring)."""
    return IN_WORD_HYPHEN.sub("-", line)


def detokenize(lines: Iterable[str], lang: str) -> Iterator[str]:
    """Moses' detokeniser (sacremoses) for ``lang``, then :func:`join_hyphens`."""
    from sacremoses import MosesDetokenizer

    moses = MosesDetokenizer(lang)
    for line in lines:
        yield join_hyphens(moses.detokenize(line.split()))
