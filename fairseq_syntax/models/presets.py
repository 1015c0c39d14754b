"""Named architectures of ``syntax_transformer`` (paper configurations + tiny ones).

Base sizes follow each paper (Transformer base: 6+6 layers, d 512, 8 heads,
FFN 2048). The ``*_tiny`` presets (2+2 layers, d 32, 4 heads) exist for tests
and CPU demos.
"""
from fairseq.models import register_model_architecture
from fairseq.models.transformer.transformer_legacy import base_architecture

import fairseq_syntax.models.syntax_transformer  # noqa: F401,E402  (registers the model first)


def _syntax_defaults(args):
    args.dbsa_encoder_layer = getattr(args, "dbsa_encoder_layer", 0)
    args.dbsa_decoder_layer = getattr(args, "dbsa_decoder_layer", 0)
    args.dbsa_bias = getattr(args, "dbsa_bias", "query")
    args.syntax_parent_strategy = getattr(args, "syntax_parent_strategy", "chain")
    args.rel_linear_k = getattr(args, "rel_linear_k", 0)
    args.rel_dep_l = getattr(args, "rel_dep_l", 0)
    args.rel_linear_terms = getattr(args, "rel_linear_terms", "key+value")
    args.rel_dep_terms = getattr(args, "rel_dep_terms", "key+value")
    args.rel_encoder_layers = getattr(args, "rel_encoder_layers", "all")
    args.rel_no_absolute_positions = getattr(args, "rel_no_absolute_positions", False)
    args.rel_implementation = getattr(args, "rel_implementation", "buckets")
    args.pascal_layer = getattr(args, "pascal_layer", 0)
    args.pascal_heads = getattr(args, "pascal_heads", 1)
    args.pascal_variance = getattr(args, "pascal_variance", 1.0)
    args.pascal_ignore_prob = getattr(args, "pascal_ignore_prob", 0.0)
    args.label_embed_dim = getattr(args, "label_embed_dim", 0)
    args.sync_layer = getattr(args, "sync_layer", 0)
    args.sync_heads = getattr(args, "sync_heads", 0)


def _tiny(args):
    for side in ("encoder", "decoder"):
        setattr(args, f"{side}_layers", getattr(args, f"{side}_layers", 2))
        setattr(args, f"{side}_embed_dim", getattr(args, f"{side}_embed_dim", 32))
        setattr(args, f"{side}_ffn_embed_dim", getattr(args, f"{side}_ffn_embed_dim", 64))
        setattr(args, f"{side}_attention_heads", getattr(args, f"{side}_attention_heads", 4))


@register_model_architecture("syntax_transformer", "syntax_transformer")
def syntax_transformer(args):
    _syntax_defaults(args)
    base_architecture(args)


@register_model_architecture("syntax_transformer", "syntax_transformer_tiny")
def syntax_transformer_tiny(args):
    _tiny(args)
    syntax_transformer(args)


# --- DBSA (Deguchi et al. 2019): parse heads in encoder layer 4 and decoder layer 4 -------------
@register_model_architecture("syntax_transformer", "transformer_dbsa")
def transformer_dbsa(args):
    args.dbsa_encoder_layer = getattr(args, "dbsa_encoder_layer", 4)
    args.dbsa_decoder_layer = getattr(args, "dbsa_decoder_layer", 4)
    syntax_transformer(args)


@register_model_architecture("syntax_transformer", "transformer_dbsa_enc")
def transformer_dbsa_enc(args):
    args.dbsa_encoder_layer = getattr(args, "dbsa_encoder_layer", 4)
    syntax_transformer(args)


@register_model_architecture("syntax_transformer", "transformer_dbsa_dec")
def transformer_dbsa_dec(args):
    args.dbsa_decoder_layer = getattr(args, "dbsa_decoder_layer", 4)
    syntax_transformer(args)


@register_model_architecture("syntax_transformer", "transformer_dbsa_tiny")
def transformer_dbsa_tiny(args):
    args.dbsa_encoder_layer = getattr(args, "dbsa_encoder_layer", 2)
    args.dbsa_decoder_layer = getattr(args, "dbsa_decoder_layer", 2)
    syntax_transformer_tiny(args)


# --- SISA (the PASCAL paper's LISA re-implementation): encoder parse head, 'first' parents ------
@register_model_architecture("syntax_transformer", "transformer_sisa")
def transformer_sisa(args):
    args.dbsa_encoder_layer = getattr(args, "dbsa_encoder_layer", 4)
    args.syntax_parent_strategy = getattr(args, "syntax_parent_strategy", "first")
    syntax_transformer(args)


