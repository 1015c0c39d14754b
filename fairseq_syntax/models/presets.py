"""The named architectures (``--arch``) of the plugin's two models: one table, the one place their settings live.

Each :class:`Preset` names its model, the options it sets (defaults: options given on the command line win,
fairseq's convention), the options of its ``_tiny`` variant (for tests and CPU demos), the paper, and the
entry of the table of training settings (:mod:`fairseq_syntax.settings`, ``DATASET:MODEL``) whose settings its
``fairseq-hydra-train`` config carries (None for a mechanism no paper's recipe trains: its config carries the
settings of its model's baseline, docs/extending.md): the hydra configs in ``fairseq_syntax/config`` are generated
from the two tables (docs/hydra.md), and a test checks they are in sync.

Base sizes follow each paper (Transformer base: 6+6 layers, d 512, 8 heads, FFN 2048; the LSTMs: d 256). The
tiny sizes are 2+2 layers, d 32, 4 heads (transformers) and d 32 (LSTMs).
"""
from dataclasses import dataclass, field, fields
from typing import Dict, Optional

from fairseq.models import register_model_architecture
from fairseq.models.transformer.transformer_legacy import base_architecture

from fairseq_syntax.models.attention_lstm import AttentionLSTMConfig
from fairseq_syntax.models.syntax_transformer import (
    SyntaxTransformerConfig,  # registers the model first
)


@dataclass(frozen=True)
class Preset:
    model: str  # the registered model: syntax_transformer | attention_lstm
    paper: str
    recipe: Optional[str]  # DATASET:MODEL of fairseq_syntax.settings: the preset's training settings (hydra config);
    # None: no recipe trains it (an extension)
    options: Dict[str, object] = field(default_factory=dict)
    tiny: Optional[Dict[str, object]] = None  # the _tiny variant's own options (beyond the tiny sizes); None: none


#: the tiny sizes of each model
TINY = {
    "syntax_transformer": {f"{side}_{key}": value for side in ("encoder", "decoder")
                           for key, value in (("layers", 2), ("embed_dim", 32), ("ffn_embed_dim", 64),
                                              ("attention_heads", 4))},
    "attention_lstm": {"embed_dim": 32},
}
#: every option off / at its default, as the models declare them (what a preset does not set)
DEFAULTS = {
    "syntax_transformer": {f.name: f.default for f in fields(SyntaxTransformerConfig) if not f.name.startswith("_")},
    "attention_lstm": {f.name: f.default for f in fields(AttentionLSTMConfig) if not f.name.startswith("_")},
}

# the 2021 form of the dependency attention (SyncAttn, Deguchi et al. 2021 Eq. 4): softmax(Q U K^T / sqrt(d_k)),
# no bias
_SYNC_FORM = dict(dbsa_bias="none", dbsa_scaled=True)

