"""One model of a recipe: what train.sh and evaluate.sh do with it (see :mod:`fairseq_syntax.settings`)."""
import shlex
from dataclasses import dataclass
from typing import Optional, Tuple


def options(text: str) -> Tuple[str, ...]:
    """fairseq options written as on a command line (shell quoting honoured), as a tuple of words."""
    return tuple(shlex.split(text))


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

    @property
    def arch(self) -> str:
        return self.train[self.train.index("--arch") + 1]
