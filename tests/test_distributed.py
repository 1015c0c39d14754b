"""Distributed training: 2 CPU processes over gloo (torchrun + fairseq-syntax-train) = 1 process, same effective batch.

fairseq gives worker r the batches r, r + 2, ... of each epoch; one process with ``--update-freq 2`` groups
the same batches in pairs, and both divide the summed gradient by the summed sample size. With dropout off,
the two runs must agree up to float summation order: the logged losses of every update (all terms of each
criterion) and the final models' loss on the validation set to 1e-4, the parameters to 1e-5.

The two processes start through the commands of docs/distributed.md, read from the page: its one-node block
(torchrun) and its SLURM block (sbatch of examples/slurm/train.sbatch, with stand-ins for sbatch, srun and
scontrol that run the job's tasks on this machine); only the assignments at the top of a block change.
"""
import os
import random
import re
import shlex
import socket

import pytest
import torch

import forkserver
from fairseq_syntax.launcher import launcher_options
from helpers import BIN, ROOT, USER_DIR, run, tool

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


DOC = os.path.join(ROOT, "docs", "distributed.md")

#: stand-ins for SLURM's commands: a job on TEST_SLURM_NODES nodes that are all this machine
SLURM_STAND_INS = {
    "sbatch": r"""#!/bin/bash
# sbatch stand-in (tests/test_distributed.py): the job here and now, with SLURM's variables for --nodes N
nodes=1
while [[ $1 == -* ]]; do
  case $1 in --nodes=*) nodes=${1#*=}; shift ;; --nodes|-N) nodes=$2; shift 2 ;; --*=*) shift ;; *) shift 2 ;; esac
done
export SLURM_JOB_ID=$TEST_SLURM_JOB_ID SLURM_NNODES=$nodes SLURM_JOB_NODELIST="node[0-$((nodes - 1))]"
exec bash "$@"
""",
    "srun": r"""#!/bin/bash
# srun stand-in: one task per node (SLURM_NODEID 0, 1, ...), all here; one that fails ends the others
while [[ $1 == -* ]]; do shift; done
pids=()
for ((n = 0; n < SLURM_NNODES; n++)); do SLURM_NODEID=$n SLURM_PROCID=$n SLURM_LOCALID=0 "$@" & pids+=($!); done
for _ in "${pids[@]}"; do wait -n || { kill "${pids[@]}" 2> /dev/null; wait; exit 1; }; done
""",
    "scontrol": r"""#!/bin/bash
# scontrol stand-in: show hostnames of the job's node list, every node this machine
[ "$*" = "show hostnames $SLURM_JOB_NODELIST" ] || { echo "scontrol stand-in: not $*" >&2; exit 1; }
for ((n = 0; n < SLURM_NNODES; n++)); do echo 127.0.0.1; done
""",
}


def doc_blocks():
    """docs/distributed.md's blocks the suite runs: {"one node": ..., "slurm": ...}, each (declarations, command)
    (the block's assignments and, after its first blank line, the command)."""
    with open(DOC, encoding="utf-8") as f:
        blocks = re.findall(r"<!-- tests/test_distributed.py runs this block -->\n```bash\n(.*?)```", f.read(), re.S)
    assert len(blocks) == 2, "docs/distributed.md: the one-node block and the SLURM block"
    return dict(zip(["one node", "slurm"], (tuple(b.split("\n\n", 1)) for b in blocks)))


def doc_command(which, values):
    """The block ``which`` with its assignments replaced by ``values`` (name -> bash words): the names must be
    the ones the block declares."""
    declared, command = doc_blocks()[which]
    assert sorted(re.findall(r"^([A-Z_]+)=", declared, re.M)) == sorted(values), declared
    return "".join(f"{name}={words}\n" for name, words in values.items()) + command


def slurm_environment(folder, path):
    """PATH with SLURM's stand-ins first, and the job id whose port (train.sbatch: 20000 + id % 20000) is free."""
    os.makedirs(folder, exist_ok=True)
    for name, text in SLURM_STAND_INS.items():
        with open(os.path.join(folder, name), "w") as f:
            f.write(text)
        os.chmod(os.path.join(folder, name), 0o755)
    for port in random.sample(range(20000, 40000), 100):
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
        return {"PATH": folder + os.pathsep + path, "TEST_SLURM_JOB_ID": str(port)}
    raise RuntimeError("no free port in 20000-39999")


def without(args, *options):
    """``args`` without these options and their values."""
    out, skip = [], False
    for a in args:
        if skip:
            skip = False
        elif a in options:
            skip = True
        else:
            out.append(a)
    return out


def through_the_docs(data_bin, arch, save_dir, slurm_folder):
    """Two processes training ``train_args`` through docs/distributed.md's SLURM block (2 nodes of 1 process;
    ``slurm_folder`` holds the stand-ins) or, without one, its one-node block (2 processes)."""
    options = without(train_args(data_bin, arch, save_dir)[1:], "--user-dir", "--task", "--arch", "--max-tokens",
                      "--save-dir")
    values = {"DATA": shlex.quote(data_bin), "ARCH": arch, "GPUS": "2", "PRECISION": "",
              "BATCH": '"--max-tokens 500 --update-freq 1"', "OPTIONS": f"({shlex.join(options)})",
              "SAVE_DIR": shlex.quote(save_dir)}
    env = forkserver.environment()  # the processes start through the test worker's fork server
    path = env.get("PATH", BIN + os.pathsep + os.environ.get("PATH", ""))
    if slurm_folder is None:
        return run(["bash", "-c", doc_command("one node", values)], extra_env={**env, "PATH": path})
    values.update(NODES="2", GPUS="1")
    return run(["bash", "-c", doc_command("slurm", values)],
               extra_env={**env, **slurm_environment(slurm_folder, path)})


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


