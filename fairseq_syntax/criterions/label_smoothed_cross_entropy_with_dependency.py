"""``label_smoothed_cross_entropy_with_dependency``: LS-CE + parse-head losses.

Deguchi et al. (2019) Sec. 3.2: L = e_tokens + lambda_enc e_enc + lambda_dec
e_dec, with e_tokens label-smoothed cross-entropy and e_enc / e_dec the
cross-entropy of the encoder / decoder parse heads against gold parents
(:func:`~fairseq_syntax.criterions.dependency_loss.parse_head_nll`).

Normalisation (DESIGN.md, "Losses"): each parse term is a mean over its
supervised tokens. fairseq divides the returned loss by the sample size (the
target tokens, summed over workers), so each worker adds
``lambda * nll_sum * sample_size / n_supervised``: on one worker that is
exactly lambda times the mean parse CE; across workers it is the same up to
the ratio of supervised to target tokens per worker. Logged values are exact
under DDP: every term is logged as a sum with its own count and reduced as
sum / count.
"""
import math
from dataclasses import dataclass, field

from fairseq import metrics, utils
from fairseq.criterions import register_criterion
from fairseq.criterions.label_smoothed_cross_entropy import (
    LabelSmoothedCrossEntropyCriterion,
    LabelSmoothedCrossEntropyCriterionConfig,
)

from fairseq_syntax.criterions.dependency_loss import parse_head_nll


@dataclass
class LabelSmoothedCrossEntropyWithDependencyConfig(LabelSmoothedCrossEntropyCriterionConfig):
    dependency_lambda_enc: float = field(
        default=1.0, metadata={"help": "weight lambda_enc of the encoder parse-head loss (DBSA paper: 1.0)"}
    )
    dependency_lambda_dec: float = field(
        default=1.0, metadata={"help": "weight lambda_dec of the decoder parse-head loss (DBSA paper: 1.0)"}
    )


@register_criterion(
    "label_smoothed_cross_entropy_with_dependency", dataclass=LabelSmoothedCrossEntropyWithDependencyConfig
)
class LabelSmoothedCrossEntropyWithDependencyCriterion(LabelSmoothedCrossEntropyCriterion):
    def __init__(self, task, sentence_avg, label_smoothing, ignore_prefix_size=0, report_accuracy=False,
                 dependency_lambda_enc=1.0, dependency_lambda_dec=1.0):
        super().__init__(task, sentence_avg, label_smoothing, ignore_prefix_size, report_accuracy)
        self.lambda_enc = dependency_lambda_enc
        self.lambda_dec = dependency_lambda_dec

    #: logged terms: name -> (count key, divisor of sum / count); NLL terms are logged in base 2
    LOGGED_TERMS = {"dep_enc": ("dep_enc_tokens", 2.0), "dep_dec": ("dep_dec_tokens", 2.0)}

    def model_output(self, model, sample):
        """The model's forward on the batch (a subclass may ask it for more, e.g. attention maps)."""
        return model(**sample["net_input"])

    def dependency_terms(self, net_output, sample):
        """[(name, lambda, nll_sum, n_supervised)] for the parse heads the model has."""
        extra = net_output[1]
        syntax = sample.get("syntax", {})
        terms = []
        for name, key, side, lam, causal in (
            ("dep_enc", "encoder_parse_attn", "src", self.lambda_enc, False),
            ("dep_dec", "parse_attn", "tgt", self.lambda_dec, True),
        ):
            if not extra.get(key):
                continue
            parents = syntax.get(f"{side}_parents")
            if parents is None:
                if self.training:
                    raise ValueError(
                        f"the model has a {'decoder' if causal else 'encoder'} parse head but the batch has no "
                        f"{side}_parents: train with --task syntax_translation on data with "
                        f"{'target' if causal else 'source'} syntax"
                    )
                continue
            nll, n = parse_head_nll(extra[key][0], parents, syntax[f"{side}_supervised"], causal)
            terms.append((name, lam, nll, n))
        return terms

    def auxiliary_terms(self, model, net_output, sample):
        """[(name, lambda, sum, count)]: each term enters the loss as lambda * sum / count per target token."""
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
        for name, lam, total, n in self.auxiliary_terms(model, net_output, sample):
            if lam > 0:
                loss = loss + lam * total * (sample_size / n.clamp_min(1))
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
