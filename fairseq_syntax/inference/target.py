"""Output text as the training text was written: BPE joined (or SentencePiece's pieces), then detokenised by how
the data-bin's preparation tokenised the target language (:mod:`fairseq_syntax.preparation.databin_record`).

* parser / moses tokens: Moses' detokeniser plus in-word hyphens rejoined
  (:func:`fairseq_syntax.evaluation.detokenize.detokenize`), as the recipes score output;
* Japanese (parser or KyTea tokens): the spaces removed (Japanese is written without them);
* given tokens (the corpus was tokenised): kept as tokens;
* SentencePiece: the pieces joined (``▁`` a space, as fairseq's ``--remove-bpe sentencepiece`` joins them) give
  the text SentencePiece read: raw text where the parser tokenised it (nothing more to undo), else the
  tokeniser's tokens, detokenised as above. Text without ``▁`` was joined already (fairseq-generate's
  ``--remove-bpe sentencepiece``) and is not joined again.

:class:`RecordedText` has the interface of a fairseq BPE object (``encode`` / ``decode``), so that
``fairseq-interactive`` and the hub interface print detokenised text with no ``--bpe`` option given. Source
lines never reach its ``encode`` (they are encoded by :mod:`.source`, from the raw line, parse and all);
fairseq-interactive calls it on ``--constraints``, which are target-language text: it segments them as the
target side was (normalisation, tokens, lowercasing, the target's BPE codes), so that a constraint names the
subwords the decoder writes (looked up whole, a word the BPE splits would be ``<unk>``, and the decoder made to
write ``<unk>``).
"""
from __future__ import annotations

import logging
import re

from fairseq_syntax.errors import InputLineError, SyntaxDataError
from fairseq_syntax.evaluation.detokenize import join_hyphens
from fairseq_syntax.preparation.databin_record import PreparationRecord

logger = logging.getLogger(__name__)

_BPE = re.compile(r"@@( |$)")


def remove_bpe(line: str) -> str:
    return _BPE.sub("", line.rstrip())


#: SentencePiece's word-start mark
PIECE_MARK = "\u2581"


def join_pieces(line: str) -> str:
    """SentencePiece's pieces joined into text (fairseq's ``--remove-bpe sentencepiece``); text without a piece
    mark is returned as it is (joined already)."""
    if PIECE_MARK not in line:
        return line.strip()
    return line.replace(" ", "").replace(PIECE_MARK, " ").strip()


class RecordedText:
    """Detokenise the target language ``lang`` as the record says; ``encode`` segments target-language text
    (fairseq-interactive's constraints) as the target side was, into the subwords of ``dictionary``."""

    def __init__(self, record: PreparationRecord, data_dir: str, lang: str, dictionary=None):
        self.record, self.data_dir, self.dictionary = record, data_dir, dictionary
        self.spec = record.language(lang, data_dir)
        self.lang = lang
        self._moses = None
        self._encoder = None

    def encode(self, line: str) -> str:
        """A constraint (target-language text) as the target side's subwords, space-separated."""
        if self.dictionary is None:
            raise ValueError("RecordedText.encode needs the target dictionary")
        if self._encoder is None:
            from fairseq_syntax.inference.source import RawSourceEncoder

            self._encoder = RawSourceEncoder(self.record, self.data_dir, self.lang, self.dictionary)
        try:
            encoded = self._encoder.encode([line], with_syntax=False, tokenize_only=self._encoder.tokenizes_alone)
        except InputLineError as e:
            raise SyntaxDataError("--constraints", f"the constraint {line.strip()!r}: {e.what}") from None
        source = encoded.sources[0]
        unknown = [w for w in source.bpe.split() if self.dictionary.index(w) == self.dictionary.unk()]
        if unknown:
            logger.warning("the constraint %r: %s outside the target vocabulary: the decoder is made to write <unk>",
                           line.strip(), " ".join(unknown))
        return source.bpe

    def decode(self, line: str) -> str:
        tokenizer = self.spec.tokenizer
        if (self.record.spm or {}).get(self.lang) is not None:
            text = join_pieces(line)
            if tokenizer == "parser":  # SentencePiece cut the raw text: joined, it is raw text again
                return text
        else:
            text = remove_bpe(line)
        if self.lang in ("ja", "zh") and tokenizer in ("parser", "kytea"):
            return text.replace(" ", "")
        if tokenizer in ("parser", "moses"):
            if self._moses is None:
                from sacremoses import MosesDetokenizer

                self._moses = MosesDetokenizer(self.lang)
            return join_hyphens(self._moses.detokenize(text.split()))
        return text

    def is_beginning_of_word(self, x: str) -> bool:
        if (self.record.spm or {}).get(self.lang) is not None:
            return x.startswith(PIECE_MARK)
        return not x.endswith("@@")
