"""``syntax_transformer``: fairseq's transformer with syntax mechanisms as switches.

One registered model (DESIGN.md, "One model family, features as switches")
whose encoder and decoder layers switch mechanisms on independently. Layers
without a mechanism are fairseq's own layers on fairseq's fast path.

Mechanisms (each a switch; they compose, also within one layer):

* DBSA, dependency-based self-attention (Deguchi et al. 2019): a bi-affine
  parse head in encoder layer p_e (``--dbsa-encoder-layer``) and/or decoder
  layer p_d (``--dbsa-decoder-layer``), see
  :mod:`fairseq_syntax.modules.dependency_attention`. It is supervised by the
  ``label_smoothed_cross_entropy_with_dependency`` criterion and needs no
  parse at inference.
* Relative positions in encoder self-attention: linear (Shaw et al. 2018,
  ``--rel-linear-k``) and tree-depth (Omote et al. 2019, ``--rel-dep-l``),
  key and/or value terms, in all or chosen encoder layers, see
  :mod:`fairseq_syntax.modules.relative_positions`. Depth positions need the
  source parse at training and at inference (``src_depths``). Linear
  relative positions in every decoder self-attention layer
  (``--rel-decoder-k``: Shaw et al. 2018 have them on both sides), with
  incremental decoding.
* PASCAL, parent-scaled self-attention (Bugliarello & Okazaki 2020): the
  first ``--pascal-heads`` heads of encoder layer ``--pascal-layer`` scale
  their scores by a Gaussian around each token's parent (``middle`` parents),
  see :mod:`fairseq_syntax.modules.parent_scaled_attention`. Needs the source
  parse at inference (``src_parents``).
* SyncAttn, synchronous syntactic attention (Deguchi et al. 2021): DBSA
  parse heads on both sides plus, in the criterion
  ``label_smoothed_cross_entropy_with_sync``, a loss that ties the encoder's
  parse attention, mapped through the encoder-decoder attention of decoder
  layer ``--sync-layer``, to the decoder's (see
  :mod:`fairseq_syntax.criterions.sync_loss`). No parse at inference.
* S&H dependency-label embeddings (Sennrich & Haddow 2016, as in Bugliarello
  & Okazaki 2020): each source token's label, embedded in
  ``--label-embed-dim`` dimensions, replaces the last dimensions of its token
  embedding (``src_labels``).

Parse heads hand their output back through the layers' return values (a
layer with a parse head returns its float32 log-probabilities as one more
output, which :class:`_SyntaxLayerMixin` takes off again in ``__call__``,
i.e. after fairseq's activation-checkpoint or FSDP wrapper has run): the
tensor is this forward's, with its graph, under ``--checkpoint-activations``
too. With LayerDrop the supervised layers (parse heads, the SyncAttn layer)
are never dropped, and a dropped layer keeps its number (fairseq's
``alignment_layer`` counts the layers that ran), see
:class:`SupervisedLayerDrop`.

Decoder parse rows (``--dbsa-decoder-rows``): ``predicting`` (default, as in
the authors' DBSA code, de9uch1/dbsa) pairs row i with the decoder state that
predicts target token i (its input is the token before; the one fairseq's
encoder-decoder attention aligns with it) and the parent with the state that
predicts the parent; ``input`` pairs both with the state whose input is the
token. The task collates target parents in the matching coordinates.

Named architectures (presets) are in :mod:`fairseq_syntax.models.presets`.
"""
from argparse import Namespace
from dataclasses import dataclass, field
from typing import Dict, Optional, Set, Tuple

import torch
from omegaconf import OmegaConf
from torch import nn

from fairseq.distributed import fsdp_wrap
from fairseq.dataclass import ChoiceEnum, FairseqDataclass
from fairseq.dataclass.utils import gen_parser_from_dataclass
from fairseq.models import register_model
from fairseq.models.transformer import TransformerConfig, TransformerDecoder, TransformerEncoder, TransformerModel
from fairseq.modules import LayerDropModuleList
from fairseq.modules.checkpoint_activations import checkpoint_wrapper
from fairseq.modules.transformer_layer import TransformerDecoderLayerBase, TransformerEncoderLayerBase

