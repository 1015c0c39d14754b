"""One model of a recipe: what train.sh and evaluate.sh do with it (see :mod:`fairseq_syntax.settings`)."""
import shlex
from dataclasses import dataclass
from typing import Dict, Optional, Tuple


def options(text: str) -> Tuple[str, ...]:
    """fairseq options written as on a command line (shell quoting honoured), as a tuple of words."""
    return tuple(shlex.split(text))


def with_values(train: Tuple[str, ...], values: Dict[str, str]) -> Tuple[str, ...]:
    """``train`` with each option of ``values`` given that value in its place; an option ``train`` does not hold
    is an error (a table that changed under the model built from it)."""
    words = list(train)
    for option, value in values.items():
        if option not in words[:-1]:
            raise ValueError(f"{option} is not among the options {' '.join(train)}")
        words[words.index(option) + 1] = value
    return tuple(words)


@dataclass(frozen=True)
class ModelSettings:
    data: str  # the data variant (one of the dataset recipe's variants) it trains and decodes on
    batch: str  # tokens:N or sentences:N per update (split over GPUs and --update-freq by the recipe)
    train: Tuple[str, ...]  # fairseq-train options (the paper's settings), --arch first
    task: str = "syntax_translation"
    decode: Tuple[str, ...] = ("--beam", "4", "--lenpen", "0.6")  # fairseq-generate's search options
    baseline: str = "transformer"  # the paired bootstrap's baseline (itself: it is a baseline)
    also_against: Tuple[str, ...] = ()  # the paper's other baselines: evaluate.sh scores against each too
    checkpoint_of: Optional[str] = None  # another way to decode that model's checkpoint: nothing to train
    starts_from: Optional[str] = None  # fine-tunes that model's best checkpoint (--finetune-from-model)

    @property
    def arch(self) -> str:
        return self.train[self.train.index("--arch") + 1]
