"""The options of ``fairseq-syntax-prepare``, typed: one :class:`PrepareOptions`, built once from the command line
(:meth:`PrepareOptions.from_namespace`) with the parser's defaults (a test holds them equal), handed to every
step. A side's options (its parser, parser model, tokenizer, normalisation and SentencePiece model, each the
side's own option or else the option for both) are :meth:`PrepareOptions.side`'s :class:`SideOptions`.

What the run itself learns about its input is kept here too, set by the steps that learn it: the text files'
digests a ``--text-record`` lists (``text_digests``, ``text_record_digest``; :mod:`.record_step`)."""
from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Dict, Optional

SIDES = ("source", "target")


@dataclass(frozen=True)
class SideOptions:
    """One side's options: ``--parser-SIDE`` (else ``--parser``; None: no parser named), ``--parser-model-SIDE``,
    ``--tokenizer-SIDE``, ``--normalize-SIDE`` and ``--spm-model-SIDE`` (else ``--spm-model``)."""

    parser: Optional[str]
    parser_model: Optional[str]
    tokenizer: str
    normalize: str
    spm_model: Optional[str]

    @property
    def parser_named(self) -> bool:
        """--parser-SIDE or --parser was given (not the default)."""
        return self.parser is not None


@dataclass
class PrepareOptions:
    source_lang: str
    target_lang: str
    trainpref: str
    validpref: Optional[str] = None
    testpref: Optional[str] = None
    destdir: Optional[str] = None
    overwrite: bool = False
    workdir: Optional[str] = None
    syntax: str = "source,target"
    parser: Optional[str] = None
    parser_source: Optional[str] = None
    parser_target: Optional[str] = None
    parser_model_source: Optional[str] = None
    parser_model_target: Optional[str] = None
    stanza_dir: Optional[str] = None
    gpu: bool = False
    pretokenized: str = ""
    normalize_source: str = "none"
    tokenizer_source: str = "auto"
    normalize_target: str = "none"
    tokenizer_target: str = "auto"
    units: str = "surface"
    bpe_merges: Optional[int] = None
    spm_vocab_size: int = 0
    spm_model: Optional[str] = None
    spm_model_source: Optional[str] = None
    spm_model_target: Optional[str] = None
    spm_model_type: str = "unigram"
    spm_character_coverage: float = 0.9995
    srcdict: Optional[str] = None
    tgtdict: Optional[str] = None
    allow_unk_rate: float = 0.03
    bpe_sample: int = 0
    separate_bpe: bool = False
    train_first: int = 0
    max_words: int = 0
    max_ratio: float = 0.0
    lang_filter: Optional[str] = None
    lowercase: bool = False
    tree_control: Optional[str] = None
    tree_control_seed: int = 1
    workers: int = 1
    shard: Optional[str] = None
    chunk_size: int = 2048
    preprocess_args: str = ""
    record_only: bool = False
    text_only: bool = False
    text_record: Optional[str] = None
    no_progress: bool = False
    # what the run learns (module docstring), not options: destdir keeps them out of the data-bin's key
    text_digests: Optional[dict] = None
    text_record_digest: Optional[str] = None

    @classmethod
    def from_namespace(cls, namespace) -> "PrepareOptions":
        """The options of a parsed command line (``get_parser().parse_args``); a name the class does not know is
        an error, so that an option added to the parser cannot be silently left out here."""
        given: Dict[str, object] = dict(vars(namespace))
        unknown = sorted(set(given) - {f.name for f in fields(cls)})
        if unknown:
            raise TypeError(f"PrepareOptions has no field for {', '.join(unknown)}: add it (and its default)")
        return cls(**given)

    def side(self, side: str) -> SideOptions:
        if side not in SIDES:
            raise ValueError(f"side is source or target, not {side!r}")
        if side == "source":
            return SideOptions(self.parser_source or self.parser, self.parser_model_source, self.tokenizer_source,
                               self.normalize_source, self.spm_model_source or self.spm_model)
        return SideOptions(self.parser_target or self.parser, self.parser_model_target, self.tokenizer_target,
                           self.normalize_target, self.spm_model_target or self.spm_model)

    @property
    def uses_sentencepiece(self) -> bool:
        """A SentencePiece model is learned (``--spm-vocab-size``) or given (``--spm-model[-SIDE]``)."""
        return bool(self.spm_vocab_size or self.spm_model or self.spm_model_source or self.spm_model_target)