from fairseq_syntax.data.parent_strategies import STRATEGIES
from fairseq_syntax.modules.dependency_attention import BIASES, BiaffineParseHead
from fairseq_syntax.modules.parent_scaled_attention import WEIGHT_FUNCTIONS, ParentScaledHeads
from fairseq_syntax.modules.relative_positions import IMPLEMENTATIONS, RelativePositionTerms, depth_buckets
from fairseq_syntax.modules.syntax_attention import SyntaxSelfAttention

TERMS = ("key+value", "key", "value")
DECODER_ROWS = ("predicting", "input")


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
    dbsa_bias: ChoiceEnum(BIASES) = field(
        default="query",
        metadata={"help": "bias term of the bi-affine scores: 'query' = Q U2 as printed in Deguchi et al. 2019 "
                  "Eq. 14 (constant per row, so it cancels in the softmax), 'key' = K u (Dozat & Manning's head "
                  "prior; the authors' code), 'none' = Deguchi et al. 2021 Eq. 4 (the SyncAttn presets)"},
    )
    dbsa_scaled: bool = field(
        default=False,
        metadata={"help": "divide the bi-affine scores by sqrt(d_head): softmax(Q U K^T / sqrt(d_k)) of Deguchi "
                  "et al. 2021 Eq. 4 (the SyncAttn presets; the 2019 Eq. 14 is unscaled)"},
    )
    dbsa_decoder_rows: ChoiceEnum(DECODER_ROWS) = field(
        default="predicting",
        metadata={"help": "which decoder state a parse-head row and its parent column stand for: 'predicting' "
                  "(default; the authors' DBSA code): row i is the state that predicts target token i (input: "
                  "token i-1; the row fairseq's encoder-decoder attention aligns with token i, as SyncAttn's "
                  "C E C^T needs), its parent the state that predicts the parent; 'input': the states whose "
                  "input is the token (this plugin before 2026-11)"},
    )
    syntax_parent_strategy: ChoiceEnum(STRATEGIES) = field(
        default="chain",
        metadata={"help": "subword parent strategy the parse heads are trained for: chain for DBSA, first for "
                  "SISA; the task's --parent-strategy auto (default) adopts it"},
    )
    rel_linear_k: int = field(
        default=0,
        metadata={"help": "relative positions (Shaw et al. 2018) in encoder self-attention: clipping distance "
                  "k of j - i (Omote et al. 2019 Eq. 13-15; the paper uses 2); 0 = off"},
    )
    rel_decoder_k: int = field(
        default=0,
        metadata={"help": "relative positions (Shaw et al. 2018) in every decoder self-attention layer: "
                  "clipping distance k (Omote et al.'s Transformer_rel baseline: 2, terms as --rel-linear-terms); "
                  "0 = off"},
    )
    rel_dep_l: int = field(
        default=0,
        metadata={"help": "dependency relative positions (Omote et al. 2019) in encoder self-attention: "
                  "clipping distance l of depth(j) - depth(i) (Eq. 16-20; the paper uses 2); 0 = off. Needs "
                  "the source parse at training and decoding time"},
    )
    rel_linear_terms: ChoiceEnum(TERMS) = field(
        default="key+value",
        metadata={"help": "which linear relative terms: a^K in the scores (Eq. 12), a^V in the outputs "
                  "(Eq. 11), or both"},
    )
    rel_dep_terms: ChoiceEnum(TERMS) = field(
        default="key+value",
        metadata={"help": "which dependency relative terms: b^K in the scores (Eq. 18), b^V in the outputs "
                  "(Eq. 17), or both (the ablation of Omote et al. Table 3)"},
    )
    rel_encoder_layers: str = field(
        default="all",
        metadata={"help": "encoder layers with relative positions: 'all' or a comma list of 1-based "
                  "layers, e.g. '1,2'"},
    )
    rel_no_absolute_positions: bool = field(
        default=False,
        metadata={"help": "drop the encoder's absolute sinusoidal positions (the ablation setting of "
                  "Omote et al. Sec. 5.3); fairseq's --no-token-positional-embeddings drops both sides'"},
    )
    pascal_layer: int = field(
        default=0,
        metadata={"help": "PASCAL (Bugliarello & Okazaki 2020): 1-based encoder layer l_s with parent-scaled "
                  "heads (the paper: 1); 0 = off. Needs the source parse at training and decoding time"},
    )
    pascal_heads: int = field(
        default=1,
        metadata={"help": "h_pascal: how many of that layer's heads are parent-scaled (the first ones; the "
                  "paper's Table 2: 2 to 8 of 8)"},
    )
    pascal_variance: float = field(
        default=1.0,
        metadata={"help": "sigma^2 of the Gaussian around each token's parent (Eq. 6; the paper: 1)"},
    )
    pascal_weights: ChoiceEnum(WEIGHT_FUNCTIONS) = field(
        default="gaussian",
        metadata={"help": "D^p of the parent-scaled heads: 'gaussian' = N(j | p_t, sigma^2) (Eq. 6), "
                  "'parent-only' = 1 on the parent's positions (|j - p_t| < 1), 0 elsewhere (Table 7b)"},
    )
    pascal_ignore_prob: float = field(
        default=0.0,
        metadata={"help": "parent ignoring q: in training, each token's parent weights are set to ones with "
                  "this probability (the paper's Table 2: 0 to 0.4); never at inference"},
    )
    label_embed_dim: int = field(
        default=0,
        metadata={"help": "S&H baseline (Sennrich & Haddow 2016): embed each source token's dependency label in "
                  "this many dimensions, replacing the last dimensions of its token embedding (the paper: "
                  "10); 0 = off. Needs the source parse and dict.SRC.labels.txt"},
    )
    sync_layer: int = field(
        default=0,
        metadata={"help": "SyncAttn (Deguchi et al. 2021): 1-based decoder layer l_sync whose encoder-decoder "
                  "attention C maps the encoder parse attention into the target (Eq. 7; the paper: 5); 0 = off. "
                  "Needs --dbsa-encoder-layer and --dbsa-decoder-layer, and the criterion "
                  "label_smoothed_cross_entropy_with_sync"},
    )
    sync_heads: int = field(
        default=0,
        metadata={"help": "SyncAttn: C is the average of the first N cross-attention heads of layer l_sync; "
                  "0 (default) = all heads"},
    )
    rel_implementation: ChoiceEnum(IMPLEMENTATIONS) = field(
        default="buckets",
        metadata={"help": "buckets (default): gather/scatter over the 2c+1 distance buckets; materialised: "
                  "the B x T x T x d reference form of the equations, for tests and the benchmark only"},
    )


