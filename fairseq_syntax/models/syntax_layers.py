"""Transformer layers whose self-attention hosts syntax mechanisms.

A layer of ``syntax_transformer`` with a mechanism (a DBSA parse head, relative
positions, PASCAL heads: :class:`AttentionSpec`) is one of these; a layer
without one is fairseq's own. They are fairseq's layers (same submodules,
same parameter names and initialisation order, so checkpoints and seeds
carry over) with a ``forward`` that takes the syntax inputs as a parameter
and returns what the parse head computed:

* :class:`SyntaxEncoderLayer` ``forward(x, encoder_padding_mask, syntax)`` ->
  ``(x, parse_logprobs)``;
* :class:`SyntaxDecoderLayer` ``forward(x, encoder_out, ...)`` -> ``(x, attn,
  parse_logprobs)``, fairseq's decoder-layer outputs with the parse head's
  log-probabilities in the place of the self-attention state fairseq's loop
  discards.

The encoder and decoder loops that call them are in
:mod:`fairseq_syntax.models.syntax_transformer`; outputs of an
activation-checkpointed layer keep their graph because they are return
values. The blocks after the self-attention (encoder attention, FFN, with
fairseq's NormFormer options) follow fairseq 0.12's
``TransformerEncoderLayerBase`` / ``TransformerDecoderLayerBase.forward``;
fairseq's cross-self-attention and ``prev_*_state`` arguments, which no
syntax model uses, are refused at build time.
"""
from dataclasses import dataclass, field
from typing import Dict, Optional, Tuple

import torch
from fairseq.modules.transformer_layer import (
    TransformerDecoderLayerBase,
    TransformerEncoderLayerBase,
)
from torch import Tensor

from fairseq_syntax.errors import OptionError
from fairseq_syntax.modules.dependency_attention import BiaffineParseHead
from fairseq_syntax.modules.parent_scaled_attention import ParentScaledHeads
from fairseq_syntax.modules.relative_positions import RelativePositionTerms
from fairseq_syntax.modules.syntax_attention import AttentionInputs, SyntaxSelfAttention


@dataclass
class AttentionSpec:
    """The mechanisms of one layer's self-attention (``index``: the layer's 1-based number)."""

    index: int
    parse_bias: Optional[str] = None  # DBSA parse head with this bias form, or None
    parse_scaled: bool = False  # ... with its scores divided by sqrt(d_head) (2021 form)
    relative: Dict[str, Tuple[int, bool, bool]] = field(default_factory=dict)  # kind -> (clip, keys, values)
    implementation: str = "buckets"
    pascal: Optional[Tuple[int, float, float, str]] = None  # (heads, variance, ignore probability, weights)

    @property
    def empty(self) -> bool:
        return self.parse_bias is None and not self.relative and self.pascal is None

    def build(self, embed_dim: int, num_heads: int, dropout: float) -> SyntaxSelfAttention:
        head_dim = embed_dim // num_heads
        relative = {kind: RelativePositionTerms(head_dim, clip, keys, values, self.implementation)
                    for kind, (clip, keys, values) in self.relative.items()}
        pascal = ParentScaledHeads(*self.pascal) if self.pascal is not None else None
        attention = SyntaxSelfAttention(embed_dim, num_heads, dropout=dropout, relative=relative,
                                        parent_scaling=pascal)
        if self.parse_bias is not None:  # built after the projections (same initialisation as plain DBSA)
            attention.attach_parse_head(BiaffineParseHead(head_dim, self.parse_bias, self.parse_scaled))
        return attention