PRESETS: Dict[str, Preset] = {
    # the model with every mechanism off: fairseq's transformer (trained as Omote et al. train their baseline)
    "syntax_transformer": Preset("syntax_transformer", "Vaswani et al. 2017", "aspec-ja-en:omote19-transformer",
                                 tiny={}),
    # DBSA (Deguchi et al. 2019): parse heads in encoder layer 4 and decoder layer 4 (tiny: 2)
    "transformer_dbsa": Preset("syntax_transformer", "Deguchi et al. 2019", "aspec-ja-en:deguchi19-dbsa",
                               dict(dbsa_encoder_layer=4, dbsa_decoder_layer=4),
                               dict(dbsa_encoder_layer=2, dbsa_decoder_layer=2)),
    "transformer_dbsa_enc": Preset("syntax_transformer", "Deguchi et al. 2019", "aspec-ja-en:deguchi19-dbsa_enc",
                                   dict(dbsa_encoder_layer=4)),
    "transformer_dbsa_dec": Preset("syntax_transformer", "Deguchi et al. 2019", "aspec-ja-en:deguchi19-dbsa_dec",
                                   dict(dbsa_decoder_layer=4)),
    # SISA (the PASCAL paper's LISA re-implementation): an encoder parse head on 'first' parents
    "transformer_sisa": Preset("syntax_transformer", "Bugliarello & Okazaki 2020", "wat-en-ja:sisa",
                               dict(dbsa_encoder_layer=4, syntax_parent_strategy="first"),
                               dict(dbsa_encoder_layer=2, syntax_parent_strategy="first")),
    # Relative positions (Omote et al. 2019, Sec. 5.1), every encoder layer: Transformer_rel is Shaw et al. (2018),
    # linear relative positions (k = 2) in the encoder and the decoder self-attention; Transformer_dep: tree depths
    # (l = 2) in the encoder, the decoder as the absolute-position baseline (no target tree at inference);
    # Transformer_dep+rel: both summed in the encoder (Eq. 21-22) and Shaw's decoder (Omote et al. leave
    # dependency positions in the decoder to future work, Sec. 6)
    **{name: Preset("syntax_transformer", "Omote et al. 2019" if l_dep else "Shaw et al. 2018",
                    f"aspec-ja-en:omote19-{name[len('transformer_'):]}",
                    dict(rel_linear_k=k, rel_dep_l=l_dep, rel_decoder_k=k), dict(rel_linear_k=k, rel_dep_l=l_dep,
                                                                                 rel_decoder_k=k))
       for name, k, l_dep in (("transformer_rel", 2, 0), ("transformer_dep", 0, 2), ("transformer_dep_rel", 2, 2))},
    # parser-free decoding: Omote et al.'s dep+rel whose tree comes, at inference, from its own encoder parse head
    # (DBSA's, in layer 2 of 6, trained on the parser's trees; tiny: 1 of 2); the dependency terms sit above it
    "transformer_dep_rel_self": Preset("syntax_transformer", "Omote et al. 2019 + Deguchi et al. 2019",
                                       "tanaka-ja-en:dep_rel_self",
                                       dict(rel_linear_k=2, rel_dep_l=2, rel_decoder_k=2, dbsa_encoder_layer=2,
                                            self_parse=True),
                                       dict(rel_linear_k=2, rel_dep_l=2, rel_decoder_k=2, dbsa_encoder_layer=1,
                                            self_parse=True)),
    # PASCAL (Bugliarello & Okazaki 2020): parent-scaled heads in encoder layer 1, sigma^2 = 1, q = 0. h_pascal and
    # q depend on the corpus (the paper's Table 2); 7 of 8 heads is its most frequent choice; the recipes pass the
    # per-corpus values
    "transformer_pascal": Preset("syntax_transformer", "Bugliarello & Okazaki 2020", "wat-en-ja:pascal",
                                 dict(pascal_layer=1, pascal_heads=7), dict(pascal_layer=1, pascal_heads=2)),
    # S&H (Sennrich & Haddow 2016, as in Bugliarello & Okazaki 2020): 10-dimensional label embeddings
    "transformer_sh": Preset("syntax_transformer", "Sennrich & Haddow 2016", "wat-en-ja:sh",
                             dict(label_embed_dim=10), dict(label_embed_dim=10)),
    # SyncAttn (Deguchi et al. 2021): parse heads in encoder and decoder layer l_dep = 1, C from decoder layer
    # l_sync = 5 (tiny: 2); train with label_smoothed_cross_entropy_with_sync
    "transformer_syncattn": Preset("syntax_transformer", "Deguchi et al. 2021", "wmt14-en-de:syncattn",
                                   dict(dbsa_encoder_layer=1, dbsa_decoder_layer=1, sync_layer=5, **_SYNC_FORM),
                                   dict(dbsa_encoder_layer=1, dbsa_decoder_layer=1, sync_layer=2, **_SYNC_FORM)),
    # the ANMT baseline and CKY-based convolutional attention (Watanabe et al. 2017), d 256
    "lstm_luong": Preset("attention_lstm", "Luong et al. 2015", "aspec-en-ja:lstm_luong", tiny={}),
    "cky_lstm": Preset("attention_lstm", "Watanabe et al. 2017", "aspec-en-ja:cky_lstm", dict(cky=True),
                       dict(cky=True)),
}
def _fill(args, values: dict):
    for key, value in values.items():
        setattr(args, key, getattr(args, key, value))


def resolve(args, name: str, tiny: bool = False):
    """Set ``args``' unset options to preset ``name``'s values (then its model's defaults); what registering the
    architecture ``name`` (``name_tiny``) makes fairseq do."""
    preset = PRESETS[name]
    _fill(args, preset.tiny if tiny else preset.options)
    if tiny:
        _fill(args, TINY[preset.model])
    _fill(args, DEFAULTS[preset.model])
    if preset.model == "syntax_transformer":
        base_architecture(args)


def architectures():
    """[(architecture name, preset name, tiny)] of every named architecture of the table."""
    return [(name + ("_tiny" if tiny else ""), name, tiny) for name, preset in PRESETS.items()
            for tiny in ((False, True) if preset.tiny is not None else (False,))]


def preset_of(arch: str):
    """(Preset, tiny) of a named architecture, or None."""
    base, tiny = (arch[: -len("_tiny")], True) if arch.endswith("_tiny") else (arch, False)
    preset = PRESETS.get(base)
    if preset is None or (tiny and preset.tiny is None):
        return None
    return preset, tiny


for _arch, _name, _tiny in architectures():
    register_model_architecture(PRESETS[_name].model, _arch)(
        lambda args, name=_name, tiny=_tiny: resolve(args, name, tiny))
