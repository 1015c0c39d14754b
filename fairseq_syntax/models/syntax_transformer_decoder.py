"""The syntax transformer's decoder: fairseq's TransformerDecoder whose layers carry the DBSA parse head and
the SyncAttn layer (:mod:`fairseq_syntax.models.syntax_transformer` describes the model)."""
from fairseq.models.transformer import (
    TransformerConfig,
    TransformerDecoder,
)
from torch import nn

from fairseq_syntax.errors import OptionError
from fairseq_syntax.models.layer_stack import LayerDrop, parse_form, wrap_layer
from fairseq_syntax.models.syntax_layers import (
    AttentionSpec,
    SyntaxDecoderLayer,
)
from fairseq_syntax.models.syntax_transformer_config import DECODER_ROWS, relative_terms


class SyntaxTransformerDecoder(TransformerDecoder):
    """fairseq's transformer decoder whose layers may host syntax mechanisms; its layer loop
    (``extract_features_scriptable``) takes the parse head's output from the layer's return value and returns
    it in the features' dict as ``parse_logprobs`` ([B x T x T], with a parse head only)."""

    def __init__(self, args, dictionary, embed_tokens, no_encoder_attn=False, output_projection=None):
        self.dbsa_layer = int(getattr(args, "dbsa_decoder_layer", 0) or 0)
        self.rel_k = int(getattr(args, "rel_decoder_k", 0) or 0)
        self.rows = str(getattr(args, "dbsa_decoder_rows", "predicting"))
        if self.rows not in DECODER_ROWS:
            raise OptionError(f"--dbsa-decoder-rows must be one of {DECODER_ROWS}, not {self.rows!r}")
        if self.dbsa_layer > args.decoder_layers:
            raise OptionError(f"--dbsa-decoder-layer {self.dbsa_layer} but the decoder has {args.decoder_layers} "
                             "layers")
        self.layer_specs = [self.layer_spec(i, args) for i in range(1, args.decoder_layers + 1)]
        self._specs_to_build = iter(self.layer_specs)  # taken in order by build_decoder_layer (see the encoder)
        super().__init__(args, dictionary, embed_tokens, no_encoder_attn, output_projection)
        if next(self._specs_to_build, None) is not None:
            raise RuntimeError("fewer decoder layers were built than specified")
        sync = int(getattr(args, "sync_layer", 0) or 0)
        self.layer_drop = LayerDrop(self.layers, {self.dbsa_layer - 1, sync - 1} - {-1})

    def layer_spec(self, index: int, args) -> AttentionSpec:
        """What the self-attention of 1-based decoder layer ``index`` hosts."""
        spec = AttentionSpec(index, implementation=str(getattr(args, "rel_implementation", "buckets")))
        if index == self.dbsa_layer:
            spec.parse_bias, spec.parse_scaled = parse_form(args)
        if self.rel_k:
            terms = relative_terms(getattr(args, "rel_linear_terms", "key+value"), "rel-linear-terms")
            spec.relative["linear"] = (self.rel_k, *terms)
        return spec

    def build_decoder_layer(self, args, no_encoder_attn=False):
        spec = next(self._specs_to_build)
        if spec.empty:
            return super().build_decoder_layer(args, no_encoder_attn)
        cfg = TransformerConfig.from_namespace(args)
        return wrap_layer(SyntaxDecoderLayer(cfg, no_encoder_attn, attention_spec=spec), cfg)

    def extract_features_scriptable(self, prev_output_tokens, encoder_out=None, incremental_state=None,
                                    full_context_alignment: bool = False, alignment_layer=None,
                                    alignment_heads=None):
        """fairseq 0.12's decoder feature extraction, with the parse head's output taken from its layer."""
        if alignment_layer is None:
            alignment_layer = self.num_layers - 1
        enc = padding_mask = None
        if encoder_out is not None and len(encoder_out["encoder_out"]) > 0:
            enc = encoder_out["encoder_out"][0]
        if encoder_out is not None and len(encoder_out["encoder_padding_mask"]) > 0:
            padding_mask = encoder_out["encoder_padding_mask"][0]
        positions = None
        if self.embed_positions is not None:
            positions = self.embed_positions(prev_output_tokens, incremental_state=incremental_state)
        if incremental_state is not None:
            prev_output_tokens = prev_output_tokens[:, -1:]
            if positions is not None:
                positions = positions[:, -1:]
        prev_output_tokens = prev_output_tokens.contiguous()
        x = self.embed_scale * self.embed_tokens(prev_output_tokens)
        if self.quant_noise is not None:
            x = self.quant_noise(x)
        if self.project_in_dim is not None:
            x = self.project_in_dim(x)
        if positions is not None:
            x += positions
        if self.layernorm_embedding is not None:
            x = self.layernorm_embedding(x)
        x = self.dropout_module(x)
        x = x.transpose(0, 1)  # B x T x C -> T x B x C
        self_attn_padding_mask = None
        if self.cross_self_attention or prev_output_tokens.eq(self.padding_idx).any():
            self_attn_padding_mask = prev_output_tokens.eq(self.padding_idx)
        attn = None
        inner_states = [x]
        parse = []
        kept = self.layer_drop.kept(len(self.layers), self.training)
        for idx, layer in enumerate(nn.ModuleList.__iter__(self.layers)):
            if kept[idx]:
                self_attn_mask = None
                if incremental_state is None and not full_context_alignment:
                    self_attn_mask = self.buffered_future_mask(x)
                x, layer_attn, logp = layer(x, enc, padding_mask, incremental_state, self_attn_mask=self_attn_mask,
                                            self_attn_padding_mask=self_attn_padding_mask,
                                            need_attn=bool(idx == alignment_layer),
                                            need_head_weights=bool(idx == alignment_layer))
                if layer_attn is not None and idx == alignment_layer:
                    attn = layer_attn.float().to(x)
                if idx + 1 == self.dbsa_layer:
                    parse.append(logp)
            inner_states.append(x)
        if attn is not None:
            if alignment_heads is not None:
                attn = attn[:alignment_heads]
            attn = attn.mean(dim=0)  # average probabilities over heads
        if self.layer_norm is not None:
            x = self.layer_norm(x)
        x = x.transpose(0, 1)  # T x B x C -> B x T x C
        if self.project_out_dim is not None:
            x = self.project_out_dim(x)
        extra = {"attn": [attn], "inner_states": inner_states}
        if self.dbsa_layer:
            extra["parse_logprobs"] = parse  # [B x T x T], [] if the layer did not run
        return x, extra