@dataclass
class AttentionSpec:
    """The mechanisms of one layer's self-attention."""

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


class _SyntaxLayerMixin:
    """A fairseq transformer layer whose self-attention hosts syntax mechanisms.

    With a parse head, ``forward`` returns fairseq's outputs plus the head's
    log-probabilities as a last element: outputs of the (possibly
    activation-checkpointed) forward carry their graph, module attributes
    written inside a checkpointed forward do not. ``__call__`` (which runs
    the checkpoint / FSDP wrappers' forward) takes that element off again,
    so fairseq's layer loops see the outputs they expect, and keeps it in
    ``parse_output`` until the encoder or decoder takes it
    (:meth:`take_parse_output`) at the end of the same forward.
    """

    def __init__(self, cfg, *args, attention_spec: AttentionSpec, **kwargs):
        object.__setattr__(self, "_attention_spec", attention_spec)  # read during super().__init__
        super().__init__(cfg, *args, **kwargs)
        self.has_parse_head = attention_spec.parse_bias is not None
        self.parse_output = None

    def build_self_attention(self, embed_dim, cfg, *args, **kwargs):
        encoder = isinstance(self, TransformerEncoderLayerBase)
        heads = cfg.encoder.attention_heads if encoder else cfg.decoder.attention_heads
        return self._attention_spec.build(embed_dim, heads, cfg.attention_dropout)

    def forward(self, *args, **kwargs):
        out = super().forward(*args, **kwargs)
        if not self.has_parse_head:
            return out
        parse = self.self_attn.take_parse_output()
        return (out, parse) if isinstance(out, torch.Tensor) else (*out, parse)

    def __call__(self, *args, **kwargs):
        out = super().__call__(*args, **kwargs)
        if not self.has_parse_head:
            return out
        *out, self.parse_output = out
        return out[0] if len(out) == 1 else tuple(out)

    def take_parse_output(self):
        out, self.parse_output = self.parse_output, None
        return out


