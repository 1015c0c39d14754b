"""``label_smoothed_cross_entropy_with_dependency``: LS-CE + parse-head losses.

Deguchi et al. (2019) Sec. 3.2: L = e_tokens + lambda_enc e_enc + lambda_dec
e_dec, with e_tokens label-smoothed cross-entropy and e_enc / e_dec the
cross-entropy of the encoder / decoder parse heads against gold parents
(:func:`~fairseq_syntax.criterions.dependency_loss.parse_head_nll`).

Normalisation (docs/design.md, "Losses"; ``--dependency-normalization``). fairseq
divides the returned loss by the sample size (target tokens, summed over
workers), so a term added as ``lambda * nll_sum * sample_size / N`` weighs
``lambda * nll_sum / N`` per target token:

* ``arcs`` (default; the authors' DBSA code, de9uch1/dbsa): N = all gold
  arcs of the side, i.e. its real tokens. On the encoder side every arc is
  supervised, so this is the mean CE; on the decoder side the arcs to later
  tokens (which the future mask cannot supervise) still count, so the term
  weighs lambda x (supervised fraction) relative to a mean.
* ``supervised``: N = the supervised tokens: lambda x the mean CE on both
  sides.
* ``sum``: no N: the sum, as the papers' text writes the loss (Deguchi et al.
  2021 Eq. 5), which fairseq's division makes a per-target-token weight.

On one worker the per-token weights are exact; under DDP, N is each worker's
own count. Logged values are exact under DDP and do not depend on the
normalisation: every term is logged as its mean CE per supervised token (sum
and count reduced separately).
"""
import math
from dataclasses import dataclass, field

from fairseq import metrics, utils
from fairseq.criterions import register_criterion
from fairseq.criterions.label_smoothed_cross_entropy import (
    LabelSmoothedCrossEntropyCriterion,
    LabelSmoothedCrossEntropyCriterionConfig,
)
from fairseq.dataclass import ChoiceEnum

from fairseq_syntax.criterions.dependency_loss import parse_head_nll
from fairseq_syntax.errors import OptionError

NORMALIZATIONS = ("arcs", "supervised", "sum")


@dataclass
class LabelSmoothedCrossEntropyWithDependencyConfig(LabelSmoothedCrossEntropyCriterionConfig):
    dependency_lambda_enc: float = field(
        default=1.0, metadata={"help": "weight lambda_enc of the encoder parse-head loss (DBSA paper: 1.0)"}
    )
    dependency_lambda_dec: float = field(
        default=1.0, metadata={"help": "weight lambda_dec of the decoder parse-head loss (DBSA paper: 1.0)"}
    )
    dependency_normalization: ChoiceEnum(NORMALIZATIONS) = field(
        default="arcs",
        metadata={"help": "what a parse term's CE sum is divided by before its weight: 'arcs' (default, the "
                  "authors' DBSA code) = all gold arcs of the side, future ones included; 'supervised' = the "
                  "supervised arcs (a mean); 'sum' = nothing (the papers' text): a per-target-token weight"},
    )