@register_model_architecture("syntax_transformer", "transformer_sisa_tiny")
def transformer_sisa_tiny(args):
    args.dbsa_encoder_layer = getattr(args, "dbsa_encoder_layer", 2)
    args.syntax_parent_strategy = getattr(args, "syntax_parent_strategy", "first")
    syntax_transformer_tiny(args)


# --- Relative positions (Omote et al. 2019, Sec. 5.1): k = 2, l = 2 in every encoder layer ------
def _relative(args, k, l):
    args.rel_linear_k = getattr(args, "rel_linear_k", k)
    args.rel_dep_l = getattr(args, "rel_dep_l", l)


@register_model_architecture("syntax_transformer", "transformer_rel")
def transformer_rel(args):
    """Transformer_rel: Shaw et al. (2018) relative positions, k = 2."""
    _relative(args, 2, 0)
    syntax_transformer(args)


@register_model_architecture("syntax_transformer", "transformer_dep")
def transformer_dep(args):
    """Transformer_dep: dependency (tree-depth) relative positions, l = 2."""
    _relative(args, 0, 2)
    syntax_transformer(args)


@register_model_architecture("syntax_transformer", "transformer_dep_rel")
def transformer_dep_rel(args):
    """Transformer_dep+rel: both, summed (Eq. 21-22), k = l = 2."""
    _relative(args, 2, 2)
    syntax_transformer(args)


@register_model_architecture("syntax_transformer", "transformer_rel_tiny")
def transformer_rel_tiny(args):
    _relative(args, 2, 0)
    syntax_transformer_tiny(args)


@register_model_architecture("syntax_transformer", "transformer_dep_tiny")
def transformer_dep_tiny(args):
    _relative(args, 0, 2)
    syntax_transformer_tiny(args)


@register_model_architecture("syntax_transformer", "transformer_dep_rel_tiny")
def transformer_dep_rel_tiny(args):
    _relative(args, 2, 2)
    syntax_transformer_tiny(args)


# --- PASCAL (Bugliarello & Okazaki 2020): parent-scaled heads in encoder layer 1, sigma^2 = 1 -----
# h_pascal and q depend on the corpus (the paper's Table 2); 7 of 8 heads and q = 0 are its most
# frequent choice (WAT En-Ja); the recipes pass the per-corpus values.
def _pascal(args, heads):
    args.pascal_layer = getattr(args, "pascal_layer", 1)
    args.pascal_heads = getattr(args, "pascal_heads", heads)
    args.pascal_variance = getattr(args, "pascal_variance", 1.0)
    args.pascal_ignore_prob = getattr(args, "pascal_ignore_prob", 0.0)


@register_model_architecture("syntax_transformer", "transformer_pascal")
def transformer_pascal(args):
    _pascal(args, 7)
    syntax_transformer(args)


@register_model_architecture("syntax_transformer", "transformer_pascal_tiny")
def transformer_pascal_tiny(args):
    _pascal(args, 2)
    syntax_transformer_tiny(args)


# --- S&H (Sennrich & Haddow 2016, as in Bugliarello & Okazaki 2020): 10-dim label embeddings -------
@register_model_architecture("syntax_transformer", "transformer_sh")
def transformer_sh(args):
    args.label_embed_dim = getattr(args, "label_embed_dim", 10)
    syntax_transformer(args)


@register_model_architecture("syntax_transformer", "transformer_sh_tiny")
def transformer_sh_tiny(args):
    args.label_embed_dim = getattr(args, "label_embed_dim", 10)
    syntax_transformer_tiny(args)


# --- SyncAttn (Deguchi et al. 2021): parse heads in encoder and decoder layer l_dep = 1, C from decoder
# layer l_sync = 5 (train with label_smoothed_cross_entropy_with_sync: lambda_dep 0.5, lambda_sync per dataset)
def _syncattn(args, sync_layer):
    args.dbsa_encoder_layer = getattr(args, "dbsa_encoder_layer", 1)
    args.dbsa_decoder_layer = getattr(args, "dbsa_decoder_layer", 1)
    args.sync_layer = getattr(args, "sync_layer", sync_layer)


@register_model_architecture("syntax_transformer", "transformer_syncattn")
def transformer_syncattn(args):
    _syncattn(args, 5)
    syntax_transformer(args)


@register_model_architecture("syntax_transformer", "transformer_syncattn_tiny")
def transformer_syncattn_tiny(args):
    _syncattn(args, 2)
    syntax_transformer_tiny(args)