class SyntaxEncoderLayer(_SyntaxLayerMixin, TransformerEncoderLayerBase):
    pass


class SyntaxDecoderLayer(_SyntaxLayerMixin, TransformerDecoderLayerBase):
    pass


class _Skipped:
    """What a dropped layer does under :class:`SupervisedLayerDrop`: return its input."""

    def __init__(self, decoder: bool):
        self.decoder = decoder

    def __call__(self, x, *args, **kwargs):
        return (x, None, None) if self.decoder else x


class SupervisedLayerDrop(LayerDropModuleList):
    """fairseq's LayerDrop (Fan et al. 2020) that never drops the layers in ``keep``.

    The parse-head layers and the SyncAttn layer produce what the criterion
    supervises; dropping them would leave the loss without this batch's
    tensor. A dropped layer is replaced by the identity instead of being
    skipped, so fairseq's decoder, which numbers the layers it iterates over
    when it picks ``alignment_layer``, still reads the cross-attention of the
    right layer. The random draw is fairseq's (one uniform per layer and
    iteration).
    """

    def __init__(self, p, modules, keep, decoder: bool):
        super().__init__(p, modules)
        object.__setattr__(self, "keep", frozenset(keep))  # 0-based
        object.__setattr__(self, "_skipped", _Skipped(decoder))

    def __iter__(self):
        dropout_probs = torch.empty(len(self)).uniform_()
        for i, m in enumerate(nn.ModuleList.__iter__(self)):
            if not self.training or i in self.keep or dropout_probs[i] > self.p:
                yield m
            else:
                yield self._skipped


def _keep_supervised_layers(layers, keep, decoder: bool):
    """Swap fairseq's LayerDrop list for :class:`SupervisedLayerDrop` when some layers must stay."""
    if isinstance(layers, LayerDropModuleList) and keep:
        return SupervisedLayerDrop(layers.p, list(nn.ModuleList.__iter__(layers)), keep, decoder)
    return layers


def _syntax_layer(layer):
    """The :class:`_SyntaxLayerMixin` inside fairseq's wrappers (FSDP), or None."""
    for m in layer.modules():
        if isinstance(m, _SyntaxLayerMixin):
            return m
    return None


def _take_parse_output(layers, index: int):
    """This forward's parse log-probabilities of 1-based layer ``index`` (None if it did not run)."""
    layer = _syntax_layer(layers[index - 1])
    return layer.take_parse_output() if layer is not None else None


def _forward_taking_parse(layers, index: int, forward):
    """Run ``forward()`` and return (its result, [parse log-probabilities of layer ``index``] or [])."""
    _take_parse_output(layers, index)  # nothing left over from an interrupted forward
    out = forward()
    parse = _take_parse_output(layers, index)
    return out, [parse] if parse is not None else []


def _wrap(layer, cfg):
    """fairseq's activation checkpointing and FSDP wrapping of a layer (as its build_*_layer does)."""
    if cfg.checkpoint_activations:
        layer = checkpoint_wrapper(layer, offload_to_cpu=cfg.offload_activations)
    return fsdp_wrap(layer, min_num_params=cfg.min_params_to_wrap if not cfg.checkpoint_activations else 0)


def _terms(value) -> Tuple[bool, bool]:
    value = str(value)
    if value not in TERMS:
        raise ValueError(f"relative terms must be one of {TERMS}, not {value!r}")
    return "key" in value, "value" in value


def _layer_set(value, num_layers: int, option: str) -> Set[int]:
    value = str(value).strip()
    if value == "all":
        return set(range(1, num_layers + 1))
    try:
        layers = {int(x) for x in value.split(",") if x.strip()}
    except ValueError:
        raise ValueError(f"--{option} must be 'all' or a comma list of layer numbers, not {value!r}") from None
    bad = sorted(x for x in layers if not 1 <= x <= num_layers)
    if bad:
        raise ValueError(f"--{option}: layer(s) {bad} out of range 1..{num_layers}")
    return layers


