"""``syntax_transformer``: fairseq's transformer with syntax mechanisms as switches.

One registered model (DESIGN.md, "One model family, features as switches")
whose encoder and decoder layers switch mechanisms on independently. Layers
without a mechanism are fairseq's own layers on fairseq's fast path.

Mechanisms so far:

* DBSA, dependency-based self-attention (Deguchi et al. 2019): a bi-affine
  parse head in encoder layer p_e (``--dbsa-encoder-layer``) and/or decoder
  layer p_d (``--dbsa-decoder-layer``), see
  :mod:`fairseq_syntax.modules.dependency_attention`. It is supervised by the
  ``label_smoothed_cross_entropy_with_dependency`` criterion and needs no
  parse at inference.

Named architectures (presets) are in :mod:`fairseq_syntax.models.presets`.
"""
from dataclasses import dataclass, field

from fairseq.dataclass import ChoiceEnum, FairseqDataclass
from fairseq.dataclass.utils import gen_parser_from_dataclass
from fairseq.models import register_model
from fairseq.models.transformer import TransformerConfig, TransformerDecoder, TransformerEncoder, TransformerModel
from fairseq.modules.transformer_layer import TransformerDecoderLayerBase, TransformerEncoderLayerBase

from fairseq_syntax.data.parent_strategies import STRATEGIES
from fairseq_syntax.modules.dependency_attention import DependencySelfAttention


@dataclass
class SyntaxTransformerConfig(FairseqDataclass):
    """Options the syntax mechanisms add to fairseq's transformer options."""

    dbsa_encoder_layer: int = field(
        default=0,
        metadata={"help": "DBSA: 1-based encoder layer p_e whose last self-attention head is the bi-affine "
                  "parse head (Deguchi et al. 2019); 0 = none"},
    )
    dbsa_decoder_layer: int = field(
        default=0,
        metadata={"help": "DBSA: 1-based decoder layer p_d with the future-masked parse head; 0 = none"},
    )
    dbsa_bias: ChoiceEnum(["query", "key"]) = field(
        default="query",
        metadata={"help": "bias term of the bi-affine scores: 'query' = Q U2 as printed in Eq. 14 (constant "
                  "per row, so it cancels in the softmax), 'key' = K u (Dozat & Manning's head prior)"},
    )
    syntax_parent_strategy: ChoiceEnum(STRATEGIES) = field(
        default="chain",
        metadata={"help": "subword parent strategy the parse heads are trained for: chain for DBSA, first for "
                  "SISA; the task's --parent-strategy auto (default) adopts it"},
    )


def _dbsa_layer_cls(base):
    class DBSALayer(base):
        """A fairseq transformer layer whose self-attention has a parse head."""

        def build_self_attention(self, embed_dim, cfg, *args, **kwargs):
            heads = cfg.encoder.attention_heads if base is TransformerEncoderLayerBase else cfg.decoder.attention_heads
            return DependencySelfAttention(embed_dim, heads, dropout=cfg.attention_dropout,
                                           bias=getattr(cfg, "dbsa_bias", "query"))

    DBSALayer.__name__ = "DBSA" + base.__name__
    return DBSALayer


DBSAEncoderLayer = _dbsa_layer_cls(TransformerEncoderLayerBase)
DBSADecoderLayer = _dbsa_layer_cls(TransformerDecoderLayerBase)


def _with_dbsa(cfg, args):
    cfg.dbsa_bias = str(getattr(args, "dbsa_bias", "query"))
    return cfg


class SyntaxTransformerEncoder(TransformerEncoder):
    def __init__(self, args, dictionary, embed_tokens):
        self.dbsa_layer = int(getattr(args, "dbsa_encoder_layer", 0) or 0)
        self._built = 0
        super().__init__(args, dictionary, embed_tokens)
        if self.dbsa_layer > len(self.layers):
            raise ValueError(f"--dbsa-encoder-layer {self.dbsa_layer} but the encoder has {len(self.layers)} layers")

    def build_encoder_layer(self, args):
        self._built += 1
        if self._built == self.dbsa_layer:
            return DBSAEncoderLayer(_with_dbsa(TransformerConfig.from_namespace(args), self.args))
        return super().build_encoder_layer(args)

    def parse_attention(self):
        if not self.dbsa_layer:
            return None
        return self.layers[self.dbsa_layer - 1].self_attn.last_parse_probs


class SyntaxTransformerDecoder(TransformerDecoder):
    def __init__(self, args, dictionary, embed_tokens, no_encoder_attn=False, output_projection=None):
        self.dbsa_layer = int(getattr(args, "dbsa_decoder_layer", 0) or 0)
        self._built = 0
        super().__init__(args, dictionary, embed_tokens, no_encoder_attn, output_projection)
        if self.dbsa_layer > len(self.layers):
            raise ValueError(f"--dbsa-decoder-layer {self.dbsa_layer} but the decoder has {len(self.layers)} layers")

    def build_decoder_layer(self, args, no_encoder_attn=False):
        self._built += 1
        if self._built == self.dbsa_layer:
            return DBSADecoderLayer(_with_dbsa(TransformerConfig.from_namespace(args), self.args), no_encoder_attn)
        return super().build_decoder_layer(args, no_encoder_attn)

    def extract_features(self, prev_output_tokens, encoder_out=None, incremental_state=None, full_context_alignment=False,
                         alignment_layer=None, alignment_heads=None):
        x, extra = super().extract_features(prev_output_tokens, encoder_out, incremental_state,
                                            full_context_alignment, alignment_layer, alignment_heads)
        if self.dbsa_layer:
            extra["parse_attn"] = [self.layers[self.dbsa_layer - 1].self_attn.last_parse_probs]
        return x, extra


@register_model("syntax_transformer")
class SyntaxTransformerModel(TransformerModel):
    """Transformer with switchable syntax mechanisms (see module docstring)."""

    @classmethod
    def add_args(cls, parser):
        super().add_args(parser)
        # no defaults here, so that the named architectures can set theirs (as fairseq does)
        gen_parser_from_dataclass(parser, SyntaxTransformerConfig(), delete_default=True)

    @classmethod
    def build_encoder(cls, args, src_dict, embed_tokens):
        return SyntaxTransformerEncoder(args, src_dict, embed_tokens)

    @classmethod
    def build_decoder(cls, args, tgt_dict, embed_tokens):
        return SyntaxTransformerDecoder(args, tgt_dict, embed_tokens,
                                        no_encoder_attn=getattr(args, "no_cross_attention", False))

    def syntax_needs(self):
        """What the syntax_translation task must collate for this model."""
        enc, dec = self.encoder.dbsa_layer, self.decoder.dbsa_layer
        return {
            "source": ["parents"] if enc else [],
            "target": ["parents"] if dec else [],
            "inputs": [],  # parse heads are supervised only: no parse needed at inference
            "strategy": str(getattr(self.args, "syntax_parent_strategy", "chain")),
        }

    def forward(self, src_tokens, src_lengths, prev_output_tokens, **kwargs):
        decoder_out = super().forward(src_tokens, src_lengths, prev_output_tokens, **kwargs)
        if self.encoder.dbsa_layer:  # for the dependency loss
            decoder_out[1]["encoder_parse_attn"] = [self.encoder.parse_attention()]
        return decoder_out
