"""The options of ``syntax_transformer`` (what its mechanisms add to fairseq's transformer options), and the
parsing of the ones that name terms and layers. The model, its layers and the mechanisms are
:mod:`fairseq_syntax.models.syntax_transformer`; the named architectures that set them,
:mod:`fairseq_syntax.models.presets`."""
from dataclasses import dataclass, field
from typing import Set, Tuple

from fairseq.dataclass import ChoiceEnum, FairseqDataclass

from fairseq_syntax.data.alignment.parent_strategies import STRATEGIES
from fairseq_syntax.errors import OptionError
from fairseq_syntax.modules.dependency_attention import BIASES
from fairseq_syntax.modules.parent_scaled_attention import WEIGHT_FUNCTIONS
from fairseq_syntax.modules.relative_positions import IMPLEMENTATIONS

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
                  "input is the token"},
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
    self_parse: bool = field(
        default=False,
        metadata={"help": "parser-free decoding: the encoder's parse head (--dbsa-encoder-layer, trained on the "
                  "parser's trees by the dependency loss) gives the tree that the dependency relative positions "
                  "of the layers above it read, when a batch carries no tree (decoding with --inference-parser "
                  "self); the layers up to the head's read no tree (their dependency terms are left out)"},
    )
    self_parse_train: float = field(
        default=0.0,
        metadata={"help": "with --self-parse: in training, the probability that a batch's tree layers read the "
                  "head's own decoded tree instead of the parser's (default 0: always the parser's)"},
    )
    self_parse_train_after: int = field(
        default=0,
        metadata={"help": "with --self-parse-train: the updates during which the tree layers read only the "
                  "parser's trees (the head learns them first; its early trees are near random)"},
    )
    rel_implementation: ChoiceEnum(IMPLEMENTATIONS) = field(
        default="buckets",
        metadata={"help": "buckets (default): gather/scatter over the 2c+1 distance buckets; materialised: "
                  "the B x T x T x d reference form of the equations, for tests and the benchmark only"},
    )


def relative_terms(value, option: str) -> Tuple[bool, bool]:
    value = str(value)
    if value not in TERMS:
        raise OptionError(f"--{option}: relative terms must be one of {TERMS}, not {value!r}")
    return "key" in value, "value" in value


def layer_set(value, num_layers: int, option: str) -> Set[int]:
    value = str(value).strip()
    if value == "all":
        return set(range(1, num_layers + 1))
    try:
        layers = {int(x) for x in value.split(",") if x.strip()}
    except ValueError:
        raise OptionError(f"--{option} must be 'all' or a comma list of layer numbers, not {value!r}") from None
    bad = sorted(x for x in layers if not 1 <= x <= num_layers)
    if bad:
        raise OptionError(f"--{option}: layer(s) {bad} out of range 1..{num_layers}")
    return layers
