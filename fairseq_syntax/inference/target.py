"""Output text as the training text was written: BPE joined, then detokenised by how the data-bin's
preparation tokenised the target language (:mod:`fairseq_syntax.preparation.record`).

* parser / moses tokens: Moses' detokeniser plus in-word hyphens rejoined
  (:func:`fairseq_syntax.evaluation.detokenize.detokenize`), as the recipes score output;
* Japanese (parser or KyTea tokens): the spaces removed (Japanese is written without them);
* given tokens (the corpus was tokenised): kept as tokens.

:class:`RecordedText` has the interface of a fairseq BPE object (``encode`` / ``decode``), so that
``fairseq-interactive`` and the hub interface print detokenised text with no ``--bpe`` option given; its
``encode`` returns the line unchanged: the source side is encoded by :mod:`.source`, from the raw line.
"""
from __future__ import annotations

import re

from fairseq_syntax.evaluation.detokenize import join_hyphens
from fairseq_syntax.preparation.record import PreparationRecord

_BPE = re.compile(r"@@( |$)")


def remove_bpe(line: str) -> str:
    return _BPE.sub("", line.rstrip())


class RecordedText:
    """Detokenise the target language ``lang`` as the record says; ``encode`` leaves input lines as they are."""

    def __init__(self, record: PreparationRecord, data_dir: str, lang: str):
        self.spec = record.language(lang, data_dir)
        self.lang = lang
        self._moses = None

    def encode(self, line: str) -> str:
        return line

    def decode(self, line: str) -> str:
        text = remove_bpe(line)
        tokenizer = self.spec.tokenizer
        if self.lang in ("ja", "zh") and tokenizer in ("parser", "kytea"):
            return text.replace(" ", "")
        if tokenizer in ("parser", "moses"):
            if self._moses is None:
                from sacremoses import MosesDetokenizer

                self._moses = MosesDetokenizer(self.lang)
            return join_hyphens(self._moses.detokenize(text.split()))
        return text

    def is_beginning_of_word(self, x: str) -> bool:
        return not x.endswith("@@")