class _HostsSyntaxAttention:
    """Builds the layer's self-attention from its :class:`AttentionSpec` (fairseq calls
    ``build_self_attention`` from its ``__init__``, at the same point as for its own attention)."""

    def __init__(self, cfg, *args, attention_spec: AttentionSpec, **kwargs):
        object.__setattr__(self, "spec", attention_spec)  # read by build_self_attention during super().__init__
        super().__init__(cfg, *args, **kwargs)

    def build_self_attention(self, embed_dim, cfg, *args, **kwargs):
        encoder = isinstance(self, TransformerEncoderLayerBase)
        heads = cfg.encoder.attention_heads if encoder else cfg.decoder.attention_heads
        return self.spec.build(embed_dim, heads, cfg.attention_dropout)

    def _feed_forward(self, x: Tensor) -> Tensor:
        """The FFN block of fairseq's layers (with NormFormer's optional parts where the layer has them)."""
        residual = x
        if self.normalize_before:
            x = self.final_layer_norm(x)
        x = self.activation_fn(self.fc1(x))
        x = self.activation_dropout_module(x)
        if getattr(self, "ffn_layernorm", None) is not None:
            x = self.ffn_layernorm(x)
        x = self.fc2(x)
        x = self.dropout_module(x)
        if getattr(self, "w_resid", None) is not None:
            residual = torch.mul(self.w_resid, residual)
        x = self.residual_connection(x, residual)
        if not self.normalize_before:
            x = self.final_layer_norm(x)
        return x


class SyntaxEncoderLayer(_HostsSyntaxAttention, TransformerEncoderLayerBase):
    def __init__(self, cfg, attention_spec: AttentionSpec):
        super().__init__(cfg, attention_spec=attention_spec)

    def forward(self, x: Tensor, encoder_padding_mask: Optional[Tensor],
                syntax: Optional[AttentionInputs] = None) -> Tuple[Tensor, Optional[Tensor]]:
        """(x after the layer, the parse head's log-probabilities (B, T, T) or None)."""
        residual = x
        if self.normalize_before:
            x = self.self_attn_layer_norm(x)
        x, _, parse = self.self_attn(x, key_padding_mask=encoder_padding_mask, syntax=syntax)
        x = self.dropout_module(x)
        x = self.residual_connection(x, residual)
        if not self.normalize_before:
            x = self.self_attn_layer_norm(x)
        return self._feed_forward(x), parse


class SyntaxDecoderLayer(_HostsSyntaxAttention, TransformerDecoderLayerBase):
    def __init__(self, cfg, no_encoder_attn: bool, attention_spec: AttentionSpec):
        if cfg.cross_self_attention:
            raise OptionError("--cross-self-attention is not supported with syntax mechanisms in the decoder")
        super().__init__(cfg, no_encoder_attn, attention_spec=attention_spec)

    def forward(self, x: Tensor, encoder_out: Optional[Tensor] = None, encoder_padding_mask: Optional[Tensor] = None,
                incremental_state: Optional[Dict[str, Dict[str, Optional[Tensor]]]] = None,
                self_attn_mask: Optional[Tensor] = None, self_attn_padding_mask: Optional[Tensor] = None,
                need_attn: bool = False, need_head_weights: bool = False):
        """fairseq's (x, encoder-attention weights, third output): the third is the parse head's
        log-probabilities (B, T, T) or None."""
        if need_head_weights:
            need_attn = True
        residual = x
        if self.normalize_before:
            x = self.self_attn_layer_norm(x)
        x, _, parse = self.self_attn(x, key_padding_mask=self_attn_padding_mask, attn_mask=self_attn_mask,
                                     incremental_state=incremental_state)
        if self.c_attn is not None:
            tgt_len, bsz = x.size(0), x.size(1)
            x = torch.einsum("tbhd,h->tbhd", x.view(tgt_len, bsz, self.nh, self.head_dim), self.c_attn)
            x = x.reshape(tgt_len, bsz, self.embed_dim)
        if self.attn_ln is not None:
            x = self.attn_ln(x)
        x = self.dropout_module(x)
        x = self.residual_connection(x, residual)
        if not self.normalize_before:
            x = self.self_attn_layer_norm(x)
        attn = None
        if self.encoder_attn is not None and encoder_out is not None:
            residual = x
            if self.normalize_before:
                x = self.encoder_attn_layer_norm(x)
            x, attn = self.encoder_attn(query=x, key=encoder_out, value=encoder_out,
                                        key_padding_mask=encoder_padding_mask, incremental_state=incremental_state,
                                        static_kv=True, need_weights=need_attn or (not self.training and self.need_attn),
                                        need_head_weights=need_head_weights)
            x = self.dropout_module(x)
            x = self.residual_connection(x, residual)
            if not self.normalize_before:
                x = self.encoder_attn_layer_norm(x)
        return self._feed_forward(x), attn, parse
