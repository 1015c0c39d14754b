"""Helpers for end-to-end tests that drive the real command-line tools."""
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
USER_DIR = os.path.join(ROOT, "fairseq_syntax")
BIN = os.path.dirname(sys.executable)

TINY_TRANSFORMER = [
    "--arch", "transformer", "--encoder-layers", "1", "--decoder-layers", "1",
    "--encoder-embed-dim", "32", "--decoder-embed-dim", "32",
    "--encoder-ffn-embed-dim", "64", "--decoder-ffn-embed-dim", "64",
    "--encoder-attention-heads", "2", "--decoder-attention-heads", "2",
]


FORKSERVER_DIR = os.path.join(ROOT, "tests", "forkserver")
_forkserver = {}


def forkserver_socket():
    """The socket of this test process's fork server (tests/forkserver), started on first use; None when
    FAIRSEQ_SYNTAX_TEST_FORKSERVER=0. Commands run through it skip the ~5 s torch + fairseq import."""
    if os.environ.get("FAIRSEQ_SYNTAX_TEST_FORKSERVER", "1") == "0":
        return None
    if "socket" not in _forkserver:
        import atexit
        import tempfile

        d = tempfile.mkdtemp(prefix="fsx-forkserver-")
        path = os.path.join(d, "socket")
        log = open(os.path.join(d, "server.log"), "w")
        proc = subprocess.Popen([sys.executable, os.path.join(FORKSERVER_DIR, "server.py"), path, USER_DIR],
                                env=env(forkserver=False), stdin=subprocess.DEVNULL, stdout=log, stderr=log)

        def stop():
            import shutil

            proc.kill()
            proc.wait()
            log.close()
            shutil.rmtree(d, ignore_errors=True)

        atexit.register(stop)
        _forkserver["socket"] = path
    return _forkserver["socket"]


def env(forkserver=True):
    """The environment of the commands tests run. With forkserver (the default), Python processes that
    run a fairseq program are handed to the fork server (tests/forkserver/sitecustomize.py); every other
    process runs as usual."""
    e = dict(os.environ)
    e.setdefault("OMP_NUM_THREADS", "1")
    e["PYTHONWARNINGS"] = "ignore"
    e["PYTHONPATH"] = os.pathsep.join(p for p in (FORKSERVER_DIR, e.get("PYTHONPATH")) if p)
    e.pop("FAIRSEQ_SYNTAX_FORKSERVER", None)
    socket = forkserver_socket() if forkserver else None
    if socket:
        e["FAIRSEQ_SYNTAX_FORKSERVER"] = socket
    return e


def run(cmd, check=True, input=None, cwd=None, forkserver=True):
    """Run a command; on failure show its output in the assertion. forkserver=False: every process it
    starts is a fresh interpreter (for tests of start-up and exit behaviour)."""
    p = subprocess.run(cmd, capture_output=True, text=True, env=env(forkserver), input=input, cwd=cwd or ROOT)
    if check and p.returncode != 0:
        raise AssertionError(f"command failed ({p.returncode}): {' '.join(cmd)}\n--- stdout\n{p.stdout[-4000:]}\n"
                             f"--- stderr\n{p.stderr[-6000:]}")
    return p


def tool(name):
    return os.path.join(BIN, name)


def preprocess(name):
    return [sys.executable, os.path.join(ROOT, "preprocess", f"{name}.py")]


def train_cmd(data, save_dir, extra=(), updates=4, arch=TINY_TRANSFORMER):
    return [
        tool("fairseq-train"), data, "--user-dir", USER_DIR, "--task", "syntax_translation", *arch,
        "--optimizer", "adam", "--lr", "1e-3", "--criterion", "label_smoothed_cross_entropy",
        "--label-smoothing", "0.1", "--max-tokens", "1000", "--max-update", str(updates), "--cpu",
        "--save-dir", save_dir, "--no-epoch-checkpoints", "--log-format", "simple", "--log-interval", "1",
        "--num-workers", "0", "--seed", "3", *extra,
    ]


def generate_cmd(data, checkpoint, extra=()):
    return [
        tool("fairseq-generate"), data, "--user-dir", USER_DIR, "--task", "syntax_translation",
        "--path", checkpoint, "--beam", "4", "--batch-size", "16", "--remove-bpe", "--cpu",
        # models of a few updates emit garbage up to the length limit (200 steps x beam): cap it
        "--max-len-a", "1.2", "--max-len-b", "4", *extra,
    ]


def synthetic_data_bin(root, train, valid, test, merges, seed):
    """synth -> prepare through the real CLIs; returns the data-bin path."""
    raw = os.path.join(root, "raw")
    run(preprocess("synth") + ["-o", raw, "--train", str(train), "--valid", str(valid), "--test", str(test),
                               "--seed", str(seed)])
    out = os.path.join(root, "data-bin")
    run(preprocess("prepare") + ["-s", "src", "-t", "tgt", "--trainpref", os.path.join(raw, "train"),
                                 "--validpref", os.path.join(raw, "valid"), "--testpref", os.path.join(raw, "test"),
                                 "--destdir", out, "--bpe-merges", str(merges), "--no-progress"])
    return out


class TensorList:
    """An in-memory indexed dataset of 1-D long tensors (what fairseq's token/syntax datasets return)."""

    def __init__(self, items):
        import numpy as np
        import torch

        self.items = [torch.tensor(x, dtype=torch.long) for x in items]
        self.sizes = np.array([len(x) for x in items])

    def __getitem__(self, i):
        return self.items[i]

    def __len__(self):
        return len(self.items)


def tiny_model(arch, task_extra=None, **overrides):
    """A model of a (tiny) preset, built as fairseq builds it, over a 24-symbol dictionary; eval mode."""
    import argparse

    from fairseq.data import Dictionary
    from fairseq.models import ARCH_CONFIG_REGISTRY, ARCH_MODEL_REGISTRY

    import fairseq_syntax.plugin  # noqa: F401  (registers the models)

    d = Dictionary()
    for i in range(20):
        d.add_symbol(f"w{i}")
    args = argparse.Namespace(arch=arch, dropout=0.0, attention_dropout=0.0, share_all_embeddings=True, **overrides)
    ARCH_CONFIG_REGISTRY[arch](args)
    task = argparse.Namespace(source_dictionary=d, target_dictionary=d, **(task_extra or {}))
    return ARCH_MODEL_REGISTRY[arch].build_model(args, task).eval(), d
