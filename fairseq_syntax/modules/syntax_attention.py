"""Multi-head self-attention with switchable syntax mechanisms.

One attention layer hosts the mechanisms of a ``syntax_transformer`` layer (docs/design.md, "One model family,
mechanisms as switches"), so that they compose within a layer:

* ``parse_head``: the last head becomes DBSA's bi-affine parse head (Deguchi et al. 2019, Eq. 14-17;
  :mod:`.dependency_attention`). Its distribution (B x T x S, before attention dropout) is returned as float32
  log-probabilities (a log-softmax of the masked scores, so that the dependency loss never takes the log of a
  probability rounded to zero in fp16/bf16);
* ``relative``: relative position terms (Shaw et al. 2018 linear positions, Omote et al. 2019 tree-depth
  positions; :mod:`.relative_positions`), added to the scores (key terms) and outputs (value terms) of the
  ordinary heads. The parse head keeps Eq. 14 exactly.
* ``parent_scaling``: PASCAL heads (Bugliarello & Okazaki 2020, Eq. 4-6; :mod:`.parent_scaled_attention`): the
  first h_pascal heads' scaled scores (relative key terms included) are multiplied by D^p before masking and
  softmax.

``forward`` takes ``syntax``, an :class:`AttentionInputs` built once per batch by the encoder (depth buckets,
parent positions), and returns an :class:`AttentionOutput` (output, weights, parse log-probabilities) that the
hosting layer passes up (:mod:`fairseq_syntax.models.syntax_layers`; docs/design.md draws the data flow). The
arguments follow fairseq's :class:`~fairseq.modules.MultiheadAttention` (time-major input, ``key_padding_mask``,
``attn_mask``, incremental state for decoder self-attention); layers without a mechanism keep fairseq's attention.
"""
import functools
from dataclasses import dataclass
from typing import Dict, NamedTuple, Optional

import torch
import torch.nn.functional as F
from fairseq.modules import MultiheadAttention
from torch import Tensor, nn

from fairseq_syntax.errors import OptionError
from fairseq_syntax.modules.parent_scaled_attention import ParentScaledHeads
from fairseq_syntax.modules.relative_positions import (
    RelativePositionTerms,
    linear_buckets,
)

RELATIVE_KINDS = ("linear", "dependency")


@functools.lru_cache(maxsize=8)
def _shared_linear_buckets(build, tgt_len: int, src_len: int, max_distance: int, device) -> Tensor:
    """``build(tgt_len, src_len, max_distance, device)`` (linear_buckets) once for the layers of a forward pass and
    of a decoding step that share its shape, rather than once per layer: five operators a layer, launches a GPU
    pays for (docs/benchmarks.md, "Operators per step"). Read-only: the callers only view and gather with it.
    ``build`` is part of the key, so a patched linear_buckets is not answered from the cache."""
    return build(tgt_len, src_len, max_distance, device)


@dataclass(frozen=True)
class AttentionInputs:
    """Per-batch inputs of the syntax self-attention, in batch coordinates (built by the encoder from the
    task's ``src_depths`` / ``src_parents``, once per batch, shared by its layers)."""

    dependency_buckets: Optional[Tensor] = None  # (B, T, T) clipped tree-depth differences (Omote et al. Eq. 16)
    parents: Optional[Tensor] = None  # (B, T) parent positions of PASCAL's 'middle' strategy (B&O Eq. 4)


class AttentionOutput(NamedTuple):
    out: Tensor  # (T, B, C), as fairseq's MultiheadAttention
    weights: Optional[Tensor]  # attention probabilities when asked for
    parse_logprobs: Optional[Tensor]  # (B, T, S) float32 log-probabilities of the parse head, or None


