"""CoNLL-U reading and writing, with the word/token distinction made explicit.

CoNLL-U (https://universaldependencies.org/format.html) describes each
sentence by *syntactic words* (integer IDs 1..n, HEAD 1-based, 0 = root).
Two kinds of extra line are real and must be handled (docs/design.md, "Index
conventions"):

* multiword-token ranges such as ``26-27  am`` whose surface token covers the
  syntactic words ``an dem``;
* empty nodes such as ``8.1`` (enhanced dependencies only), which are not part
  of the basic tree and not part of the surface text.

:class:`Sentence` keeps both views: ``words`` (the tree's nodes) and
``tokens`` (the surface tokenisation) with ``token_of_word`` mapping between
them. Every malformed line raises :class:`~fairseq_syntax.errors.SyntaxDataError`
naming file and line.
"""
from __future__ import annotations

import re
from typing import Iterable, Iterator, List, Optional, Sequence, TextIO

from fairseq_syntax.data.trees.tree import check_tree
from fairseq_syntax.errors import SyntaxDataError
from fairseq_syntax.text_reading import open_text

#: A FORM may contain spaces in CoNLL-U ("parce que" in French PUD). The
#: whitespace-tokenised text that BPE and fairseq see cannot, so internal
#: whitespace is written as this character, in the text and in comparisons.
SPACE_IN_FORM = "_"
_WS = re.compile(r"\s+")


def normalize_form(form: str) -> str:
    """Return ``form`` with internal whitespace replaced by SPACE_IN_FORM."""
    if " " in form or "\t" in form or "\u00a0" in form or _WS.search(form):
        return _WS.sub(SPACE_IN_FORM, form.strip()) or SPACE_IN_FORM
    return form


class Sentence:
    """One dependency-parsed sentence.

    Attributes:
        words: syntactic word forms, index i is word ID i+1.
        heads: HEAD of each word (1-based word ID, 0 = root).
        labels: DEPREL of each word.
        tokens: surface tokens (multiword tokens as one token).
        token_of_word: for each word, the 0-based index of its surface token.
        line: 1-based line number of the sentence's first line (0 if built
            in memory), used in error messages.
        word_lines: 1-based line number of each word line (empty if built in
            memory).
    """

    __slots__ = ("words", "heads", "labels", "tokens", "token_of_word", "line", "word_lines", "comments")

    def __init__(self, words, heads, labels, tokens=None, token_of_word=None, line=0, word_lines=None, comments=None):
        self.words = list(words)
        self.heads = list(heads)
        self.labels = list(labels)
        if tokens is None:
            tokens = list(self.words)
            token_of_word = list(range(len(self.words)))
        self.tokens = list(tokens)
        self.token_of_word = list(token_of_word)
        self.line = line
        self.word_lines = list(word_lines or [])
        self.comments = list(comments or [])

    def __len__(self) -> int:
        return len(self.words)

    def __repr__(self) -> str:
        return f"Sentence(words={self.words!r}, heads={self.heads!r})"

    def has_multiword_tokens(self) -> bool:
        return len(self.tokens) != len(self.words)

    def forms(self, units: str) -> List[str]:
        """The text units: ``surface`` tokens (``zum``) or syntactic ``words`` (``zu dem``)."""
        if units == "surface":
            return self.tokens
        if units == "words":
            return self.words
        raise ValueError(f"units must be 'surface' or 'words', not {units!r}")


def _fail(path: str, lineno: int, what: str):
    raise SyntaxDataError(f"{path}:{lineno}", what)


