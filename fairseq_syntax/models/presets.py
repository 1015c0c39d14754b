"""Named architectures of ``syntax_transformer`` (paper configurations + tiny ones).

Base sizes follow each paper (Transformer base: 6+6 layers, d 512, 8 heads,
FFN 2048). The ``*_tiny`` presets (2+2 layers, d 32, 4 heads) exist for tests
and CPU demos. A preset only sets defaults: options given on the command
line win (fairseq's convention).
"""
from dataclasses import fields
from typing import Optional

from fairseq.models import register_model_architecture
from fairseq.models.transformer.transformer_legacy import base_architecture

from fairseq_syntax.models.syntax_transformer import (
    SyntaxTransformerConfig,  # registers the model first
)

#: every syntax option off, as declared in the model's config
_OFF = {f.name: f.default for f in fields(SyntaxTransformerConfig) if not f.name.startswith("_")}


def _fill(args, values: dict):
    for key, value in values.items():
        setattr(args, key, getattr(args, key, value))


def _tiny(args):
    for side in ("encoder", "decoder"):
        _fill(args, {f"{side}_layers": 2, f"{side}_embed_dim": 32, f"{side}_ffn_embed_dim": 64,
                     f"{side}_attention_heads": 4})


@register_model_architecture("syntax_transformer", "syntax_transformer")
def syntax_transformer(args):
    _fill(args, _OFF)
    base_architecture(args)


@register_model_architecture("syntax_transformer", "syntax_transformer_tiny")
def syntax_transformer_tiny(args):
    _tiny(args)
    syntax_transformer(args)


def _preset(name: str, base: dict, tiny: Optional[dict] = None):
    """Register ``name`` (base size) with these defaults, and ``name_tiny`` with ``tiny`` if given."""
    register_model_architecture("syntax_transformer", name)(lambda args: (_fill(args, base), syntax_transformer(args)))
    if tiny is not None:
        register_model_architecture("syntax_transformer", name + "_tiny")(
            lambda args: (_fill(args, tiny), syntax_transformer_tiny(args))
        )


# DBSA (Deguchi et al. 2019): parse heads in encoder layer 4 and decoder layer 4 (tiny: 2)
_preset("transformer_dbsa", dict(dbsa_encoder_layer=4, dbsa_decoder_layer=4),
        dict(dbsa_encoder_layer=2, dbsa_decoder_layer=2))
_preset("transformer_dbsa_enc", dict(dbsa_encoder_layer=4))
_preset("transformer_dbsa_dec", dict(dbsa_decoder_layer=4))
# SISA (the PASCAL paper's LISA re-implementation): encoder parse head, 'first' parents
_preset("transformer_sisa", dict(dbsa_encoder_layer=4, syntax_parent_strategy="first"),
        dict(dbsa_encoder_layer=2, syntax_parent_strategy="first"))
# Relative positions (Omote et al. 2019, Sec. 5.1), every encoder layer: Transformer_rel is Shaw et al. (2018),
# linear relative positions (k = 2) in the encoder and the decoder self-attention; Transformer_dep: tree depths
# (l = 2) in the encoder, the decoder as the absolute-position baseline (no target tree at inference);
# Transformer_dep+rel: both summed in the encoder (Eq. 21-22) and Shaw's decoder (the "rel" half of the hybrid:
# Omote et al. leave dependency positions in the decoder to future work, Sec. 6)
for _name, _k, _l in (("transformer_rel", 2, 0), ("transformer_dep", 0, 2), ("transformer_dep_rel", 2, 2)):
    _preset(_name, dict(rel_linear_k=_k, rel_dep_l=_l, rel_decoder_k=_k),
            dict(rel_linear_k=_k, rel_dep_l=_l, rel_decoder_k=_k))
# PASCAL (Bugliarello & Okazaki 2020): parent-scaled heads in encoder layer 1, sigma^2 = 1, q = 0.
# h_pascal and q depend on the corpus (the paper's Table 2); 7 of 8 heads is its most frequent choice;
# the recipes (examples/<dataset>/train.sh pascal) pass the per-corpus values
_preset("transformer_pascal", dict(pascal_layer=1, pascal_heads=7), dict(pascal_layer=1, pascal_heads=2))
# S&H (Sennrich & Haddow 2016, as in Bugliarello & Okazaki 2020): 10-dim label embeddings
_preset("transformer_sh", dict(label_embed_dim=10), dict(label_embed_dim=10))
# SyncAttn (Deguchi et al. 2021): parse heads in encoder and decoder layer l_dep = 1, C from decoder layer
# l_sync = 5 (tiny: 2); the 2021 form of the dependency attention, softmax(Q U K^T / sqrt(d_k)) without a bias
# (Eq. 4); train with label_smoothed_cross_entropy_with_sync (lambda_dep 0.5, lambda_sync per dataset)
_SYNC_FORM = dict(dbsa_bias="none", dbsa_scaled=True)
_preset("transformer_syncattn", dict(dbsa_encoder_layer=1, dbsa_decoder_layer=1, sync_layer=5, **_SYNC_FORM),
        dict(dbsa_encoder_layer=1, dbsa_decoder_layer=1, sync_layer=2, **_SYNC_FORM))
