"""One scoring plan: the dataset recipes' evaluate.sh scores each target as fairseq-syntax-evaluate --data would
(fairseq_syntax.evaluation.scoring_plan.plan_for), from the recipe's target tokenizer and bleu_on_tokens."""
import os
import sys

import pytest

from fairseq_syntax.evaluation.scoring_plan import plan_for

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "examples", "recipes"))


def runner_plan(dataset, **variables):
    from runner.prepare_step import tokenizer_of
    from runner.recipe import load

    r = load(dataset, {"WORK": "/nonexistent", **variables})
    return plan_for(r.tgt, tokenizer_of(r, r.tgt), (r.src,), on_tokens=r.bleu_on_tokens)


@pytest.mark.parametrize("dataset, tokenize, removes_spaces, ribes", [
    ("tanaka-ja-en", "none", False, True),  # the corpus's English tokens, RIBES (a pair with Japanese)
    ("tanaka-en-ja", "ja-mecab", True, True),  # GiNZA's tokens: the spaces removed, MeCab's for every model
    ("multi30k-en-de", None, False, False),  # Moses detokenised, sacreBLEU's 13a against the raw reference
    ("aspec-ja-en", "none", False, True),  # WAT: BLEU on the Moses tokens
    ("aspec-en-ja", "none", False, True),  # WAT: BLEU on the KyTea tokens
    ("wat-en-ja", "none", False, True),
])
def test_each_recipe_scores_by_the_packages_plan(dataset, tokenize, removes_spaces, ribes):
    plan = runner_plan(dataset)
    assert (plan.tokenize, plan.removes_spaces, plan.ribes) == (tokenize, removes_spaces, ribes)


def test_bleu_on_tokens_scores_any_tokens_as_written():
    for tokenizer in ("kytea", "moses", "parser", "given"):
        plan = plan_for("ja", tokenizer, ("en",), on_tokens=True)
        assert (plan.tokenize, plan.removes_spaces, plan.ribes) == ("none", False, True)
    assert plan_for("de", "moses", ("en",)).tokenize is None and not plan_for("de", "moses", ("en",)).ribes
