"""A training stopped at an epoch's end and resumed from checkpoint_last.pt ends where the uninterrupted training
ends: every update's loss the same and the same parameters, bit for bit (one machine, one thread). A recipe's
run may be stopped and resumed many times (a queue killed with its job, then run again): its figures stand
for an uninterrupted training only if nothing (a dataset's draw, a criterion's or
model's state, the update count behind --self-parse-train-after, the batches) is lost or drawn again across the
resume. fairseq seeds each update from --seed and the update count; its batches it draws with --seed + the
epoch its iterator is made at, so that a resumed run trained on other batches than the uninterrupted one
(fairseq's own transformer and translation task, this corpus, dropout 0.3: the first update after the resume
apart by 0.047): the task makes them as at epoch 1 (SyntaxTranslationTask.get_batch_iterator).
"""
import re

import pytest
import torch

from helpers import run, train_cmd

DEP = ["--criterion", "label_smoothed_cross_entropy_with_dependency", "--dependency-lambda-enc", "0.5"]
CASES = {  # the mechanisms of the multi-seed tables, tiny
    "dep_rel": ["--arch", "transformer_dep_rel_tiny"],
    "dbsa": ["--arch", "transformer_dbsa_tiny"],
    "pascal": ["--arch", "transformer_pascal_tiny"],
    "syncattn": ["--arch", "transformer_syncattn_tiny"],
    "dep_rel_self_st": ["--arch", "transformer_dep_rel_self_tiny", "--self-parse-train", "0.5",
                        "--self-parse-train-after", "12"],  # the tree switch after the resume
    "cky_lstm": ["--arch", "cky_lstm_tiny", "--clip-norm", "3.0"],
}
CRITERIA = {  # after train_cmd's own --criterion, which they replace
    "dbsa": DEP + ["--dependency-lambda-dec", "0.5"],
    "syncattn": ["--criterion", "label_smoothed_cross_entropy_with_sync", "--sync-lambda", "10.0"],
    "dep_rel_self_st": DEP,
}


def log_of(p):
    return p.stdout + p.stderr


def _losses(log):
    """{update: its training loss} of fairseq's per-update log lines (--log-interval 1)."""
    found = re.findall(r"train_inner\W+epoch \d+:.*? loss=([\d.]+),.*? num_updates=(\d+),", log)
    return {int(u): float(loss) for loss, u in found}


def _params(checkpoint):
    import fairseq_syntax.plugin  # noqa: F401  (registers the checkpoint allow-list)

    return torch.load(str(checkpoint), weights_only=True)["model"]


@pytest.mark.parametrize("case", [c if c in ("dep_rel", "dbsa") else pytest.param(c, marks=pytest.mark.slow)
                                  for c in CASES])
def test_a_resumed_training_ends_where_the_uninterrupted_one_ends(case, data_bin, tmp_path):
    arch = CASES[case]
    once, twice = tmp_path / "once", tmp_path / "twice"
    updates = 16  # the synthetic corpus's epoch is 11 updates: stopped after the first, resumed into the second
    extra = ["--dropout", "0.3", *CRITERIA.get(case, [])]
    before = _losses(log_of(run(train_cmd(data_bin, str(once), updates=updates, arch=arch, extra=extra))))
    run(train_cmd(data_bin, str(twice), updates=updates, arch=arch, extra=extra + ["--max-epoch", "1"]))
    stopped = _params(twice / "checkpoint_last.pt")
    resumed = run(train_cmd(data_bin, str(twice), updates=updates, arch=arch, extra=extra))
    log = resumed.stdout + resumed.stderr
    after = _losses(log)
    assert after and min(after) > 1 and max(after) == updates, after  # it went on from where it stopped
    assert all(after[u] == before[u] for u in after), (case, {u: (before[u], after[u]) for u in after})
    a, b = _params(once / "checkpoint_last.pt"), _params(twice / "checkpoint_last.pt")
    assert sorted(a) == sorted(b)
    assert any(not torch.equal(stopped[k], b[k]) for k in b)  # the resumed run did train on
    differing = [k for k in a if not torch.equal(a[k], b[k])]
    assert differing == [], (case, differing[:5])


@pytest.mark.parametrize("kwargs,made_at", [({}, 4), ({"disable_iterator_cache": True}, 7),
                                            ({"update_epoch_batch_itr": True}, 7)])
def test_batches_made_anew_every_epoch_keep_fairseqs_seed(kwargs, made_at, monkeypatch):
    """Iterators that fairseq makes anew every epoch (sharded data disables its cache; --update-epoch-batch-itr)
    keep its per-epoch seed; the cached iterator made at a later epoch (a resume) gets epoch 1's: seed + 1 - epoch
    here, which fairseq turns into seed + 1 (for --seed 3 at epoch 4: 4)."""
    from fairseq.tasks import FairseqTask

    from fairseq_syntax.tasks.syntax_translation import SyntaxTranslationTask

    seen = {}

    class Itr:
        seed = None

    def fake(self, dataset, seed=1, epoch=1, update_epoch_batch_itr=False, **kw):
        seen["seed"] = seed + epoch  # the numpy seed fairseq 0.12.3 makes the batches with
        itr = Itr()
        itr.seed = seed
        return itr

    monkeypatch.setattr(FairseqTask, "get_batch_iterator", fake)
    task = SyntaxTranslationTask.__new__(SyntaxTranslationTask)
    task.cfg = type("Cfg", (), {})()
    monkeypatch.setattr(SyntaxTranslationTask, "can_reuse_epoch_itr", lambda self, dataset: True)
    itr = task.get_batch_iterator(object(), seed=3, epoch=4, **kwargs)
    assert seen["seed"] == made_at and itr.seed == 3
