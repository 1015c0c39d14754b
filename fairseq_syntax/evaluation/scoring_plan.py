"""How a target language's output is scored, from how the data-bin's preparation tokenised it: the rules of
``fairseq-syntax-evaluate --data`` (and of the dataset recipes, which score through it).

The model writes the target side's tokens; :class:`fairseq_syntax.inference.target.RecordedText` detokenises
them as the record says, and this module says what sacreBLEU then tokenises and whether RIBES is reported:

* tokens a parser or Moses made (``parser`` / ``moses``): Moses' detokeniser plus in-word hyphens rejoined,
  sacreBLEU's default tokenizer (13a) against the raw reference;
* Japanese / Chinese tokens a parser or KyTea made: the spaces removed, sacreBLEU's ``ja-mecab`` / ``zh``
  tokenizer (the same tokens for every model, whatever its segmentation), RIBES on;
* tokens the corpus came with (``given``, e.g. the Tanaka corpus's English): kept, and BLEU on them
  (sacreBLEU's ``none`` tokenizer), against the corpus's reference, written with the same tokens;
* tokens scored as written (``on_tokens``: WAT's rule, BLEU on the KyTea / Moses tokens the preparation made):
  sacreBLEU's ``none`` tokenizer against the reference tokenised the same way;
* SentencePiece pieces of raw text (a side its parser tokenised): the pieces joined are raw text, scored
  against the raw reference (Japanese / Chinese: with ``ja-mecab`` / ``zh``); pieces of a tokeniser's tokens
  are scored as those tokens are.

RIBES (on BLEU's tokens) is on by default when the pair involves Japanese, Chinese or Korean, the
distant-order pairs WAT scores with it.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Optional

#: languages written without spaces: detokenised by removing them (as RecordedText does), and sacreBLEU's
#: tokenizer for them
UNSPACED_TOKENIZERS = {"ja": "ja-mecab", "zh": "zh"}
#: pairs with one of these are scored with RIBES by default (WAT's metric for distant word orders)
RIBES_LANGUAGES = ("ja", "zh", "ko")


@dataclass(frozen=True)
class ScoringPlan:
    detokenization: str  # what the hypotheses' detokenisation does, in words
    tokenize: Optional[str]  # sacreBLEU's tokenizer (None: its default, 13a)
    ribes: bool
    reference: str  # the reference the scores expect, in words
    removes_spaces: bool = False  # the detokenisation removes every space (a language written without them)


def plan_for(lang: str, tokenizer: str, other_languages: Iterable[str] = (), pieces: bool = False,
             on_tokens: bool = False) -> ScoringPlan:
    """The plan for target language ``lang`` whose tokens the preparation's ``tokenizer`` made (one of
    :data:`fairseq_syntax.preparation.databin_record.TOKENIZERS`); ``pieces``: SentencePiece segmented it;
    ``on_tokens``: BLEU on those tokens as they are written, whatever made them (WAT's rule)."""
    ribes = ribes_by_default((lang, *other_languages))
    if on_tokens:
        return ScoringPlan(f"none (the {tokenizer} tokens, BLEU on them)", "none", ribes,
                           "the reference in the same tokens")
    if pieces and tokenizer == "parser":
        unspaced = UNSPACED_TOKENIZERS.get(lang)
        return ScoringPlan("SentencePiece's pieces joined (raw text)", unspaced, ribes or bool(unspaced),
                           "raw text" + (f", tokenised by sacreBLEU's {unspaced}" if unspaced else ""))
    if lang in UNSPACED_TOKENIZERS and tokenizer in ("parser", "kytea"):
        return ScoringPlan("the spaces removed", UNSPACED_TOKENIZERS[lang], True,
                           f"raw text (no spaces between the words), tokenised by sacreBLEU's "
                           f"{UNSPACED_TOKENIZERS[lang]}", removes_spaces=True)
    if tokenizer in ("parser", "moses"):
        return ScoringPlan(f"Moses' detokeniser ({lang}) and in-word hyphens rejoined", None, ribes, "raw text")
    return ScoringPlan("none (the corpus's own tokens)", "none", ribes,
                       "the corpus's tokenised text (BLEU on its tokens)")


def ribes_by_default(languages: Iterable[str]) -> bool:
    """Whether a pair of these languages is scored with RIBES unless told otherwise."""
    return any(x in RIBES_LANGUAGES for x in languages)


def unchanged_plan(languages: Iterable[str] = ()) -> ScoringPlan:
    """``--detokenize none``: the text as it is, sacreBLEU's default tokenizer; RIBES as for the pair's
    ``languages`` (none known without a data-bin)."""
    return ScoringPlan("none", None, ribes_by_default(languages), "written as the hypotheses are")