def read_conllu(source, path: Optional[str] = None, first_line: int = 1, first_sentence: int = 0) -> Iterator[Sentence]:
    """Yield the sentences of a CoNLL-U file (path, open text stream or any iterable of lines).

    Checks the word IDs (1..n in order), integer HEADs in range, the
    multiword-token ranges, and the tree itself (exactly one root, no cycle;
    see :func:`fairseq_syntax.data.trees.tree.check_tree`). ``first_line`` and
    ``first_sentence`` number the lines and sentences of a piece of a file
    that starts after a blank line (:mod:`fairseq_syntax.data.trees.conllu_blocks`),
    so that messages name the file's own line.
    """

    if isinstance(source, (str, bytes)) or hasattr(source, "__fspath__"):
        path = str(source) if path is None else path
        with open_text(source) as fh:
            yield from read_conllu(fh, path, first_line, first_sentence)
        return
    path = path or getattr(source, "name", "<conllu>")
    words: List[str] = []
    heads: List[int] = []
    labels: List[str] = []
    tokens: List[str] = []
    token_of_word: List[int] = []
    word_lines: List[int] = []
    comments: List[str] = []
    mwt_end = 0  # last word ID covered by the open multiword token
    start = 0
    lineno = first_line - 1
    sent_index = first_sentence

    def finish():
        nonlocal words, heads, labels, tokens, token_of_word, word_lines, comments, mwt_end, sent_index
        if mwt_end > len(words):
            _fail(path, lineno, f"multiword token range ends at word {mwt_end} but the sentence has {len(words)} words")
        for i, h in enumerate(heads):
            if h > len(words):
                _fail(path, word_lines[i], f"HEAD {h} is out of range: the sentence has {len(words)} words")
        sent = Sentence(words, heads, labels, tokens, token_of_word, start, word_lines, comments)
        check_tree(heads, f"{path}:{start} (sentence {sent_index + 1})")
        sent_index += 1
        words, heads, labels, tokens, token_of_word, word_lines, comments = [], [], [], [], [], [], []
        mwt_end = 0
        return sent

    for lineno, line in enumerate(source, first_line):
        c0 = line[:1]
        if c0.isdigit():  # the common case: a word line
            cols = line.split("\t")
            if len(cols) != 10:
                _fail(path, lineno, f"expected 10 tab-separated columns, found {len(cols)}")
            if not tokens and not comments:  # a multiword-token range line may come first
                start = lineno
            wid = cols[0]
            if not wid.isdigit():
                if "-" in wid:
                    a, _, b = wid.partition("-")
                    if not (a.isdigit() and b.isdigit()):
                        _fail(path, lineno, f"bad multiword token range ID {wid!r}")
                    a, b = int(a), int(b)
                    if a != len(words) + 1 or b <= a or a <= mwt_end:
                        _fail(path, lineno, f"multiword token range {wid} must span at least two words, starting "
                              f"at the next word ID {len(words) + 1}, and not overlap the previous range")
                    tokens.append(normalize_form(cols[1]))
                    mwt_end = b
                    continue
                if "." in wid:
                    continue  # empty node: enhanced graph only, not in the basic tree
                _fail(path, lineno, f"ID {wid!r} is not an integer")
            n = len(words) + 1
            if int(wid) != n:
                _fail(path, lineno, f"word ID {wid} out of order: expected {n}")
            head = cols[6]
            if not head.isdigit():
                _fail(path, lineno, f"HEAD {head!r} is not a non-negative integer")
            form = cols[1]
            if " " in form or not form.isprintable():
                form = normalize_form(form)
            words.append(form)
            heads.append(int(head))
            labels.append(cols[7])
            word_lines.append(lineno)
            if n > mwt_end:
                tokens.append(form)
            token_of_word.append(len(tokens) - 1)
            continue
        if c0 == "#":
            if not words:
                if not comments:
                    start = lineno
                comments.append(line.rstrip("\r\n"))
            continue
        if not line.strip():
            if words:
                yield finish()
            elif tokens:
                _fail(path, lineno, f"multiword token range ends at word {mwt_end} but the sentence has no words")
            elif comments:
                comments = []
            continue
        _fail(path, lineno, "expected a word line (10 tab-separated columns), a comment or an empty line")
    if words:
        yield finish()
    elif tokens:
        _fail(path, lineno, f"multiword token range ends at word {mwt_end} but the sentence has no words")


def write_conllu(sentences: Iterable[Sentence], out: TextIO) -> int:
    """Write sentences as CoNLL-U (multiword tokens as range lines).

    Columns that the parsers here do not fill are ``_``. Returns the number
    of sentences written.
    """
    count = 0
    for sent in sentences:
        for c in sent.comments:
            out.write(c + "\n")
        tok_first_word = {}
        for w, t in enumerate(sent.token_of_word):
            tok_first_word.setdefault(t, []).append(w)
        for w in range(len(sent.words)):
            t = sent.token_of_word[w]
            span = tok_first_word[t]
            if len(span) > 1 and span[0] == w:
                out.write(f"{w + 1}-{span[-1] + 1}\t{sent.tokens[t]}\t_\t_\t_\t_\t_\t_\t_\t_\n")
            out.write(
                f"{w + 1}\t{sent.words[w]}\t_\t_\t_\t_\t{sent.heads[w]}\t{sent.labels[w] or '_'}\t_\t_\n"
            )
        out.write("\n")
        count += 1
    return count


def sentence_from_heads(words: Sequence[str], heads: Sequence[int], labels: Optional[Sequence[str]] = None) -> Sentence:
    """Build a :class:`Sentence` in memory (tests, synthetic data)."""
    return Sentence(words, heads, labels if labels is not None else ["dep"] * len(words))


def sentence_blocks(path: str):
    """The sentences of a CoNLL-U file as text blocks (comment lines included, each block ending in its empty
    line), without parsing them: the one splitter of CoNLL-U text into sentences (a block is what
    :func:`read_conllu` reads as one sentence)."""
    from fairseq_syntax.text_reading import open_text

    block = []
    with open_text(path) as f:
        for line in f:
            if line.strip():
                block.append(line)
            elif block:
                yield "".join(block) + "\n"
                block = []
    if block:
        yield "".join(block) + "\n"