class SyntaxSelfAttention(MultiheadAttention):
    def __init__(
        self,
        embed_dim: int,
        num_heads: int,
        dropout: float = 0.0,
        parse_head: Optional[nn.Module] = None,
        relative: Optional[Dict[str, RelativePositionTerms]] = None,
        parent_scaling: Optional[ParentScaledHeads] = None,
    ):
        super().__init__(embed_dim, num_heads, dropout=dropout, self_attention=True)
        relative = dict(relative or {})
        unknown = set(relative) - set(RELATIVE_KINDS)
        if unknown:
            raise ValueError(f"unknown relative position kind(s) {sorted(unknown)}; known: {RELATIVE_KINDS}")
        self.relative = nn.ModuleDict(relative)
        self.parent_scaling = parent_scaling
        self.parse_head: Optional[nn.Module] = None
        if parse_head is not None:
            self.attach_parse_head(parse_head)  # checks the heads
        else:
            self._check_heads()

    def attach_parse_head(self, parse_head: nn.Module) -> None:
        """Make the last head the parse head (after construction: the random stream of the projections'
        initialisation is then the same as without it)."""
        if self.num_heads < 2:
            raise OptionError("dependency-based self-attention replaces one of at least two heads: a layer with a parse "
                              "head (--dbsa-encoder-layer / --dbsa-decoder-layer) needs --encoder-attention-heads / "
                              "--decoder-attention-heads >= 2")
        self.parse_head = parse_head
        self._check_heads()

    def _check_heads(self):
        if self.parent_scaling is not None and self.parent_scaling.num_heads > self.num_heads - (
            self.parse_head is not None
        ):
            raise OptionError(f"--pascal-heads {self.parent_scaling.num_heads}: parent-scaled heads, but the layer has "
                             f"{self.num_heads} heads" + (" (one of them the parse head)" if self.parse_head is not None else ""))

    @staticmethod
    def _buckets(kind: str, terms: RelativePositionTerms, tgt_len: int, src_len: int, device,
                 syntax: Optional[AttentionInputs]) -> Tensor:
        if kind == "linear":
            return _shared_linear_buckets(linear_buckets, tgt_len, src_len, terms.max_distance, device).unsqueeze(0)
        buckets = syntax.dependency_buckets if syntax is not None else None
        if buckets is None:
            raise RuntimeError(
                f"{kind} relative positions need per-sentence inputs (src_depths from the syntax_translation "
                "task); none were given to this forward"
            )
        if buckets.shape[-2:] != (tgt_len, src_len):
            raise RuntimeError(f"{kind} buckets have shape {tuple(buckets.shape)} for {tgt_len} x {src_len} attention")
        return buckets

    def forward(
        self,
        query: Tensor,
        key_padding_mask: Optional[Tensor] = None,
        attn_mask: Optional[Tensor] = None,
        incremental_state: Optional[Dict[str, Dict[str, Optional[Tensor]]]] = None,
        syntax: Optional[AttentionInputs] = None,
        need_weights: bool = False,
        need_head_weights: bool = False,
        before_softmax: bool = False,
    ):
        """Self-attention of ``query`` (T, B, C) with the layer's mechanisms; an :class:`AttentionOutput`
        (``before_softmax``: the masked scores (B, H, T, S) and the values instead, for tests)."""
        tgt_len, bsz, embed_dim = query.size()
        h, dh = self.num_heads, self.head_dim

        def heads(x):  # (T, B, C) -> (B, H, T, dh)
            return x.view(x.size(0), bsz, h, dh).permute(1, 2, 0, 3)

        q = heads(self.q_proj(query))
        k = heads(self.k_proj(query))
        v = heads(self.v_proj(query))
        if incremental_state is not None:
            if "dependency" in self.relative:
                raise RuntimeError("dependency relative positions are an encoder mechanism (no incremental state)")
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

        ordinary = h - 1 if self.parse_head is not None else h  # the parse head is the last one
        qs = q[:, :ordinary] * self.scaling
        scores = torch.matmul(qs, k[:, :ordinary].transpose(-1, -2))
        buckets = {kind: self._buckets(kind, terms, tgt_len, src_len, query.device, syntax)
                   for kind, terms in self.relative.items()}
        for kind, terms in self.relative.items():
            if terms.key_table is not None:
                scores = scores + terms.score_term(qs, buckets[kind])
        if self.parent_scaling is not None:
            parents = syntax.parents if syntax is not None else None
            if parents is None or parents.shape != (bsz, tgt_len):
                raise RuntimeError("parent-scaled heads need the (B, T) parent positions of this batch (src_parents "
                                   "from the syntax_translation task)")
            scores = self.parent_scaling.scale(scores, self.parent_scaling.weights(parents, src_len))  # Eq. 5-6
        # masks and softmax in float32, masked keys at float32's lowest finite number rather than -inf: a row
        # with every key masked (a sentence of padding only) then gets a finite distribution instead of NaN, and
        # a row with one real key the same probabilities as with -inf (exp underflows to exactly 0)
        masked = key_padding_mask.view(bsz, 1, 1, src_len).bool() if key_padding_mask is not None else None
        scores = _masked(scores.float(), attn_mask, masked, tgt_len, src_len)
        parse_logprobs = None
        if self.parse_head is not None:
            # the parse head in float32 (Eq. 14): the 2019 form is unscaled, and Q U1 K^T leaves fp16's range
            # (65,504) with large activations, where it would turn the row into NaN
            # (outside autocast too, which would run the matmuls in half precision again)
            with torch.autocast(query.device.type, enabled=False):
                parse = self.parse_head(q[:, -1].float(), k[:, -1].float()).unsqueeze(1)
            parse = _masked(parse.float(), attn_mask, masked, tgt_len, src_len)
            if before_softmax:
                return torch.cat([scores, parse], dim=1), v
            parse_logprobs = F.log_softmax(parse[:, 0], dim=-1)
            probs = torch.cat([F.softmax(scores, dim=-1), F.softmax(parse, dim=-1)], dim=1).type_as(q)
        else:
            if before_softmax:
                return scores, v
            probs = F.softmax(scores, dim=-1).type_as(q)
        dropped = self.dropout_module(probs)
        out = torch.matmul(dropped, v)  # (B, H, T, dh)
        value_terms = [terms.value_term(dropped[:, :ordinary], buckets[kind])
                       for kind, terms in self.relative.items() if terms.value_table is not None]
        if value_terms:
            rel = value_terms[0]
            for term in value_terms[1:]:
                rel = rel + term
            out = out + rel if ordinary == h else torch.cat([out[:, :ordinary] + rel, out[:, ordinary:]], dim=1)
        out = self.out_proj(out.permute(2, 0, 1, 3).reshape(tgt_len, bsz, embed_dim))
        weights = None
        if need_weights or need_head_weights:
            weights = probs.transpose(0, 1) if need_head_weights else probs.mean(dim=1)
        return AttentionOutput(out, weights, parse_logprobs)


def _masked(scores: Tensor, attn_mask: Optional[Tensor], key_padding: Optional[Tensor], tgt_len: int,
            src_len: int) -> Tensor:
    """float32 scores (B, H, T, S) with the additive mask (fairseq's future mask: 0 / -inf) added and padded keys
    set to float32's lowest finite number."""
    if attn_mask is not None:
        scores = scores + attn_mask.view(1, 1, tgt_len, src_len).float()
    if key_padding is not None:
        scores = scores.masked_fill(key_padding, torch.finfo(torch.float32).min)
    return scores
