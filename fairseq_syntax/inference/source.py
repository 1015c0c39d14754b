"""Raw text in: a user's sentences made into the input the model was trained on, the parse inside.

:class:`RawSourceEncoder` repeats what the data-bin's preparation did to a language
(:mod:`fairseq_syntax.preparation.databin_record`): sacremoses' normalisation, the recorded parser (one batched call
for all sentences), the parse's surface tokens (or the text's own tokens, or sacremoses' tokens), lowercasing,
the BPE codes or the SentencePiece model, and the alignment of the user's tree to the subwords
(:func:`~fairseq_syntax.data.alignment.subword_align.align_sentence`, or for SentencePiece, which cuts the sentence
itself, :func:`~fairseq_syntax.data.alignment.piece_align.align_sentence_pieces` by character offsets, as in
preparation). The parse comes from the user's words, never from text rebuilt from token ids (where an unknown
character would be ``<unk>`` and the BPE joins lost).

The result is an :class:`EncodedSources`: the token tensors, as fairseq's ``build_dataset_for_inference``
takes them, carrying the aligned syntax with them, so that the task builds the batch's syntax fields from it
(no state kept between calls). An empty line is a defined input: no tokens but EOS, an empty translation.
Errors name the input line (counted over the whole input) and what is wrong.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import List, Optional, Sequence

import numpy as np
import torch

from fairseq_syntax.data.alignment.piece_align import align_sentence_pieces
from fairseq_syntax.data.alignment.subword_align import align_sentence
from fairseq_syntax.errors import InputLineError, SyntaxDataError
from fairseq_syntax.inference.controlled_parser import with_tree_control
from fairseq_syntax.parsing.base import load_parser
from fairseq_syntax.preparation.databin_record import PreparationRecord, parser_options

logger = logging.getLogger(__name__)


@dataclass
class EncodedSource:
    """One input line as the model reads it."""

    line: int  # 1-based number of the line in the whole input
    text: str  # the line as given
    tokens: List[str]  # the text units before BPE (what the parse's forms are)
    bpe: str  # the BPE'd text ("" for an empty line)
    ids: torch.Tensor  # token ids + EOS
    words: Optional[np.ndarray] = None  # per subword: 1-based word index, head word, label id (with syntax)
    heads: Optional[np.ndarray] = None
    labels: Optional[np.ndarray] = None
    tree: Optional[object] = None  # the Sentence the parser gave

    @property
    def empty(self) -> bool:
        return not self.tokens


class EncodedSources(list):
    """The token tensors of encoded lines (a list, as fairseq passes token lists around), with the lines
    themselves in ``.sources``: the task's ``build_dataset_for_inference`` takes their aligned syntax from here."""

    def __init__(self, sources: Sequence[EncodedSource]):
        super().__init__(s.ids for s in sources)
        self.sources = list(sources)


#: characters Python's str.splitlines() breaks lines at, besides \n and \r: inside a line they would join two
#: words (the BPE splits on spaces only)
LINE_SEPARATORS = "\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"