#: the preset whose two processes start through the SLURM block (2 simulated nodes); the others: the one-node block
THROUGH_SLURM = "transformer_syncattn_tiny"


@pytest.mark.parametrize("arch", ["transformer_dbsa_tiny", "transformer_syncattn_tiny", "transformer_dep_rel_tiny",
                                  "transformer_pascal_tiny", "transformer_sh_tiny", "cky_lstm_tiny"])
@pytest.mark.slow
def test_two_gloo_processes_match_one(arch, data_bin, tmp_path):
    """The docs' commands (one node; SLURM) with 2 gloo processes train as one process with --update-freq 2."""
    one, two = str(tmp_path / "one"), str(tmp_path / "two")
    single = run([tool("fairseq-train"), *train_args(data_bin, arch, one), "--update-freq", "2"])
    double = through_the_docs(data_bin, arch, two, str(tmp_path / "slurm") if arch == THROUGH_SLURM else None)
    out2 = double.stdout + double.stderr
    assert "distributed init (rank 0)" in out2 and "distributed init (rank 1)" in out2
    if arch == THROUGH_SLURM:
        assert "train.sbatch: 2 nodes x 1 GPUs, rendezvous 127.0.0.1:" in out2
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


def test_the_docs_commands_give_torchrun_the_tables_settings(tmp_path):
    """docs/distributed.md's two blocks as written, torchrun a stand-in that records its arguments: the table's
    --arch and options of wmt14-en-de's syncattn, the batch `fairseq-syntax-settings --gpus` gives 4 GPUs and
    2 nodes x 4, fp16 and bf16, the installed fairseq-syntax-train; under SLURM one torchrun per node (node ranks
    0 and 1) with its rendezvous on the first node, at the port of the job id."""
    from fairseq_syntax.settings.datasets import settings
    from fairseq_syntax.settings.gpu_batch import split_batch

    env = slurm_environment(str(tmp_path / "bin"), BIN + os.pathsep + os.environ.get("PATH", ""))
    stand_in = tmp_path / "bin" / "torchrun"
    stand_in.write_text('#!/bin/bash\nprintf "%s\\n" "$@" > "$TEST_OUT/torchrun.${SLURM_NODEID:-none}"\n')
    stand_in.chmod(0o755)
    env["TEST_OUT"] = str(tmp_path)
    entry = settings("wmt14-en-de")["syncattn"]
    i = entry.train.index("--arch")
    options = ["--source-lang", "en", "--target-lang", "de", *entry.train[:i], *entry.train[i + 2:]]
    data, arch, save = "work/wmt14-en-de/main/data-bin", entry.train[i + 1], "checkpoints/syncattn"
    train = os.path.join(BIN, "fairseq-syntax-train")

    def torchrun(which):
        declared, command = doc_blocks()[which]
        run(["bash", "-c", f"{declared}\n{command}"], extra_env=env)
        return {f.name: f.read_text().splitlines() for f in tmp_path.glob("torchrun.*")}

    assert torchrun("one node") == {"torchrun.none": [
        "--standalone", "--nproc_per_node", "4", train, data, "--user-dir", "fairseq_syntax", "--task",
        "syntax_translation", "--arch", arch, "--fp16", *split_batch(entry.batch, 4).options.split(), *options,
        "--save-dir", save]}
    os.remove(tmp_path / "torchrun.none")
    nodes = torchrun("slurm")
    assert sorted(nodes) == ["torchrun.0", "torchrun.1"]
    for rank in (0, 1):
        assert nodes[f"torchrun.{rank}"] == [
            "--node_rank", str(rank), "--nnodes", "2", "--nproc_per_node", "4", "--master_addr", "127.0.0.1",
            "--master_port", env["TEST_SLURM_JOB_ID"], train, data, "--user-dir", USER_DIR, "--task",
            "syntax_translation", "--arch", arch, "--save-dir", save, "--bf16",
            *split_batch(entry.batch, 8).options.split(), *options]


def test_the_slurm_script_stops_before_it_starts_anything(tmp_path):
    """Outside a job, or with a PRECISION that is no fairseq option, train.sbatch says so and starts nothing."""
    script = os.path.join(ROOT, "examples", "slurm", "train.sbatch")
    env = slurm_environment(str(tmp_path / "bin"), os.environ.get("PATH", ""))
    outside = run(["env", "-u", "SLURM_JOB_ID", "bash", script], check=False, extra_env={"DATA": "d", "ARCH": "a"})
    assert outside.returncode != 0 and "not in a SLURM job: submit with sbatch" in outside.stderr
    bad = run(["sbatch", script], check=False, extra_env={**env, "DATA": "d", "ARCH": "a", "PRECISION": "fp16"})
    assert bad.returncode == 2 and "PRECISION=fp16: give --fp16, --bf16, --amp or nothing (fp32)" in bad.stderr


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
