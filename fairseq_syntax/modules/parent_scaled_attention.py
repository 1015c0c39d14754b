"""Parent-scaled self-attention heads (PASCAL).

Bugliarello & Okazaki (2020), "Improving Neural Machine Translation with
Parent-Scaled Self-Attention", Sec. "Parent-Scaled Self-Attention":

* S^h = Q^h K^h^T / sqrt(d) (Eq. 4);
* n^h_tj = s^h_tj d^p_tj (Eq. 5): the scores of token t are multiplied by
  the proximity of every token j to t's dependency parent p_t;
* d^p_tj = f_N(j | p_t, sigma^2) = exp(-(j - p_t)^2 / (2 sigma^2)) /
  sqrt(2 pi sigma^2) (Eq. 6), p_t the *middle* position of the parent word's
  subwords (may be x.5; the root word's parent is itself);
* then masking, softmax and the values, as in any head.

``num_heads`` of a layer's H heads are parent-scaled: the first ones (a
DBSA parse head, if the layer also has one, is the last). D^p does not
depend on the head, so it is built once per layer call as a (B, T, S)
tensor on the model's device from the collated parents (batch coordinates:
left padding shifts p_t and j alike) and broadcast over the scaled heads.

**Parent-only** weights (the paper's Table 7b, ``weights="parent-only"``):
d^p_tj = 1 where |j - p_t| < 1 and 0 elsewhere: the parent's position (both
middle subwords when p_t is x.5), as the authors' code computes its uniform
window (e-bug/pascal, ``unipdf`` with window 0).

**Parent ignoring** (regularisation): in training, each row d_t of D^p is set
to ones with probability q (per sentence and token, shared by the heads);
never at inference.
"""
import math

import torch
from torch import Tensor, nn

from fairseq_syntax.errors import OptionError

WEIGHT_FUNCTIONS = ("gaussian", "parent-only")


def parent_only(parents: Tensor, src_len: int) -> Tensor:
    """(B, T) parent positions -> (B, T, S): 1 where |j - p_t| < 1, else 0 (Table 7b's parent-only)."""
    j = torch.arange(src_len, device=parents.device, dtype=torch.float32)
    diff = j.view(1, 1, -1) - parents.to(torch.float32).unsqueeze(-1)
    return (diff.abs() < 1.0).to(torch.float32)


def parent_gaussian(parents: Tensor, src_len: int, variance: float) -> Tensor:
    """D^p: (B, T) parent positions -> (B, T, S) densities N(j | p_t, sigma^2), j = 0..S-1 (Eq. 6)."""
    j = torch.arange(src_len, device=parents.device, dtype=torch.float32)
    diff = j.view(1, 1, -1) - parents.to(torch.float32).unsqueeze(-1)
    return torch.exp(diff.square() / (-2.0 * variance)) / math.sqrt(2.0 * math.pi * variance)


class ParentScaledHeads(nn.Module):
    """Multiplies the scores of the first ``num_heads`` heads by D^p (parameter-free)."""

    def __init__(self, num_heads: int, variance: float = 1.0, ignore_prob: float = 0.0,
                 weights: str = "gaussian"):
        super().__init__()
        if weights not in WEIGHT_FUNCTIONS:
            raise OptionError(f"--pascal-weights: the parent weights must be one of {WEIGHT_FUNCTIONS}, not {weights!r}")
        self.weight_function = weights
        if num_heads < 1:
            raise OptionError(f"--pascal-heads: the number of parent-scaled heads must be >= 1, not {num_heads}")
        if variance <= 0:
            raise OptionError(f"--pascal-variance: the Gaussian variance must be > 0, not {variance}")
        if not 0.0 <= ignore_prob < 1.0:
            raise OptionError(f"--pascal-ignore-prob: the parent-ignoring probability must be in [0, 1), not {ignore_prob}")
        self.num_heads = num_heads
        self.variance = variance
        self.ignore_prob = ignore_prob

    def weights(self, parents: Tensor, src_len: int) -> Tensor:
        """D^p for a batch, with parent ignoring in training mode."""
        if self.weight_function == "gaussian":
            d = parent_gaussian(parents, src_len, self.variance)
        else:
            d = parent_only(parents, src_len)
        if self.training and self.ignore_prob > 0:
            ignore = torch.rand(d.shape[:2], device=d.device) < self.ignore_prob
            d = d.masked_fill(ignore.unsqueeze(-1), 1.0)
        return d

    def scale(self, scores: Tensor, weights: Tensor) -> Tensor:
        """scores (B, H', T, S) with H' >= num_heads -> the first num_heads rows multiplied by D^p (Eq. 5)."""
        h = self.num_heads
        scaled = scores[:, :h] * weights.unsqueeze(1).to(scores.dtype)
        if h == scores.size(1):
            return scaled
        return torch.cat([scaled, scores[:, h:]], dim=1)