@register_criterion(
    "label_smoothed_cross_entropy_with_dependency", dataclass=LabelSmoothedCrossEntropyWithDependencyConfig
)
class LabelSmoothedCrossEntropyWithDependencyCriterion(LabelSmoothedCrossEntropyCriterion):
    def __init__(self, task, sentence_avg, label_smoothing, ignore_prefix_size=0, report_accuracy=False,
                 dependency_lambda_enc=1.0, dependency_lambda_dec=1.0, dependency_normalization="arcs"):
        super().__init__(task, sentence_avg, label_smoothing, ignore_prefix_size, report_accuracy)
        self.lambda_enc = dependency_lambda_enc
        self.lambda_dec = dependency_lambda_dec
        self.normalization = str(dependency_normalization)
        if self.normalization not in NORMALIZATIONS:
            raise OptionError(f"--dependency-normalization must be one of {NORMALIZATIONS}, not "
                             f"{self.normalization!r}")

    def check_model(self, model) -> None:
        """Refuse a model this criterion cannot train: one without a parse head (its terms would be zero)."""
        heads = [getattr(getattr(model, part, None), "dbsa_layer", 0) for part in ("encoder", "decoder")]
        if not any(heads):
            raise OptionError(f"--criterion {self._name()} trains parse heads, and the model has none "
                              "(--dbsa-encoder-layer / --dbsa-decoder-layer, e.g. --arch transformer_dbsa): give "
                              "--criterion label_smoothed_cross_entropy, or a model with a parse head")

    @classmethod
    def _name(cls) -> str:
        return "label_smoothed_cross_entropy_with_dependency"

    #: logged terms: name -> (count key, divisor of sum / count); NLL terms are logged in base 2
    LOGGED_TERMS = {"dep_enc": ("dep_enc_tokens", 2.0), "dep_dec": ("dep_dec_tokens", 2.0)}

    def model_output(self, model, sample):
        """The model's forward on the batch (a subclass may ask it for more, e.g. attention maps)."""
        return model(**sample["net_input"])

    def dependency_terms(self, net_output, sample):
        """[(name, lambda, nll_sum, n_supervised, divisor)] for the parse heads the model has."""
        extra = net_output[1]
        syntax = sample.get("syntax", {})
        terms = []
        for name, key, side, lam, causal in (
            ("dep_enc", "encoder_parse_logprobs", "src", self.lambda_enc, False),
            ("dep_dec", "parse_logprobs", "tgt", self.lambda_dec, True),
        ):
            if key not in extra:
                continue
            parents = syntax.get(f"{side}_parents")
            if parents is None:
                if self.training:
                    raise OptionError(
                        f"the model has a {'decoder' if causal else 'encoder'} parse head but the batch has no "
                        f"{side}_parents: train with --task syntax_translation on data with "
                        f"{'target' if causal else 'source'} syntax"
                    )
                continue
            if not extra[key]:
                raise RuntimeError(f"the {'decoder' if causal else 'encoder'} parse-head layer did not run in "
                                   "this forward")
            supervised = syntax[f"{side}_supervised"]
            nll, n = parse_head_nll(extra[key][0], parents, supervised, causal)
            if self.normalization == "sum":
                divisor = None
            elif self.normalization == "supervised":
                divisor = n
            else:  # every gold arc of the side, future ones included
                divisor = (supervised & parents.ge(0)).sum()
            terms.append((name, lam, nll, n, divisor))
        return terms

    def auxiliary_terms(self, model, net_output, sample):
        """[(name, lambda, sum, count, divisor)]: each term enters the loss as lambda * sum / divisor per target
        token (divisor None: lambda * sum); ``count`` is what the logged mean divides by."""
        return self.dependency_terms(net_output, sample)

    def forward(self, model, sample, reduce=True):
        net_output = self.model_output(model, sample)
        loss, nll_loss = self.compute_loss(model, net_output, sample, reduce=reduce)
        sample_size = sample["target"].size(0) if self.sentence_avg else sample["ntokens"]
        logging_output = {
            "loss": loss.data,
            "nll_loss": nll_loss.data,
            "ntokens": sample["ntokens"],
            "nsentences": sample["target"].size(0),
            "sample_size": sample_size,
        }
        for name, lam, total, n, divisor in self.auxiliary_terms(model, net_output, sample):
            if lam > 0:
                term = total if divisor is None else total * (sample_size / divisor.clamp_min(1))
                loss = loss + lam * term
            logging_output[f"{name}_loss"] = total.data
            logging_output[self.LOGGED_TERMS[name][0]] = n.data
        logging_output["loss"] = loss.data
        if self.report_accuracy:
            n_correct, total = self.compute_accuracy(model, net_output, sample)
            logging_output["n_correct"] = utils.item(n_correct.data)
            logging_output["total"] = utils.item(total.data)
        return loss, sample_size, logging_output

    @classmethod
    def reduce_metrics(cls, logging_outputs) -> None:
        super().reduce_metrics(logging_outputs)
        for name, (count_key, log_base) in cls.LOGGED_TERMS.items():
            n = sum(log.get(count_key, 0) for log in logging_outputs)
            if n:
                s = sum(log.get(f"{name}_loss", 0) for log in logging_outputs)
                scale = math.log(log_base) if log_base else 1.0
                metrics.log_scalar(f"{name}_loss", float(s) / float(n) / scale, float(n), round=3)
