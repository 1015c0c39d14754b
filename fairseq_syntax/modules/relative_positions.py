"""Relative position representations of self-attention, computed per bucket.

Shaw, Uszkoreit & Vaswani (2018), as written in Omote, Tamura & Ninomiya (2019), "Dependency-Based Relative
Positional Encoding for Transformer NMT":

* linear positions (Sec. 3.2): a^K_ij = w^K_clip(j-i, k), a^V_ij = w^V_clip(j-i, k),
  clip(x, k) = max(-k, min(k, x)) (Eq. 13-15);
* dependency positions (Sec. 4): dist_ij = depth(n_j) - depth(n_i) (Eq. 16), b^K_ij = w^K_clip(dist_ij, l),
  b^V_ij = w^V_clip(dist_ij, l) (Eq. 19-20);
* they enter attention as e_ij = x_i W^Q (x_j W^K + a^K_ij [+ b^K_ij])^T / sqrt(d_z) and
  z_i = sum_j alpha_ij (x_j W^V + a^V_ij [+ b^V_ij]) (Eq. 11-12, 17-18, 21-22). Both sums are linear, so every
  kind of relative position contributes its own score and output term.

Each term is one table of 2c+1 learned vectors (d_head each), shared by the heads of a layer (as in Shaw et al.).
A pair (i, j) only selects a bucket ``clip(dist_ij, c) + c``, so nothing of size B x T x T x d is needed (the
``buckets`` implementation): the key term is (q_i . w^K_b) for the 2c+1 buckets b (B x H x T x (2c+1)), gathered
per pair into B x H x T x S; the value term sums the attention probabilities per bucket (a scatter-add into
B x H x T x (2c+1)) and multiplies by the 2c+1 value vectors. The ``materialised`` implementation builds the
B x T x S x d pairwise tensors as the equations are written: the reference the bucket form is tested against.

Linear buckets depend only on j - i, so left padding (which shifts every real position by the same amount) does
not change them; depth buckets come from the collated ``src_depths`` (EOS and padding have depth 0; padded keys
are masked anyway).
"""
from typing import Optional

import torch
from torch import Tensor, nn

IMPLEMENTATIONS = ("buckets", "materialised")


def linear_buckets(tgt_len: int, src_len: int, max_distance: int, device=None) -> Tensor:
    """(T, S) bucket ids clip(j - i, k) + k; queries are the last T of S positions."""
    i = torch.arange(src_len - tgt_len, src_len, device=device).unsqueeze(1)
    j = torch.arange(src_len, device=device).unsqueeze(0)
    return (j - i).clamp_(-max_distance, max_distance) + max_distance


def depth_buckets(depths: Tensor, max_distance: int) -> Tensor:
    """(B, S) tree depths -> (B, S, S) bucket ids clip(depth_j - depth_i, l) + l (Eq. 16, 19-20)."""
    dist = depths.unsqueeze(1) - depths.unsqueeze(2)  # [b, i, j] = depth_j - depth_i
    return dist.clamp_(-max_distance, max_distance) + max_distance


class RelativePositionTerms(nn.Module):
    """Key and/or value vectors w_{-c..c} of one kind of relative position."""

    def __init__(self, head_dim: int, max_distance: int, keys: bool = True, values: bool = True,
                 implementation: str = "buckets"):
        super().__init__()
        if max_distance < 1:
            raise ValueError(f"the clipping distance must be >= 1, not {max_distance}")
        if not (keys or values):
            raise ValueError("relative positions need a key term, a value term or both")
        if implementation not in IMPLEMENTATIONS:
            raise ValueError(f"implementation must be one of {IMPLEMENTATIONS}, not {implementation!r}")
        self.max_distance = max_distance
        self.implementation = implementation
        n = 2 * max_distance + 1
        self.key_table: Optional[nn.Parameter] = nn.Parameter(torch.empty(n, head_dim)) if keys else None
        self.value_table: Optional[nn.Parameter] = nn.Parameter(torch.empty(n, head_dim)) if values else None
        for table in (self.key_table, self.value_table):
            if table is not None:
                nn.init.xavier_uniform_(table)

    @property
    def num_buckets(self) -> int:
        return 2 * self.max_distance + 1

    def score_term(self, q: Tensor, buckets: Tensor) -> Tensor:
        """q_i . w^K_{bucket(i,j)}: q (B, H, T, d) already scaled, buckets (B or 1, T, S) -> (B, H, T, S)."""
        bsz, heads, tgt_len, _ = q.shape
        src_len = buckets.size(-1)
        if self.implementation == "materialised":
            a = self.key_table[buckets]  # (B', T, S, d): the pairwise vectors a^K_ij
            return torch.einsum("bhtd,btsd->bhts", q, a.expand(bsz, -1, -1, -1))
        per_bucket = torch.matmul(q, self.key_table.t())  # (B, H, T, 2c+1)
        idx = buckets.unsqueeze(1).expand(bsz, heads, tgt_len, src_len)
        return per_bucket.gather(-1, idx)

    def value_term(self, probs: Tensor, buckets: Tensor) -> Tensor:
        """sum_j alpha_ij w^V_{bucket(i,j)}: probs (B, H, T, S), buckets (B or 1, T, S) -> (B, H, T, d)."""
        bsz, heads, tgt_len, src_len = probs.shape
        if self.implementation == "materialised":
            a = self.value_table[buckets]  # (B', T, S, d): the pairwise vectors a^V_ij
            return torch.einsum("bhts,btsd->bhtd", probs, a.expand(bsz, -1, -1, -1))
        idx = buckets.unsqueeze(1).expand(bsz, heads, tgt_len, src_len)
        mass = probs.new_zeros(bsz, heads, tgt_len, self.num_buckets).scatter_add_(-1, idx, probs)
        return torch.matmul(mass, self.value_table.to(probs.dtype))