def _parse_form(args) -> Tuple[str, bool]:
    return str(getattr(args, "dbsa_bias", "query")), bool(getattr(args, "dbsa_scaled", False))


def _require(value, name: str, what: str):
    if value is None:
        raise ValueError(f"{what} need {name}: train and decode with --task syntax_translation on data with "
                         "source syntax")


class SyntaxTransformerEncoder(TransformerEncoder):
    def __init__(self, args, dictionary, embed_tokens):
        self.dbsa_layer = int(getattr(args, "dbsa_encoder_layer", 0) or 0)
        self.rel_linear_k = int(getattr(args, "rel_linear_k", 0) or 0)
        self.rel_dep_l = int(getattr(args, "rel_dep_l", 0) or 0)
        self.pascal_layer = int(getattr(args, "pascal_layer", 0) or 0)
        self.label_embed_dim = int(getattr(args, "label_embed_dim", 0) or 0)
        self.label_embedding: Optional[nn.Embedding] = None  # S&H: attached by the model, which knows the labels
        if self.pascal_layer and self.dbsa_layer:
            raise ValueError("PASCAL heads use 'middle' parents and an encoder parse head is trained on "
                             "--syntax-parent-strategy parents; the task collates one parent strategy per side")
        if not 0 <= self.label_embed_dim < args.encoder_embed_dim:
            raise ValueError(f"--label-embed-dim {self.label_embed_dim} must be below --encoder-embed-dim "
                             f"{args.encoder_embed_dim}")
        self.rel_layers: Set[int] = set()
        if self.rel_linear_k or self.rel_dep_l:
            self.rel_layers = _layer_set(getattr(args, "rel_encoder_layers", "all"), args.encoder_layers,
                                         "rel-encoder-layers")
        self._built = 0
        super().__init__(args, dictionary, embed_tokens)
        for option, layer in (("dbsa-encoder-layer", self.dbsa_layer), ("pascal-layer", self.pascal_layer)):
            if layer > len(self.layers):
                raise ValueError(f"--{option} {layer} but the encoder has {len(self.layers)} layers")
        if getattr(args, "rel_no_absolute_positions", False):
            self.embed_positions = None
        self.layers = _keep_supervised_layers(self.layers, {self.dbsa_layer - 1} - {-1}, decoder=False)

    def layer_spec(self, index: int, args) -> AttentionSpec:
        """What the self-attention of 1-based encoder layer ``index`` hosts."""
        spec = AttentionSpec(implementation=str(getattr(args, "rel_implementation", "buckets")))
        if index == self.dbsa_layer:
            spec.parse_bias, spec.parse_scaled = _parse_form(args)
        if index == self.pascal_layer:
            spec.pascal = (int(getattr(args, "pascal_heads", 1)), float(getattr(args, "pascal_variance", 1.0)),
                           float(getattr(args, "pascal_ignore_prob", 0.0)),
                           str(getattr(args, "pascal_weights", "gaussian")))
        if index in self.rel_layers:
            if self.rel_linear_k:
                spec.relative["linear"] = (self.rel_linear_k, *_terms(getattr(args, "rel_linear_terms", "key+value")))
            if self.rel_dep_l:
                spec.relative["dependency"] = (self.rel_dep_l, *_terms(getattr(args, "rel_dep_terms", "key+value")))
        return spec

    def build_encoder_layer(self, args):
        self._built += 1
        spec = self.layer_spec(self._built, args)
        if spec.empty:
            return super().build_encoder_layer(args)
        cfg = TransformerConfig.from_namespace(args)
        return _wrap(SyntaxEncoderLayer(cfg, return_fc=self.return_fc, attention_spec=spec), cfg)

    def forward(self, src_tokens, src_lengths=None, return_all_hiddens: bool = False, token_embeddings=None,
                src_depths=None, src_parents=None, src_labels=None):
        """fairseq's encoder forward; the syntax inputs (batch coordinates) feed the mechanisms."""
        if self.rel_dep_l:
            _require(src_depths, "src_depths", "dependency relative positions (--rel-dep-l)")
            buckets = depth_buckets(src_depths, self.rel_dep_l)  # once per batch, shared by the layers
            for i in self.rel_layers:
                self.layers[i - 1].self_attn.syntax_inputs["dependency_buckets"] = buckets
        if self.pascal_layer:
            _require(src_parents, "src_parents", "PASCAL heads (--pascal-layer)")
            self.layers[self.pascal_layer - 1].self_attn.syntax_inputs["parents"] = src_parents
        if self.label_embedding is not None:
            _require(src_labels, "src_labels", "label embeddings (--label-embed-dim)")
            if token_embeddings is None:
                token_embeddings = self.embed_tokens(src_tokens)
            token_embeddings = torch.cat(
                [token_embeddings[..., : -self.label_embed_dim], self.label_embedding(src_labels)], dim=-1
            )
        def forward():
            return super(SyntaxTransformerEncoder, self).forward(src_tokens, src_lengths, return_all_hiddens,
                                                                 token_embeddings)

        if not self.dbsa_layer:
            return forward()
        out, out["encoder_parse_logprobs"] = _forward_taking_parse(self.layers, self.dbsa_layer, forward)
        return out


