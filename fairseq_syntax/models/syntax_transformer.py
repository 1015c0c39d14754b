"""``syntax_transformer``: fairseq's transformer with syntax mechanisms as switches (docs/design.md, "One model
family, mechanisms as switches"). Encoder and decoder layers switch mechanisms on independently and they compose,
also within one layer; a layer without one is fairseq's own layer on fairseq's fast path.

* DBSA (Deguchi et al. 2019): a bi-affine parse head in encoder layer ``--dbsa-encoder-layer`` and/or decoder
  layer ``--dbsa-decoder-layer`` (:mod:`fairseq_syntax.modules.dependency_attention`), supervised by
  ``label_smoothed_cross_entropy_with_dependency``; no parse at inference.
* Relative positions (:mod:`fairseq_syntax.modules.relative_positions`): linear (Shaw et al. 2018,
  ``--rel-linear-k``; ``--rel-decoder-k`` in the decoder) and tree depth (Omote et al. 2019, ``--rel-dep-l``;
  ``src_depths``, or the encoder's own parse with ``--self-parse``) in encoder self-attention.
* PASCAL (Bugliarello & Okazaki 2020): the first ``--pascal-heads`` heads of encoder layer ``--pascal-layer``
  scale their scores by a Gaussian around each token's parent (``src_parents``;
  :mod:`fairseq_syntax.modules.parent_scaled_attention`).
* SyncAttn (Deguchi et al. 2021): DBSA parse heads on both sides plus L_sync, which ties the encoder's parse
  attention, mapped through the encoder-decoder attention of decoder layer ``--sync-layer``, to the decoder's
  (:mod:`fairseq_syntax.criterions.sync_loss`); no parse at inference.
* S&H label embeddings (Sennrich & Haddow 2016, as in Bugliarello & Okazaki 2020): each source token's label,
  embedded in ``--label-embed-dim`` dimensions, replaces the last dimensions of its embedding (``src_labels``).

The encoder builds :class:`AttentionInputs` once per batch (:mod:`fairseq_syntax.models.syntax_layers`); the parse
heads' float32 log-probabilities come back as return values (``encoder_parse_logprobs``, the decoder's
``parse_logprobs``) for the criterions; LayerDrop never drops a supervised layer, and a dropped layer keeps its
number (:class:`~fairseq_syntax.models.layer_stack.LayerDrop`). Data flow and decoder parse rows
(``--dbsa-decoder-rows``): docs/design.md. Decoder: :mod:`fairseq_syntax.models.syntax_transformer_decoder`;
presets: :mod:`fairseq_syntax.models.presets`.
"""
from argparse import Namespace
from typing import Optional, Set

import torch
from fairseq.dataclass.utils import gen_parser_from_dataclass
from fairseq.models import register_model
from fairseq.models.transformer import (
    TransformerConfig,
    TransformerEncoder,
    TransformerModel,
)
from omegaconf import OmegaConf
from torch import nn

from fairseq_syntax.data.datasets.syntax_request import SyntaxNeeds
from fairseq_syntax.errors import OptionError
from fairseq_syntax.models.layer_stack import LayerDrop, parse_form, wrap_layer
from fairseq_syntax.models.syntax_layers import (
    AttentionSpec,
    SyntaxEncoderLayer,
)
from fairseq_syntax.models.syntax_transformer_config import (  # noqa: F401  (the config: imported from here too)
    DECODER_ROWS,
    TERMS,
    SyntaxTransformerConfig,
    layer_set,
    relative_terms,
)
from fairseq_syntax.models.syntax_transformer_decoder import SyntaxTransformerDecoder
from fairseq_syntax.models.vanilla_start import complete_from_vanilla, log_start
from fairseq_syntax.data.trees.decoding import (
    eisner_heads,
    subword_word_index,
    tree_inputs,
    word_arc_scores,
)
from fairseq_syntax.modules.relative_positions import depth_buckets
from fairseq_syntax.modules.syntax_attention import AttentionInputs


def _require(value, name: str, what: str):
    if value is None:
        raise OptionError(f"{what} need {name}: train and decode with --task syntax_translation on data with "
                         "source syntax")


#: a forward() input of the syntax task's batches -> what reads it, as a user names it
_INPUTS = {"src_depths": "the source tree depths (--rel-dep-l)", "src_parents": "the source parents (PASCAL, "
           "--pascal-layer)", "src_labels": "the source labels (--label-embed-dim)"}


