"""Where each of a parser's words lies in the raw sentence it parsed: character offsets.

SentencePiece cuts the raw sentence, not the parser's tokens, so its pieces are aligned to the tree through
character offsets into that sentence (:mod:`.piece_align`). A parser's words are usually substrings of the raw
text in order, whitespace between them; some tokenisers re-write them (Moses escapes ``&apos;``, CoNLL-U forms
with a space in them are written ``parce_que`` here, a parser may give a compatibility form such as ``A`` for a
full-width ``Ａ``). :func:`locate_tokens` finds each word after the previous one, trying in turn the form as it
is, its whitespace as written in the raw text, its Moses escapes undone, and its Unicode compatibility (NFKC) form
against the raw text's; a word found by none of them is a :class:`WordNotFound` naming the word and the character
where it was looked for.
"""
from __future__ import annotations

import re
import unicodedata
from typing import List, Sequence, Tuple

from fairseq_syntax.data.trees.conllu import SPACE_IN_FORM

#: sacremoses' escapes (``escape=True``), undone
MOSES_ESCAPES = {"&amp;": "&", "&#124;": "|", "&lt;": "<", "&gt;": ">", "&apos;": "'", "&quot;": '"',
                 "&#91;": "[", "&#93;": "]"}
_ESCAPE = re.compile("|".join(map(re.escape, MOSES_ESCAPES)))


class WordNotFound(ValueError):
    """Token ``index`` (0-based) of a sentence is not in its raw text at character ``at``."""

    def __init__(self, index: int, form: str, at: int, raw: str):
        self.index, self.form, self.at, self.raw = index, form, at, raw
        super().__init__(f"the parser's word {form!r} (token {index + 1}) is not in the raw sentence at character "
                         f"{at + 1} (which reads {raw[at:at + 24]!r})")


def unescape_moses(form: str) -> str:
    return _ESCAPE.sub(lambda m: MOSES_ESCAPES[m.group(0)], form) if "&" in form else form


def _skippable(ch: str) -> bool:
    """Characters a parser may leave out between words: whitespace, and controls and format characters."""
    return ch.isspace() or unicodedata.category(ch) in ("Cc", "Cf")


def _match_at(raw: str, pos: int, form: str):
    """The end of ``form`` read in ``raw`` from ``pos``, or None."""
    if raw.startswith(form, pos):
        return pos + len(form)
    if SPACE_IN_FORM in form:  # a FORM with a space in it, written with SPACE_IN_FORM (conllu.py)
        pattern = r"(?:\s+|_)".join(re.escape(part) for part in form.split(SPACE_IN_FORM))
        m = re.compile(pattern).match(raw, pos)
        if m and m.end() > pos:
            return m.end()
    plain = unescape_moses(form)
    if plain != form and raw.startswith(plain, pos):
        return pos + len(plain)
    target = unicodedata.normalize("NFKC", plain)
    # the shortest stretch of raw text whose compatibility form is the word's (NFKC may join or split characters)
    for end in range(pos + 1, min(len(raw), pos + 4 * len(target) + 4) + 1):
        seen = unicodedata.normalize("NFKC", raw[pos:end])
        if seen == target:
            return end
        if len(seen) > len(target) + 2:
            break
    return None


def locate_tokens(raw: str, tokens: Sequence[str]) -> Tuple[List[int], List[int]]:
    """The character span ``[start, end)`` in ``raw`` of each token, in order; :class:`WordNotFound` for the first
    token that is not where the previous one ended (skippable characters aside)."""
    starts: List[int] = []
    ends: List[int] = []
    pos, n = 0, len(raw)
    for k, form in enumerate(tokens):
        while pos < n and raw[pos].isspace():
            pos += 1
        end = _match_at(raw, pos, form)
        if end is None:
            skipped = pos
            while skipped < n and _skippable(raw[skipped]):
                skipped += 1
            end = _match_at(raw, skipped, form) if skipped > pos else None
            if end is None:
                raise WordNotFound(k, form, pos, raw)
            pos = skipped
        starts.append(pos)
        ends.append(end)
        pos = end
    return starts, ends
