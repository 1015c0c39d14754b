"""A recipe's batch per update (``tokens:N`` or ``sentences:N``) split over GPUs: the per-GPU batch and the
``--update-freq`` that make it, as a recipe passes them to fairseq-train.

``tokens:N`` on G GPUs with at most M tokens per GPU batch (``--max-tokens``, a memory cap; the recipe's
MAX_TOKENS, 4096 by default): ``--update-freq`` u = ceil(N / (G M)), the fewest accumulated batches that reach
N, and ``--max-tokens`` ceil(N / (G u)) (at most M), the smallest per-GPU batch that reaches N with u; an update
then holds G u ceil(N / (G u)) tokens: N exactly when G u divides N, else fewer than G u tokens over. Given as
MAX_TOKENS, that ``--max-tokens`` makes the runner pass the same ``--update-freq``. ``sentences:N``:
``--batch-size`` ceil(N / G) and ``--update-freq 1``, G ceil(N / G) sentences (N when G divides N).

fairseq's ``--max-tokens`` counts a batch's padded length times its sentences, so N tokens is a cap per update,
as in the papers' fairseq runs.
"""
from dataclasses import dataclass

from fairseq_syntax.errors import OptionError


@dataclass(frozen=True)
class GpuBatch:
    kind: str  # tokens | sentences
    wanted: int  # the recipe's batch per update
    gpus: int
    per_gpu: int  # --max-tokens (tokens) or --batch-size (sentences) of each GPU's batch
    update_freq: int

    @property
    def per_update(self) -> int:
        return self.gpus * self.update_freq * self.per_gpu

    @property
    def options(self) -> str:
        flag = "--max-tokens" if self.kind == "tokens" else "--batch-size"
        return f"{flag} {self.per_gpu} --update-freq {self.update_freq}"

    def describe(self) -> str:
        """``G x u x b = T tokens``, and by how much and why T is not the recipe's batch when it is not."""
        text = f"{self.gpus} x {self.update_freq} x {self.per_gpu} = {self.per_update} {self.kind}"
        if self.per_update != self.wanted:
            by = self.gpus * self.update_freq
            text += (f" ({self.per_update - self.wanted} over {self.wanted}: "
                     f"{self.gpus} GPUs x update-freq {self.update_freq} = {by} does not divide {self.wanted})")
        return text


def split_batch(batch: str, gpus: int, max_tokens: int = 4096) -> GpuBatch:
    """The per-GPU batch and --update-freq making ``batch`` (``tokens:N`` | ``sentences:N``) on ``gpus`` GPUs."""
    kind, _, n = batch.partition(":")
    if kind not in ("tokens", "sentences") or not n.isdigit() or int(n) < 1:
        raise OptionError(f"batch {batch!r}: tokens:N or sentences:N")
    if gpus < 1:
        raise OptionError(f"--gpus {gpus}: give a number of GPUs of 1 or more")
    if max_tokens < 1:
        raise OptionError(f"--max-tokens {max_tokens}: give a number of tokens of 1 or more")
    n = int(n)
    if kind == "sentences":
        return GpuBatch(kind, n, gpus, -(-n // gpus), 1)
    update_freq = -(-n // (gpus * max_tokens))
    return GpuBatch(kind, n, gpus, -(-n // (gpus * update_freq)), update_freq)