def _check_task_gives_inputs(model, args, task) -> None:
    """A model whose forward() reads syntax inputs, built on a task whose batches have none (fairseq's
    ``translation``), is refused when it is built, before a trainer exists: at the first step fairseq's trainer
    would save ``crash.pt`` before the error. A self-parsing encoder reads its own tree without src_depths."""
    from fairseq.tasks import TASK_REGISTRY, FairseqTask

    if not isinstance(task, FairseqTask) or callable(getattr(task, "add_model_needs", None)):
        return  # the syntax task collates what the model asks for; a stand-in (tests) gives what it gives
    needed = set(model.syntax_needs().inputs)
    if model.encoder.self_parse:
        needed.discard("src_depths")
    if not needed:
        return
    name = next((k for k, v in TASK_REGISTRY.items() if type(task) is v), type(task).__name__)
    arch = getattr(args, "arch", None) or "syntax_transformer"
    reads = " and ".join(_INPUTS.get(x, x) for x in sorted(needed))
    raise OptionError(f"--arch {arch} reads {reads} from the data, which --task {name} does not give: train and "
                      "decode it with --task syntax_translation on a data-bin with source syntax")


class SyntaxTransformerEncoder(TransformerEncoder):
    """fairseq's transformer encoder whose layers may host syntax mechanisms (:class:`AttentionSpec`).

    ``forward`` takes the task's source syntax fields (``src_depths``, ``src_parents``, ``src_labels``, batch
    coordinates), builds the layers' :class:`AttentionInputs` once, and runs the layer loop itself, passing them
    to each syntax layer and taking the parse head's output from the layer's return value; the output dict is
    fairseq's plus, with a parse head, ``encoder_parse_logprobs`` ([B x T x T log-probabilities]).
    """

    def __init__(self, args, dictionary, embed_tokens):
        self.dbsa_layer = int(getattr(args, "dbsa_encoder_layer", 0) or 0)
        self.rel_linear_k = int(getattr(args, "rel_linear_k", 0) or 0)
        self.rel_dep_l = int(getattr(args, "rel_dep_l", 0) or 0)
        self.pascal_layer = int(getattr(args, "pascal_layer", 0) or 0)
        self.label_embed_dim = int(getattr(args, "label_embed_dim", 0) or 0)
        self.label_embedding: Optional[nn.Embedding] = None  # S&H: attached by the model, which knows the labels
        if self.pascal_layer and self.dbsa_layer:
            raise OptionError("PASCAL heads use 'middle' parents and an encoder parse head is trained on "
                             "--syntax-parent-strategy parents; the task collates one parent strategy per side")
        if not 0 <= self.label_embed_dim < args.encoder_embed_dim:
            raise OptionError(f"--label-embed-dim {self.label_embed_dim} must be below --encoder-embed-dim "
                             f"{args.encoder_embed_dim}")
        for option, layer in (("dbsa-encoder-layer", self.dbsa_layer), ("pascal-layer", self.pascal_layer)):
            if layer > args.encoder_layers:
                raise OptionError(f"--{option} {layer} but the encoder has {args.encoder_layers} layers")
        self.self_parse = bool(getattr(args, "self_parse", False))
        self.self_parse_train = float(getattr(args, "self_parse_train", 0.0) or 0.0)
        self.self_parse_train_after = int(getattr(args, "self_parse_train_after", 0) or 0)
        self.num_updates = 0  # fairseq's task sets it (model.set_num_updates) at each training step
        self.parent_strategy = str(getattr(args, "syntax_parent_strategy", "chain"))
        if self.self_parse:
            if not (self.dbsa_layer and self.rel_dep_l):
                raise OptionError("--self-parse feeds the dependency relative positions (--rel-dep-l) of the layers "
                                  "above the encoder's parse head (--dbsa-encoder-layer): give both")
            if self.pascal_layer or self.label_embed_dim:
                raise OptionError("--self-parse feeds dependency relative positions only (PASCAL's parents and "
                                  "S&H's labels come from a parser)")
            if self.dbsa_layer >= args.encoder_layers:
                raise OptionError(f"--self-parse: the parse head's layer {self.dbsa_layer} must be below the last "
                                  "encoder layer: the layers above it read its tree")
        if not 0.0 <= self.self_parse_train <= 1.0:
            raise OptionError(f"--self-parse-train must be a probability, not {self.self_parse_train}")
        if self.self_parse_train_after < 0:
            raise OptionError(f"--self-parse-train-after must be >= 0 updates, not {self.self_parse_train_after}")
        max_update = int(getattr(args, "max_update", 0) or 0)
        if self.self_parse_train and 0 < max_update <= self.self_parse_train_after:
            raise OptionError(f"--self-parse-train-after {self.self_parse_train_after} is not before --max-update "
                              f"{max_update}: the tree layers would never read the head's own tree (lower it, e.g. "
                              "to the warm-up)")
        self.rel_layers: Set[int] = set()
        if self.rel_linear_k or self.rel_dep_l:
            self.rel_layers = layer_set(getattr(args, "rel_encoder_layers", "all"), args.encoder_layers,
                                         "rel-encoder-layers")
        self.layer_specs = [self.layer_spec(i, args) for i in range(1, args.encoder_layers + 1)]
        # fairseq's __init__ builds the layers in order through build_encoder_layer(args), which is not told
        # the layer's number: it takes the next of these specs
        self._specs_to_build = iter(self.layer_specs)
        super().__init__(args, dictionary, embed_tokens)
        if next(self._specs_to_build, None) is not None:
            raise RuntimeError("fewer encoder layers were built than specified")
        if getattr(args, "rel_no_absolute_positions", False):
            self.embed_positions = None
        self.layer_drop = LayerDrop(self.layers, {self.dbsa_layer - 1} - {-1})
        if self.self_parse:  # which symbols continue into the next subword (subword-nmt's @@): word boundaries
            self.register_buffer("bpe_continues", torch.tensor([s.endswith("@@") for s in dictionary.symbols],
                                                               dtype=torch.bool), persistent=False)

    def layer_spec(self, index: int, args) -> AttentionSpec:
        """What the self-attention of 1-based encoder layer ``index`` hosts."""
        spec = AttentionSpec(index, implementation=str(getattr(args, "rel_implementation", "buckets")))
        if index == self.dbsa_layer:
            spec.parse_bias, spec.parse_scaled = parse_form(args)
        if index == self.pascal_layer:
            spec.pascal = (int(getattr(args, "pascal_heads", 1)), float(getattr(args, "pascal_variance", 1.0)),
                           float(getattr(args, "pascal_ignore_prob", 0.0)),
                           str(getattr(args, "pascal_weights", "gaussian")))
        if index in self.rel_layers:
            if self.rel_linear_k:
                terms = relative_terms(getattr(args, "rel_linear_terms", "key+value"), "rel-linear-terms")
                spec.relative["linear"] = (self.rel_linear_k, *terms)
            if self.rel_dep_l and not (self.self_parse and index <= self.dbsa_layer):  # self-parse: above the head
                terms = relative_terms(getattr(args, "rel_dep_terms", "key+value"), "rel-dep-terms")
                spec.relative["dependency"] = (self.rel_dep_l, *terms)
        return spec

    def build_encoder_layer(self, args):
        spec = next(self._specs_to_build)
        if spec.empty:
            return super().build_encoder_layer(args)
        if self.return_fc:
            raise ValueError("return_fc encoders are not supported with syntax mechanisms")
        cfg = TransformerConfig.from_namespace(args)
        return wrap_layer(SyntaxEncoderLayer(cfg, attention_spec=spec), cfg)

    def attention_inputs(self, src_depths=None, src_parents=None) -> Optional[AttentionInputs]:
        """The syntax layers' per-batch inputs from the task's source fields (checked against the mechanisms)."""
        buckets = parents = None
        if self.rel_dep_l and self.rel_layers:
            _require(src_depths, "src_depths", "dependency relative positions (--rel-dep-l)")
            buckets = depth_buckets(src_depths, self.rel_dep_l)  # once per batch, shared by the layers
        if self.pascal_layer:
            _require(src_parents, "src_parents", "PASCAL heads (--pascal-layer)")
            parents = src_parents
        return AttentionInputs(dependency_buckets=buckets, parents=parents)

    def set_num_updates(self, num_updates: int) -> None:
        """The update count (the model passes fairseq's task's call on to every module), for
        --self-parse-train-after."""
        self.num_updates = num_updates

    def reads_own_tree(self, src_depths) -> bool:
        """Whether this batch's tree layers read the parse head's tree: a self-parsing encoder given no tree
        (parser-free decoding), or in training with probability --self-parse-train once
        --self-parse-train-after updates are done."""
        if not self.self_parse:
            return False
        if src_depths is None:
            return True
        if not self.training or self.self_parse_train <= 0 or self.num_updates < self.self_parse_train_after:
            return False
        return float(torch.rand(())) < self.self_parse_train

    def own_tree(self, src_tokens, parse_logprobs) -> AttentionInputs:
        """The tree inputs of the layers above the parse head from its decoded tree (data/trees/decoding.py):
        the best single-rooted projective tree of its word-level scores, as depth buckets."""
        word = subword_word_index(src_tokens, self.bpe_continues, self.padding_idx, self.dictionary.eos())
        arcs, root = word_arc_scores(parse_logprobs.detach(), word, self.parent_strategy)
        heads = eisner_heads(arcs, root, word.amax(1))
        eos_col = src_tokens.eq(self.dictionary.eos()).long().argmax(1)
        depths, _ = tree_inputs(heads, word, eos_col)
        return AttentionInputs(dependency_buckets=depth_buckets(depths, self.rel_dep_l), parents=None)

    def forward(self, src_tokens, src_lengths=None, return_all_hiddens: bool = False, token_embeddings=None,
                src_depths=None, src_parents=None, src_labels=None):
        """fairseq's encoder forward (``forward_scriptable`` of fairseq 0.12, whose layer loop this is), with the
        syntax inputs (batch coordinates) fed to the mechanisms; a self-parsing encoder's layers above its parse
        head read the head's own tree when the batch carries none (:meth:`reads_own_tree`)."""
        own = self.reads_own_tree(src_depths)
        syntax = None if own else self.attention_inputs(src_depths, src_parents)
        if self.label_embedding is not None:
            _require(src_labels, "src_labels", "label embeddings (--label-embed-dim)")
            if token_embeddings is None:
                token_embeddings = self.embed_tokens(src_tokens)
            token_embeddings = torch.cat(
                [token_embeddings[..., : -self.label_embed_dim], self.label_embedding(src_labels)], dim=-1
            )
        encoder_padding_mask = src_tokens.eq(self.padding_idx)
        has_pads = encoder_padding_mask.any()
        x, encoder_embedding = self.forward_embedding(src_tokens, token_embeddings)
        x = x * (1 - encoder_padding_mask.unsqueeze(-1).type_as(x) * has_pads.type_as(x))
        x = x.transpose(0, 1)  # B x T x C -> T x B x C
        padding = encoder_padding_mask if has_pads else None
        encoder_states = [x] if return_all_hiddens else []
        parse = []
        kept = self.layer_drop.kept(len(self.layers), self.training)
        for i, layer in enumerate(nn.ModuleList.__iter__(self.layers)):
            if kept[i]:
                if self.layer_specs[i].empty:
                    x = layer(x, encoder_padding_mask=padding)
                else:
                    x, logp = layer(x, padding, syntax)
                    if i + 1 == self.dbsa_layer:
                        parse.append(logp)
                        if own:  # the layers above read the tree this head gives
                            syntax = self.own_tree(src_tokens, logp)
            if return_all_hiddens:
                encoder_states.append(x)
        if self.layer_norm is not None:
            x = self.layer_norm(x)
        src_lengths = src_tokens.ne(self.padding_idx).sum(dim=1, dtype=torch.int32).reshape(-1, 1).contiguous()
        out = {
            "encoder_out": [x],  # T x B x C
            "encoder_padding_mask": [encoder_padding_mask],  # B x T
            "encoder_embedding": [encoder_embedding],  # B x T x C
            "encoder_states": encoder_states,  # List[T x B x C]
            "fc_results": [None] * (len(encoder_states) - 1) if return_all_hiddens else [],
            "src_tokens": [],
            "src_lengths": [src_lengths],
        }
        if self.dbsa_layer:
            out["encoder_parse_logprobs"] = parse  # [B x T x T], [] if the layer did not run
        return out


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
                raise OptionError("--sync-layer needs parse heads on both sides (--dbsa-encoder-layer and "
                                 "--dbsa-decoder-layer)")
            if self.sync_layer > len(decoder.layers) or getattr(args, "no_cross_attention", False):
                raise OptionError(f"--sync-layer {self.sync_layer}: the decoder has {len(decoder.layers)} layers "
                                 "with encoder-decoder attention")
            heads = args.decoder_attention_heads
            if not 0 <= self.sync_heads <= heads:
                raise OptionError(f"--sync-heads {self.sync_heads} but decoder layers have {heads} heads")

    @classmethod
    def build_model(cls, args, task):
        if OmegaConf.is_config(args):
            # fairseq-hydra-train (and a checkpoint trained with it) hands a legacy model its DictConfig;
            # fairseq's TransformerConfig.from_namespace keeps only TransformerConfig's fields of a DictConfig
            # (it copies the other keys from vars(args), which a DictConfig does not have), so every syntax
            # option would be dropped without a word: give the model the flat namespace fairseq-train gives
            args = Namespace(**OmegaConf.to_container(args, resolve=True))
        model = super().build_model(args, task)
        _check_task_gives_inputs(model, args, task)
        dim = model.encoder.label_embed_dim
        if dim:
            labels = getattr(task, "src_label_dict", None)
            if labels is None:
                raise OptionError(f"--label-embed-dim {dim} needs the source label dictionary (dict.SRC.labels.txt "
                                 "next to the data, written by preprocess/binarize.py) and --task syntax_translation")
            emb = nn.Embedding(len(labels), dim, padding_idx=labels.pad())
            # the token embeddings' scale (fairseq: N(0, d^-1/2), times sqrt(d) in the encoder)
            nn.init.normal_(emb.weight, mean=0, std=args.encoder_embed_dim ** -0.5)
            nn.init.constant_(emb.weight[labels.pad()], 0)
            model.encoder.label_embedding = emb
        return model

    def load_state_dict(self, state_dict, strict=True, model_cfg=None, args=None):
        """fairseq's, and a vanilla transformer's checkpoint completed with the mechanisms' own parameters, which
        start where the pretrained function is kept wherever the mechanism allows (:mod:`.vanilla_start`)."""
        state_dict, started = complete_from_vanilla(self.state_dict(), state_dict)
        log_start(started)
        return super().load_state_dict(state_dict, strict=strict, model_cfg=model_cfg, args=args)

    @classmethod
    def from_pretrained(cls, model_name_or_path, checkpoint_file="model.pt", data_name_or_path=".", **kwargs):
        """A hub interface that translates raw text, the parse inside (:mod:`fairseq_syntax.inference.hub`)."""
        from fairseq_syntax.inference.hub_interface import load_hub

        return load_hub(model_name_or_path, checkpoint_file, data_name_or_path, **kwargs)

    def syntax_needs(self) -> SyntaxNeeds:
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
        return SyntaxNeeds(  # a parent strategy only for a side whose parents the model reads
            source=frozenset(source), target=frozenset(target), inputs=frozenset(inputs),
            strategy=("middle" if enc.pascal_layer else strategy) if "parents" in source else None,
            target_strategy=strategy if "parents" in target else None,
            # target fields aligned with sample["target"] (predicting rows) or with prev_output_tokens
            target_coordinates=("target" if self.decoder.rows == "predicting" else "decoder_input") if target else None,
        )

    def forward(self, src_tokens, src_lengths, prev_output_tokens, return_all_hiddens: bool = True,
                features_only: bool = False, alignment_layer=None, alignment_heads=None, src_depths=None,
                src_parents=None, src_labels=None):
        """fairseq's encoder-decoder forward, plus the encoder's syntax inputs (the batch's ``net_input`` fields
        that :meth:`syntax_needs` asks for; see :meth:`SyntaxTransformerEncoder.forward`)."""
        encoder_out = self.encoder(src_tokens, src_lengths=src_lengths, return_all_hiddens=return_all_hiddens,
                                   src_depths=src_depths, src_parents=src_parents, src_labels=src_labels)
        decoder_out = self.decoder(prev_output_tokens, encoder_out=encoder_out, features_only=features_only,
                                   alignment_layer=alignment_layer, alignment_heads=alignment_heads,
                                   src_lengths=src_lengths, return_all_hiddens=return_all_hiddens)
        if self.encoder.dbsa_layer:  # for the dependency loss
            decoder_out[1]["encoder_parse_logprobs"] = encoder_out["encoder_parse_logprobs"]
        return decoder_out