class RawSourceEncoder:
    """Encodes raw lines of language ``lang`` as the data-bin ``data_dir`` was prepared."""

    def __init__(self, record: PreparationRecord, data_dir: str, lang: str, dictionary, label_dict=None,
                 parser: Optional[dict] = None):
        """``parser``: ``{"backend": ..., "options": {...}}`` to parse with instead of the recorded one (the
        task's ``--inference-parser``); the record's tokenisation steps stay."""
        self.data_dir, self.lang = data_dir, lang
        self.spec = record.language(lang, data_dir)
        self.record = record
        if parser is not None:
            from dataclasses import replace

            self.spec = replace(self.spec, parser=parser)
        self.dictionary, self.label_dict = dictionary, label_dict
        self.spm = None  # the SentencePiece model that segments this language, if one does
        model = record.spm_model(lang, data_dir)
        if model is not None:
            from fairseq_syntax.data.alignment.piece_align import load_sentencepiece

            self.spm = load_sentencepiece(model)
        codes = record.bpe_codes(lang, data_dir) if model is None else None
        self.bpe = None
        if codes is not None:
            from subword_nmt.apply_bpe import BPE

            with open(codes, encoding="utf-8") as f:
                self.bpe = BPE(f)
        self._parser = self._normalizer = self._tokenizer = self._tokenizer_only = None
        if self.spec.tokenizer in ("given", "kytea"):
            logger.info(f"{lang}: the training text was given tokenised ({self.spec.tokenizer}): raw input is split "
                        "on whitespace, so give it tokenised as the training text was")
        # where encoding time goes: the parser's calls, a tokenizer's alone, all of it
        self.seconds = {"parse": 0.0, "tokenize": 0.0, "encode": 0.0}

    # --- the steps ------------------------------------------------------------------------------
    def parser(self):
        """The recorded parser, loaded once (a wrong or missing model fails here, with one line)."""
        if self._parser is None:
            if self.spec.parser is None:
                raise SyntaxDataError(f"{self.data_dir}/preparation.json", f"no parser is recorded for {self.lang}: "
                                      "give one (--inference-parser, with its model) to parse raw text")
            backend = self.spec.parser["backend"]
            options = parser_options(self.spec.parser, self.data_dir)
            self._parser = with_tree_control(load_parser(backend, options, f"the {backend} parser of {self.lang} "
                                                         f"(recorded in {self.data_dir}/preparation.json or given)"),
                                             self.record)
        return self._parser

    def normalize(self, line: str) -> str:
        if self.spec.normalize != "moses":
            return line
        if self._normalizer is None:
            from sacremoses import MosesPunctNormalizer

            self._normalizer = MosesPunctNormalizer(self.lang)
        return self._normalizer.normalize(line)

    def _moses_tokens(self, line: str) -> List[str]:
        if self._tokenizer is None:
            from sacremoses import MosesTokenizer

            self._tokenizer = MosesTokenizer(self.lang)
        return self._tokenizer.tokenize(line, aggressive_dash_splits=True, escape=True)

    @property
    def tokenizes_alone(self) -> bool:
        """Whether this side's tokens come from its parser's pipeline and that pipeline's tokenizer alone gives
        them (spaCy: GiNZA), so that text needing no parse is only tokenised."""
        return self.spec.tokenizer == "parser" and (self.spec.parser or {}).get("backend") == "spacy"

    def _tokenize(self, lines: List[str]) -> List[List[str]]:
        """The tokens the recorded parser's pipeline makes of each line, without parsing (spaCy: its tokenizer
        alone, no component loaded; the tokens are those of the full pipeline: docs/inference.md)."""
        import time

        if not self.tokenizes_alone:
            raise SyntaxDataError(f"{self.data_dir}/preparation.json", f"{self.lang}: tokenising without parsing "
                                  "is implemented for spaCy pipelines (GiNZA); this side's tokens were made by "
                                  f"{(self.spec.parser or {}).get('backend')}")
        if self._tokenizer_only is None:
            from fairseq_syntax.parsing.spacy_backend import load_tokenizer_only

            options = parser_options(self.spec.parser, self.data_dir)
            self._tokenizer_only = load_tokenizer_only(options.get("model", "ja_ginza"))
        t0 = time.perf_counter()
        out = self._tokenizer_only(lines)
        self.seconds["tokenize"] += time.perf_counter() - t0
        return out

    def _parse(self, lines: List[str], numbers: List[int]):
        """One tree per line, in one batched call; a failing batch is parsed line by line to name the line."""
        import time

        parser = self.parser()
        t0 = time.perf_counter()
        try:
            trees = parser.parse(lines)
        except Exception:  # which line? parse them one by one
            trees = []
            trees = self._parse_one_by_one(parser, lines, numbers)
        if len(trees) != len(lines):  # which line did the parser split or drop?
            trees = self._parse_one_by_one(parser, lines, numbers)
        self.seconds["parse"] += time.perf_counter() - t0
        for tree, line, n in zip(trees, lines, numbers):
            try:
                parser.check([line], [tree], n, "input line")
            except SyntaxDataError as e:
                raise InputLineError(n, e.what) from None
        return trees

    @staticmethod
    def _parse_one_by_one(parser, lines, numbers):
        trees = []
        for line, n in zip(lines, numbers):
            try:
                tree = parser.parse([line])
            except Exception as e:
                raise InputLineError(n, f"the parser failed on this line: {' '.join(str(e).split())[:300]}") from None
            if len(tree) != 1:
                raise InputLineError(n, f"the parser made {len(tree)} sentences of this line: give one sentence "
                                        "per line")
            trees += tree
        return trees

    def pieces_input(self, line: str, tokens: List[str]) -> str:
        """What SentencePiece reads of a line, as preparation gave it the training text: the text the parser
        read (the normalised line; preparation: each sentence's ``# text``), or the tokens where the side's
        tokeniser is sacremoses', or lowercased them."""
        if self.spec.tokenizer == "moses" or self.spec.lowercase:
            return " ".join(tokens)
        return line

    # --- the whole encoding ---------------------------------------------------------------------
    def encode(self, lines: Sequence[str], first_line: int = 1, with_syntax: bool = True,
               max_positions: Optional[int] = None, tokenize_only: bool = False) -> EncodedSources:
        """The lines (one sentence each, raw text) as the model reads them, with their aligned trees when
        ``with_syntax`` (the model takes the source parse); ``first_line`` numbers the first line; a line longer
        than ``max_positions`` tokens (with EOS, after BPE) is an :class:`InputLineError`. ``tokenize_only``:
        a side whose tokens the parser made gets them from the parser's tokeniser alone (no parse)."""
        import time

        t0 = time.perf_counter()
        spec = self.spec
        texts = [line.rstrip("\r\n") for line in lines]
        numbers = list(range(first_line, first_line + len(texts)))
        for text, n in zip(texts, numbers):
            if "\n" in text or "\r" in text:
                raise InputLineError(n, "holds a line break: give one sentence per line (a list of strings)")
            sep = next((ch for ch in text if ch in LINE_SEPARATORS), None)
            if sep is not None:  # a separator inside a line would join the words around it into one token
                raise InputLineError(n, f"holds a line separator (U+{ord(sep):04X}): give one sentence per line, "
                                     "words separated by spaces")
            bad = next((k for k, ch in enumerate(text) if "\udc80" <= ch <= "\udcff"), None)
            if bad is not None:  # a byte read from stdin that is not UTF-8 (Python's surrogate escape)
                raise InputLineError(n, f"is not UTF-8 (byte 0x{ord(text[bad]) - 0xDC00:02X} at character {bad + 1}): "
                                     "give UTF-8 text")
        prepared = [self.normalize(t.strip()) if t.strip() else "" for t in texts]
        todo = [k for k, t in enumerate(prepared) if t]
        trees = {}
        if self.spm is not None and not (with_syntax and not tokenize_only):
            pass  # SentencePiece cuts the text itself: a tree is the only thing a parser could add
        elif tokenize_only and spec.tokenizer == "parser":
            for k, toks in zip(todo, self._tokenize([prepared[k] for k in todo])):
                trees[k] = toks
        elif spec.tokenizer == "parser" or (with_syntax and todo):
            pretok = spec.parses_given_tokens()
            if spec.tokenizer == "moses" and with_syntax:
                pretok_lines = [" ".join(self._moses_tokens(prepared[k])) for k in todo]
            elif pretok:
                pretok_lines = [" ".join(prepared[k].split()) for k in todo]
            else:
                pretok_lines = [prepared[k] for k in todo]
            if todo:
                for k, tree in zip(todo, self._parse(pretok_lines, [numbers[k] for k in todo])):
                    trees[k] = tree
        out = []
        for k, (text, line) in enumerate(zip(texts, prepared)):
            if not line:
                tokens = []
            elif k in trees:
                tokens = trees[k] if tokenize_only else list(trees[k].forms(spec.units))
            elif spec.tokenizer == "moses":
                tokens = self._moses_tokens(line)
            else:  # given or kytea: the text's whitespace tokens (give KyTea-tokenised text for kytea)
                tokens = line.split()
            if spec.lowercase:
                tokens = [t.lower() for t in tokens]
            joined = " ".join(tokens)
            if self.spm is not None:  # SentencePiece cuts the text as preparation gave it to it
                joined = self.pieces_input(line, tokens) if tokens else ""
                bpe = " ".join(self.spm.encode(joined, out_type=str)) if joined else ""
            else:
                bpe = self.bpe.process_line(joined) if (self.bpe is not None and joined) else joined
            ids = self.dictionary.encode_line(bpe, add_if_not_exist=False, append_eos=True).long()
            unknown = int(ids.eq(self.dictionary.unk()).sum())
            if tokens and unknown * 2 > ids.numel() - 1:
                logger.warning("input line %d: %d of %d tokens are outside the model's vocabulary (another language "
                               "or script?): its translation means little", numbers[k], unknown, ids.numel() - 1)
            if max_positions is not None and ids.numel() > max_positions:
                raise InputLineError(numbers[k], f"{ids.numel()} tokens after BPE (with EOS): the model reads at "
                                                 f"most {max_positions}; split the line")
            src = EncodedSource(numbers[k], text, tokens, bpe, ids)
            if with_syntax and not tokens:  # an empty line: no subwords, no tree
                src.words = src.heads = src.labels = np.zeros(0, dtype=np.int64)
            elif with_syntax:
                tree = trees[k]
                try:
                    if self.spm is not None:
                        w, h, lab, _ = align_sentence_pieces(tree, joined, bpe.split(), self.spm,
                                                             f"input line {numbers[k]}")
                    else:
                        w, h, lab = align_sentence(tree, bpe, f"input line {numbers[k]}", units=spec.units)
                except SyntaxDataError as e:
                    raise InputLineError(numbers[k], e.what) from None
                src.words, src.heads, src.tree = np.asarray(w), np.asarray(h), tree
                if self.label_dict is not None:
                    src.labels = np.asarray([self.label_dict.index(x) for x in lab])
            out.append(src)
        self.seconds["encode"] += time.perf_counter() - t0
        return EncodedSources(out)
