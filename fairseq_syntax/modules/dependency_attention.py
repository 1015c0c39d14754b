"""Multi-head self-attention whose last head is a bi-affine dependency parser.

Deguchi, Tamura & Ninomiya (2019), "Dependency-Based Self-Attention for
Transformer NMT", Sec. 3.1:

* the parse head has its own projections Q_parse = S W^Q_parse,
  K_parse = S W^K_parse, V_parse = S W^V_parse (Eq. 11-13): here they are the
  last head's slice of the layer's q/k/v projections, which is the same
  parameterisation;
* A_parse = softmax(Q_parse U1 K_parse^T + Q_parse U2) (Eq. 14), U2 = (u ... u);
  A_parse[t, q] = P(q = head(t)) (Eq. 15);
* M_parse = A_parse V_parse replaces one ordinary head (Eq. 16) and the heads
  are concatenated and projected by W^M (Eq. 17): the layer's out_proj.

``bias="query"`` computes Eq. 14 as printed. Its second term, Q_parse u, is
the same for every key q of a row t, so it cancels in the softmax (the
parameter u gets a zero gradient). ``bias="key"`` uses K_parse u instead, the
head-prior term of the deep bi-affine parser the paper builds on (Dozat &
Manning 2017), which does change the distribution.

The parse head's scores are not scaled by 1/sqrt(d_head) (Eq. 14 has no
scaling); ordinary heads are scaled as usual. In the decoder the layer gets
fairseq's causal ``attn_mask`` (training) or attends to the cached prefix
(incremental decoding), so the parse head is future-masked either way.
After every forward, ``last_parse_probs`` holds A_parse (batch x queries x
keys, before attention dropout) for the dependency loss.
"""
from typing import Dict, Optional

import torch
import torch.nn.functional as F
from fairseq.modules import MultiheadAttention
from torch import Tensor, nn


class DependencySelfAttention(MultiheadAttention):
    def __init__(self, embed_dim: int, num_heads: int, dropout: float = 0.0, bias: str = "query"):
        super().__init__(embed_dim, num_heads, dropout=dropout, self_attention=True)
        if num_heads < 2:
            raise ValueError("dependency-based self-attention replaces one of at least two heads")
        if bias not in ("query", "key"):
            raise ValueError(f"bias must be 'query' (Eq. 14 as printed) or 'key', not {bias!r}")
        self.parse_bias = bias
        self.biaffine_u1 = nn.Parameter(torch.empty(self.head_dim, self.head_dim))
        self.biaffine_u = nn.Parameter(torch.zeros(self.head_dim))
        nn.init.xavier_uniform_(self.biaffine_u1)
        self.last_parse_probs: Optional[Tensor] = None

    def biaffine_scores(self, q: Tensor, k: Tensor) -> Tensor:
        """Eq. 14 before the softmax. q: (..., T, d_head), k: (..., S, d_head) -> (..., T, S)."""
        scores = torch.matmul(torch.matmul(q, self.biaffine_u1), k.transpose(-1, -2))
        if self.parse_bias == "query":
            return scores + torch.matmul(q, self.biaffine_u).unsqueeze(-1)
        return scores + torch.matmul(k, self.biaffine_u).unsqueeze(-2)

    def forward(
        self,
        query: Tensor,
        key: Optional[Tensor],
        value: Optional[Tensor],
        key_padding_mask: Optional[Tensor] = None,
        incremental_state: Optional[Dict[str, Dict[str, Optional[Tensor]]]] = None,
        need_weights: bool = True,
        static_kv: bool = False,
        attn_mask: Optional[Tensor] = None,
        before_softmax: bool = False,
        need_head_weights: bool = False,
    ):
        tgt_len, bsz, embed_dim = query.size()
        h, dh = self.num_heads, self.head_dim

        def heads(x):  # (T, B, C) -> (B, H, T, dh)
            return x.view(x.size(0), bsz, h, dh).permute(1, 2, 0, 3)

        q = heads(self.q_proj(query))
        k = heads(self.k_proj(query))
        v = heads(self.v_proj(query))
        if incremental_state is not None:
            saved = self._get_input_buffer(incremental_state)
            if "prev_key" in saved:
                k = torch.cat([saved["prev_key"], k], dim=2)
                v = torch.cat([saved["prev_value"], v], dim=2)
            key_padding_mask = MultiheadAttention._append_prev_key_padding_mask(
                key_padding_mask=key_padding_mask,
                prev_key_padding_mask=saved.get("prev_key_padding_mask"),
                batch_size=bsz,
                src_len=k.size(2),
                static_kv=False,
            )
            saved["prev_key"], saved["prev_value"] = k, v
            saved["prev_key_padding_mask"] = key_padding_mask
            self._set_input_buffer(incremental_state, saved)
        src_len = k.size(2)

        scores = torch.matmul(q[:, :-1] * self.scaling, k[:, :-1].transpose(-1, -2))  # ordinary heads
        parse = self.biaffine_scores(q[:, -1], k[:, -1]).unsqueeze(1)  # Eq. 14
        scores = torch.cat([scores, parse], dim=1)  # (B, H, T, S), parse head last
        if attn_mask is not None:
            scores = scores + attn_mask.view(1, 1, tgt_len, src_len)
        if key_padding_mask is not None:
            scores = scores.masked_fill(key_padding_mask.view(bsz, 1, 1, src_len).bool(), float("-inf"))
        if before_softmax:
            return scores, v
        probs = F.softmax(scores.float(), dim=-1).type_as(scores)
        self.last_parse_probs = probs[:, -1]
        out = torch.matmul(self.dropout_module(probs), v)  # (B, H, T, dh)
        out = self.out_proj(out.permute(2, 0, 1, 3).reshape(tgt_len, bsz, embed_dim))
        weights = None
        if need_weights or need_head_weights:
            weights = probs.transpose(0, 1) if need_head_weights else probs.mean(dim=1)
        return out, weights