class SyntaxTransformerDecoder(TransformerDecoder):
    def __init__(self, args, dictionary, embed_tokens, no_encoder_attn=False, output_projection=None):
        self.dbsa_layer = int(getattr(args, "dbsa_decoder_layer", 0) or 0)
        self.rel_k = int(getattr(args, "rel_decoder_k", 0) or 0)
        self.rows = str(getattr(args, "dbsa_decoder_rows", "predicting"))
        if self.rows not in DECODER_ROWS:
            raise ValueError(f"--dbsa-decoder-rows must be one of {DECODER_ROWS}, not {self.rows!r}")
        self._built = 0
        super().__init__(args, dictionary, embed_tokens, no_encoder_attn, output_projection)
        if self.dbsa_layer > len(self.layers):
            raise ValueError(f"--dbsa-decoder-layer {self.dbsa_layer} but the decoder has {len(self.layers)} layers")
        sync = int(getattr(args, "sync_layer", 0) or 0)
        self.layers = _keep_supervised_layers(self.layers, {self.dbsa_layer - 1, sync - 1} - {-1}, decoder=True)

    def layer_spec(self, index: int, args) -> AttentionSpec:
        """What the self-attention of 1-based decoder layer ``index`` hosts."""
        spec = AttentionSpec(implementation=str(getattr(args, "rel_implementation", "buckets")))
        if index == self.dbsa_layer:
            spec.parse_bias, spec.parse_scaled = _parse_form(args)
        if self.rel_k:
            spec.relative["linear"] = (self.rel_k, *_terms(getattr(args, "rel_linear_terms", "key+value")))
        return spec

    def build_decoder_layer(self, args, no_encoder_attn=False):
        self._built += 1
        spec = self.layer_spec(self._built, args)
        if spec.empty:
            return super().build_decoder_layer(args, no_encoder_attn)
        cfg = TransformerConfig.from_namespace(args)
        return _wrap(SyntaxDecoderLayer(cfg, no_encoder_attn, attention_spec=spec), cfg)

    def extract_features(self, prev_output_tokens, encoder_out=None, incremental_state=None, full_context_alignment=False,
                         alignment_layer=None, alignment_heads=None):
        def forward():
            return super(SyntaxTransformerDecoder, self).extract_features(
                prev_output_tokens, encoder_out, incremental_state, full_context_alignment, alignment_layer,
                alignment_heads)

        if not self.dbsa_layer:
            return forward()
        (x, extra), extra["parse_logprobs"] = _forward_taking_parse(self.layers, self.dbsa_layer, forward)
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

    def __init__(self, args, encoder, decoder):
        super().__init__(args, encoder, decoder)
        self.sync_layer = int(getattr(args, "sync_layer", 0) or 0)
        self.sync_heads = int(getattr(args, "sync_heads", 0) or 0)
        if self.sync_layer:
            if not (encoder.dbsa_layer and decoder.dbsa_layer):
                raise ValueError("--sync-layer needs parse heads on both sides (--dbsa-encoder-layer and "
                                 "--dbsa-decoder-layer)")
            if self.sync_layer > len(decoder.layers) or getattr(args, "no_cross_attention", False):
                raise ValueError(f"--sync-layer {self.sync_layer}: the decoder has {len(decoder.layers)} layers "
                                 "with encoder-decoder attention")
            heads = args.decoder_attention_heads
            if not 0 <= self.sync_heads <= heads:
                raise ValueError(f"--sync-heads {self.sync_heads} but decoder layers have {heads} heads")

    @classmethod
    def build_model(cls, args, task):
        if OmegaConf.is_config(args):
            # fairseq-hydra-train (and a checkpoint trained with it) hands a legacy model its DictConfig;
            # fairseq's TransformerConfig.from_namespace keeps only TransformerConfig's fields of a DictConfig
            # (it copies the other keys from vars(args), which a DictConfig does not have), so every syntax
            # option would be dropped without a word: give the model the flat namespace fairseq-train gives
            args = Namespace(**OmegaConf.to_container(args, resolve=True))
        model = super().build_model(args, task)
        dim = model.encoder.label_embed_dim
        if dim:
            labels = getattr(task, "src_label_dict", None)
            if labels is None:
                raise ValueError(f"--label-embed-dim {dim} needs the source label dictionary (dict.SRC.labels.txt "
                                 "next to the data, written by preprocess/binarize.py) and --task syntax_translation")
            emb = nn.Embedding(len(labels), dim, padding_idx=labels.pad())
            # the token embeddings' scale (fairseq: N(0, d^-1/2), times sqrt(d) in the encoder)
            nn.init.normal_(emb.weight, mean=0, std=args.encoder_embed_dim ** -0.5)
            nn.init.constant_(emb.weight[labels.pad()], 0)
            model.encoder.label_embedding = emb
        return model

    def syntax_needs(self):
        """What the syntax_translation task must collate for this model."""
        enc = self.encoder
        source, target, inputs = [], [], []
        if enc.dbsa_layer or enc.pascal_layer:
            source.append("parents")  # DBSA/SISA: supervision only; PASCAL: an input
        if enc.pascal_layer:
            inputs.append("src_parents")
        if self.decoder.dbsa_layer:
            target.append("parents")
        if enc.rel_dep_l and enc.rel_layers:
            source.append("depths")
            inputs.append("src_depths")
        if enc.label_embedding is not None:
            source.append("labels")
            inputs.append("src_labels")
        strategy = str(getattr(self.args, "syntax_parent_strategy", "chain"))
        return {
            "source": source,
            "target": target,
            "inputs": inputs,  # model inputs: a split without these source fields cannot be decoded
            "strategy": "middle" if enc.pascal_layer else strategy,
            "target_strategy": strategy,
            # target fields aligned with sample["target"] (predicting rows) or with prev_output_tokens
            "target_coordinates": "target" if self.decoder.rows == "predicting" else "decoder_input",
        }

    def forward(self, src_tokens, src_lengths, prev_output_tokens, return_all_hiddens: bool = True,
                features_only: bool = False, alignment_layer=None, alignment_heads=None, **syntax_inputs):
        """fairseq's encoder-decoder forward, plus the syntax inputs of the encoder (src_depths, ...)."""
        encoder_out = self.encoder(src_tokens, src_lengths=src_lengths, return_all_hiddens=return_all_hiddens,
                                   **syntax_inputs)
        decoder_out = self.decoder(prev_output_tokens, encoder_out=encoder_out, features_only=features_only,
                                   alignment_layer=alignment_layer, alignment_heads=alignment_heads,
                                   src_lengths=src_lengths, return_all_hiddens=return_all_hiddens)
        if self.encoder.dbsa_layer:  # for the dependency loss
            decoder_out[1]["encoder_parse_logprobs"] = encoder_out["encoder_parse_logprobs"]
        return decoder_out
