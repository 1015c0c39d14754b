"""Distributed training: 2 CPU processes over gloo (torchrun + fairseq-syntax-train) = 1 process, same effective batch.

fairseq gives worker r the batches r, r + 2, ... of each epoch; one process with ``--update-freq 2`` groups
the same batches in pairs, and both divide the summed gradient by the summed sample size. With dropout off,
the two runs must agree up to float summation order: the logged losses of every update (all terms of each
criterion) and the final models' loss on the validation set to 1e-4, the parameters to 1e-5.
"""
import os
import re
import socket

import pytest
import torch

import forkserver
from fairseq_syntax.launcher import launcher_options
from helpers import USER_DIR, run, tool

CRITERIA = {
    "transformer_dbsa_tiny": "label_smoothed_cross_entropy_with_dependency",
    "transformer_sisa_tiny": "label_smoothed_cross_entropy_with_dependency",
    "transformer_syncattn_tiny": "label_smoothed_cross_entropy_with_sync",
}
PRESETS = ["transformer_dbsa_tiny", "transformer_sisa_tiny", "transformer_rel_tiny", "transformer_dep_tiny",
           "transformer_dep_rel_tiny", "transformer_pascal_tiny", "transformer_sh_tiny", "transformer_syncattn_tiny",
           "lstm_luong_tiny", "cky_lstm_tiny"]


def train_args(data_bin, arch, save_dir):
    criterion = CRITERIA.get(arch, "label_smoothed_cross_entropy")
    no_dropout = ["--dropout", "0"] + (["--cky-dropout", "0"] if arch.startswith("cky") else [])
    return [data_bin, "--user-dir", USER_DIR, "--task", "syntax_translation", "--arch", arch, *no_dropout,
            "--criterion", criterion, "--label-smoothing", "0.1", "--optimizer", "adam", "--lr", "1e-3",
            "--max-tokens", "500", "--max-update", "3", "--cpu", "--save-dir", save_dir, "--no-epoch-checkpoints",
            "--disable-validation", "--num-workers", "0", "--seed", "3", "--log-format", "simple",
            "--log-interval", "1"]


def logged_losses(output):
    """{update: {term: value}} of the train_inner lines (every logged *loss term)."""
    out = {}
    for line in output.splitlines():
        m = re.search(r"num_updates=(\d+)", line)
        if "train_inner" in line and m:
            out[int(m.group(1))] = {k: float(v) for k, v in re.findall(r"(\w*loss)=([-\d.]+)", line)}
    return out


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def validation_loss(checkpoint):
    """The checkpoint's criterion summed over the validation split, per sample-size unit (in this process)."""
    from fairseq import checkpoint_utils

    import fairseq_syntax.plugin  # noqa: F401

    models, cfg, task = checkpoint_utils.load_model_ensemble_and_task([checkpoint])
    model = models[0].eval()
    criterion = task.build_criterion(cfg.criterion)
    task.load_dataset("valid")
    itr = task.get_batch_iterator(task.dataset("valid"), max_tokens=4000).next_epoch_itr(shuffle=False)
    total, size = 0.0, 0
    with torch.no_grad():
        for batch in itr:
            loss, sample_size, _ = criterion(model, batch)
            total, size = total + loss.item(), size + sample_size
    return total / size, {k: v for k, v in model.state_dict().items()}


def test_launcher_options():
    env = {"RANK": "1", "WORLD_SIZE": "2", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "29500", "LOCAL_RANK": "1"}
    cpu = launcher_options(["data", "--cpu"], env, cuda=False)
    assert cpu == ["--distributed-init-method", "env://", "--distributed-world-size", "2", "--distributed-rank", "1",
                   "--distributed-backend", "gloo", "--ddp-backend", "legacy_ddp", "--distributed-no-spawn"]
    gpu = launcher_options(["data", "--ddp-backend=pytorch_ddp"], env, cuda=True)
    assert "--device-id" in gpu and "gloo" not in gpu and "--ddp-backend" not in gpu
    assert launcher_options(["data"], {"RANK": "0"}, cuda=False) == []  # no launcher: plain fairseq-train


@pytest.mark.parametrize("arch", ["transformer_dbsa_tiny", "transformer_syncattn_tiny", "transformer_dep_rel_tiny",
                                  "transformer_pascal_tiny", "transformer_sh_tiny", "cky_lstm_tiny"])
@pytest.mark.slow
def test_two_gloo_processes_match_one(arch, data_bin, tmp_path):
    one, two = str(tmp_path / "one"), str(tmp_path / "two")
    single = run([tool("fairseq-train"), *train_args(data_bin, arch, one), "--update-freq", "2"])
    # the two processes start through the test worker's fork server (tests/forkserver.py: without their imports)
    double = run([tool("torchrun"), "--nproc_per_node", "2", "--master_addr", "127.0.0.1", "--master_port",
                  str(free_port()), forkserver.command("fairseq-syntax-train"), *train_args(data_bin, arch, two)],
                 extra_env=forkserver.environment())
    out2 = double.stdout + double.stderr
    assert "distributed init (rank 0)" in out2 and "distributed init (rank 1)" in out2
    losses1, losses2 = logged_losses(single.stdout + single.stderr), logged_losses(out2)
    assert sorted(losses1) == [1, 2, 3] and losses1.keys() == losses2.keys()
    for update in losses1:
        assert losses1[update].keys() == losses2[update].keys()
        for term, value in losses1[update].items():
            assert abs(value - losses2[update][term]) <= 1.5e-3, (update, term)  # logs keep 3 decimals
    loss1, params1 = validation_loss(os.path.join(one, "checkpoint_last.pt"))
    loss2, params2 = validation_loss(os.path.join(two, "checkpoint_last.pt"))
    assert abs(loss1 - loss2) < 1e-4
    for name, p in params1.items():
        torch.testing.assert_close(params2[name], p, atol=1e-5, rtol=0, msg=name)


@pytest.mark.parametrize("arch", PRESETS)
def test_every_parameter_gets_a_gradient(arch, data_bin):
    """What PyTorch's DDP on GPUs requires (no unused parameters): one training step reaches every parameter."""
    from fairseq import options, tasks
    from fairseq.dataclass.utils import convert_namespace_to_omegaconf

    parser = options.get_training_parser()
    args = options.parse_args_and_arch(parser, train_args(data_bin, arch, "unused"))
    cfg = convert_namespace_to_omegaconf(args)
    task = tasks.setup_task(cfg.task)
    model = task.build_model(cfg.model)
    criterion = task.build_criterion(cfg.criterion)
    task.load_dataset("train")
    batch = next(iter(task.get_batch_iterator(task.dataset("train"), max_tokens=500).next_epoch_itr(shuffle=False)))
    model.train()
    loss, _, _ = criterion(model, batch)
    loss.backward()
    missing = [n for n, p in model.named_parameters() if p.requires_grad and p.grad is None]
    assert not missing
