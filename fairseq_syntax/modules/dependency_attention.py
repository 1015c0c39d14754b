"""The bi-affine parse head of dependency-based self-attention (DBSA).

Deguchi, Tamura & Ninomiya (2019), "Dependency-Based Self-Attention for Transformer NMT", Sec. 3.1:

* the parse head has its own projections Q_parse = S W^Q_parse, K_parse = S W^K_parse, V_parse = S W^V_parse
  (Eq. 11-13): here the last head's slice of the layer's q/k/v projections, the same parameterisation;
* A_parse = softmax(Q_parse U1 K_parse^T + Q_parse U2) (Eq. 14), U2 = (u ... u); A_parse[t, q] = P(q = head(t))
  (Eq. 15);
* M_parse = A_parse V_parse replaces one ordinary head (Eq. 16) and the heads are concatenated and projected by
  W^M (Eq. 17): the layer's out_proj.

Two forms of the scores (``--dbsa-bias``, ``--dbsa-scaled``):

* 2019 (Eq. 14), unscaled (the default of the DBSA presets). ``bias="query"`` computes it as printed: its second
  term, Q_parse u, is the same for every key q of a row t, so it cancels in the softmax (u gets a zero
  gradient). ``bias="key"`` uses K_parse u instead, the head-prior term of the deep bi-affine parser the paper
  builds on (Dozat & Manning 2017), which does change the distribution (and is what the authors' released code,
  de9uch1/dbsa, computes).
* 2021 (Deguchi, Tamura & Ninomiya 2021, "Synchronous Syntactic Attention", Eq. 4): softmax(Q U K^T / sqrt(d_k)),
  no bias term: ``bias="none"``, ``scaled=True`` (the default of the SyncAttn presets).

The head is hosted by :class:`fairseq_syntax.modules.syntax_attention.SyntaxSelfAttention`; in the decoder the
causal mask or the incremental cache keeps it future-masked.
"""
import torch
from torch import Tensor, nn

BIASES = ("query", "key", "none")


class BiaffineParseHead(nn.Module):
    """Scores before the softmax: Q U1 K^T + Q U2 (or + K u, or no bias), optionally / sqrt(d_head)."""

    def __init__(self, head_dim: int, bias: str = "query", scaled: bool = False):
        super().__init__()
        if bias not in BIASES:
            raise ValueError(f"bias must be 'query' (2019 Eq. 14 as printed), 'key' or 'none' (2021 Eq. 4), "
                             f"not {bias!r}")
        self.bias = bias
        self.scaling = head_dim ** -0.5 if scaled else 1.0
        self.u1 = nn.Parameter(torch.empty(head_dim, head_dim))
        nn.init.xavier_uniform_(self.u1)
        if bias != "none":
            self.u = nn.Parameter(torch.zeros(head_dim))
        else:
            self.register_parameter("u", None)

    def forward(self, q: Tensor, k: Tensor) -> Tensor:
        """q: (..., T, d_head), k: (..., S, d_head) -> scores (..., T, S), in q's dtype (the attention layer
        gives float32 q and k: the unscaled scores can leave fp16's range); the parameters are cast to it."""
        scores = torch.matmul(torch.matmul(q, self.u1.to(q.dtype)), k.transpose(-1, -2))
        if self.bias == "query":
            scores = scores + torch.matmul(q, self.u.to(q.dtype)).unsqueeze(-1)
        elif self.bias == "key":
            scores = scores + torch.matmul(k, self.u.to(k.dtype)).unsqueeze(-2)
        return scores * self.scaling if self.scaling != 1.0 else scores

