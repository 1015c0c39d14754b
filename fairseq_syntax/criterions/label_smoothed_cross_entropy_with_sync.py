"""``label_smoothed_cross_entropy_with_sync``: LS-CE + parse-head losses + L_sync.

Deguchi, Tamura & Ninomiya (2021) Eq. 6: L = L_t + lambda_dep L_dep +
lambda_sync L_sync, with L_dep the encoder and decoder parse-head
cross-entropies (as in ``label_smoothed_cross_entropy_with_dependency``; the
paper's lambda_dep = 0.5 is the default here) and L_sync
(:func:`~fairseq_syntax.criterions.sync_loss.synchronous_attention_loss`).

The encoder-decoder attention C of decoder layer l_sync is requested from
the model only by this criterion, through fairseq's alignment outputs
(``alignment_layer`` / ``alignment_heads``: the average of the layer's first
``--sync-heads`` heads, all by default), so other models and criteria pay
nothing for it. L_sync is normalised like the parse terms: its sum over
(t, q) is divided by the number of real target rows and, through fairseq's
sample-size division, enters the loss per target token; it is logged as
``sync_loss`` (sum over q of the squared error, mean over target rows).
"""
from dataclasses import dataclass, field

from fairseq.criterions import register_criterion

from fairseq_syntax.criterions.label_smoothed_cross_entropy_with_dependency import (
    LabelSmoothedCrossEntropyWithDependencyConfig,
    LabelSmoothedCrossEntropyWithDependencyCriterion,
)
from fairseq_syntax.criterions.sync_loss import synchronous_attention_loss
from fairseq_syntax.errors import OptionError


@dataclass
class LabelSmoothedCrossEntropyWithSyncConfig(LabelSmoothedCrossEntropyWithDependencyConfig):
    dependency_lambda_enc: float = field(
        default=0.5, metadata={"help": "weight of the encoder parse-head loss (SyncAttn paper: lambda_dep 0.5)"}
    )
    dependency_lambda_dec: float = field(
        default=0.5, metadata={"help": "weight of the decoder parse-head loss (SyncAttn paper: lambda_dep 0.5)"}
    )
    sync_lambda: float = field(
        default=0.5,
        metadata={"help": "weight lambda_sync of L_sync (the paper tunes it per dataset: 0.5 WMT14 En-De, 0.1 "
                  "WMT16 En-Ro, 10.0 ASPEC Ja-En)"},
    )


@register_criterion("label_smoothed_cross_entropy_with_sync", dataclass=LabelSmoothedCrossEntropyWithSyncConfig)
class LabelSmoothedCrossEntropyWithSyncCriterion(LabelSmoothedCrossEntropyWithDependencyCriterion):
    LOGGED_TERMS = dict(LabelSmoothedCrossEntropyWithDependencyCriterion.LOGGED_TERMS,
                        sync=("sync_rows", None))

    def __init__(self, task, sentence_avg, label_smoothing, ignore_prefix_size=0, report_accuracy=False,
                 dependency_lambda_enc=0.5, dependency_lambda_dec=0.5, dependency_normalization="arcs",
                 sync_lambda=0.5):
        super().__init__(task, sentence_avg, label_smoothing, ignore_prefix_size, report_accuracy,
                         dependency_lambda_enc, dependency_lambda_dec, dependency_normalization)
        self.lambda_sync = sync_lambda

    def check_model(self, model) -> None:
        super().check_model(model)
        self._sync_spec(model)

    @classmethod
    def _name(cls) -> str:
        return "label_smoothed_cross_entropy_with_sync"

    @staticmethod
    def _sync_spec(model):
        layer = int(getattr(model, "sync_layer", 0) or 0)
        if not layer:
            raise OptionError("label_smoothed_cross_entropy_with_sync needs a SyncAttn model (--sync-layer, e.g. "
                             "--arch transformer_syncattn)")
        return layer, int(getattr(model, "sync_heads", 0) or 0) or None

    def model_output(self, model, sample):
        layer, heads = self._sync_spec(model)
        return model(**sample["net_input"], alignment_layer=layer - 1, alignment_heads=heads)

    def auxiliary_terms(self, model, net_output, sample):
        terms = super().auxiliary_terms(model, net_output, sample)
        extra = net_output[1]
        tgt_real = sample["net_input"]["prev_output_tokens"].ne(self.padding_idx)
        total, rows = synchronous_attention_loss(
            extra["encoder_parse_logprobs"][0].exp(), extra["parse_logprobs"][0].exp(), extra["attn"][0], tgt_real
        )
        return terms + [("sync", self.lambda_sync, total, rows, rows)]
