"""Cross-entropy of a parse head's attention against gold parents.

Deguchi et al. (2019) Sec. 3.2: e_parse = CE(A_parse[t, :], head(t)) over the
supervised tokens t. Positions that carry no real token (EOS, padding) are
excluded, and so, on the decoder side, are tokens whose gold parent lies in
the future (masked attention cannot put mass there: Fig. 3, "are ->
explained").

The head's distribution arrives as float32 log-probabilities (a log-softmax
of its masked scores, :class:`~fairseq_syntax.modules.syntax_attention.
SyntaxSelfAttention`), so a gold parent with a probability below fp16's
smallest number still gets a finite loss and a gradient. A row with no
supervised position contributes nothing; unsupervised positions are
selected away (never multiplied: their log-probability may be -inf), so no
NaN reaches the gradient.
"""
from typing import Tuple

import torch
from torch import Tensor

from fairseq_syntax.errors import OptionError


def supervised_positions(parents: Tensor, supervised: Tensor, causal: bool) -> Tensor:
    """Positions whose gold parent the parse head is trained to predict.

    Real tokens only (``supervised``), and with ``causal`` (decoder side) only
    those whose parent is not later than themselves.
    """
    sup = supervised & parents.ge(0)
    if causal:
        pos = torch.arange(parents.size(1), device=parents.device).unsqueeze(0)
        sup = sup & parents.le(pos)
    return sup


def parse_head_nll(logprobs: Tensor, parents: Tensor, supervised: Tensor, causal: bool) -> Tuple[Tensor, Tensor]:
    """(sum of -log A[t, parent(t)] over supervised t, number of supervised t).

    logprobs: (B, T, S) log-attention of the parse head (any float dtype; the
    sum is float32); parents: (B, T) long gold parent positions in the same
    coordinates (-1 at padding); supervised: (B, T) bool. With ``causal``,
    positions whose parent is later than themselves are dropped.
    """
    if parents.is_floating_point():
        raise OptionError("parse heads need integer parents: use --parent-strategy chain or first, not middle")
    sup = supervised_positions(parents, supervised, causal)
    gold = logprobs.float().gather(-1, parents.clamp_min(0).unsqueeze(-1)).squeeze(-1)
    nll = torch.where(sup, -gold, torch.zeros_like(gold))
    return nll.sum(), sup.sum()
