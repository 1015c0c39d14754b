"""The ``syntax_translation`` task's options (:class:`SyntaxTranslationConfig`) and the reading of its
``--source-syntax`` / ``--target-syntax`` field lists."""
from dataclasses import dataclass, field
from typing import Optional

from fairseq.dataclass import ChoiceEnum
from fairseq.tasks.translation import TranslationConfig

from fairseq_syntax.data.alignment.parent_strategies import STRATEGIES
from fairseq_syntax.data.datasets.syntax_request import SIDE_FIELDS
from fairseq_syntax.errors import OptionError

_FIELDS_HELP = (
    "comma list of syntax fields to collate for this side: "
    + ",".join(SIDE_FIELDS)
    + "; 'none'; or 'auto' = what the model asks for (default)"
)


@dataclass
class SyntaxTranslationConfig(TranslationConfig):
    parent_strategy: ChoiceEnum(("auto",) + STRATEGIES) = field(
        default="auto",
        metadata={
            "help": "how a word's head becomes a subword parent: chain (DBSA: next subword, word-final "
            "subword -> head's first subword), middle (PASCAL: mean position of the head's subwords), "
            "first (SISA: head's first subword); auto (default) = the model's preset, else chain"
        },
    )
    source_syntax: str = field(default="auto", metadata={"help": "source side: " + _FIELDS_HELP})
    target_syntax: str = field(default="auto", metadata={"help": "target side: " + _FIELDS_HELP})
    inference_parser: ChoiceEnum(("auto", "self", "stanza", "spacy", "udpipe", "conllu")) = field(
        default="auto",
        metadata={
            "help": "parser for sentences decoded without syntax data when the model needs the source parse "
            "(PASCAL, S&H labels, dependency relative positions): auto (default): raw text is encoded as the "
            "data-bin's preparation.json says (its normalisation, parser and BPE: fairseq-interactive needs no "
            "--bpe), and token input is parsed by that record's parser (stanza without a record); self: no "
            "parser, a self-parsing model (--self-parse) reads its own parse head's tree (a tree in the data is "
            "not used; raw text is only tokenised); or stanza, spacy (e.g. GiNZA), udpipe, conllu (look each "
            "sentence up in the CoNLL-U file --inference-parser-model) for token input"
        },
    )
    max_skipped_fraction: float = field(
        default=0.05,
        metadata={"help": "refuse to train when more than this share of a split's sentence pairs is longer than "
                  "--max-source-positions / --max-target-positions (fairseq leaves them out; the count is logged "
                  "either way); default 0.05"},
    )
    inference_parser_lang: Optional[str] = field(
        default=None, metadata={"help": "stanza language code for --inference-parser (default: the source language)"}
    )
    inference_parser_model: Optional[str] = field(
        default=None,
        metadata={
            "help": "stanza: model directory; spacy: pipeline name or path; udpipe: .udpipe model file; "
            "conllu: the CoNLL-U file to look sentences up in"
        },
    )


def parse_fields(value: Optional[str], option: str):
    """The fields of a --source-syntax / --target-syntax value: None for 'auto', a set otherwise."""
    if value is None or value == "auto":
        return None
    if value in ("", "none"):
        return frozenset()
    fields = frozenset(x.strip() for x in value.split(",") if x.strip())
    bad = fields - set(SIDE_FIELDS)
    if bad:
        raise OptionError(f"--{option}: unknown field(s) {sorted(bad)}; choose from {','.join(SIDE_FIELDS)}")
    return fields
