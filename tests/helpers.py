"""Helpers for end-to-end tests that drive the real command-line tools."""
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
USER_DIR = os.path.join(ROOT, "fairseq_syntax")
BIN = os.path.dirname(sys.executable)

def tiny_sizes():
    """The tiny presets' sizes (models/presets.py TINY, layers aside) as options: a base preset made small."""
    from fairseq_syntax.models.presets import TINY

    return [x for key, value in TINY["syntax_transformer"].items() if not key.endswith("_layers")
            for x in ("--" + key.replace("_", "-"), str(value))]


TINY_TRANSFORMER = [
    "--arch", "transformer", "--encoder-layers", "1", "--decoder-layers", "1",
    "--encoder-embed-dim", "32", "--decoder-embed-dim", "32",
    "--encoder-ffn-embed-dim", "64", "--decoder-ffn-embed-dim", "64",
    "--encoder-attention-heads", "2", "--decoder-attention-heads", "2",
]


def env():
    """The environment of the commands tests start as processes: one thread, no warnings."""
    e = dict(os.environ)
    e.setdefault("OMP_NUM_THREADS", "1")
    e["PYTHONWARNINGS"] = "ignore"
    return e


class Result:
    """What a command did: returncode, stdout, stderr (as subprocess.CompletedProcess)."""

    def __init__(self, args, returncode, stdout, stderr):
        self.args, self.returncode, self.stdout, self.stderr = args, returncode, stdout, stderr


def _entry_point(cmd):
    """The in-process entry point of a command line that runs a fairseq or plugin program: ``(function, argv)``
    with function reading sys.argv[1:] (fairseq's cli_main) or taking argv; else None."""
    import importlib

    if not cmd:
        return None
    head, rest = cmd[0], list(cmd[1:])
    if head == sys.executable and rest[:1] == ["-m"] and len(rest) > 1:
        module, rest = rest[1], rest[2:]
    elif head == sys.executable and rest and rest[0].endswith(".py") and \
            os.path.dirname(os.path.abspath(rest[0])) == os.path.join(ROOT, "preprocess"):
        module, rest = f"fairseq_syntax.cli.{os.path.basename(rest[0])[:-3]}", rest[1:]
    elif os.path.dirname(head) == BIN and os.path.basename(head).startswith("fairseq-"):
        module = CONSOLE_SCRIPTS.get(os.path.basename(head))
        if module is None:
            return None
    else:
        return None
    if not module.startswith(("fairseq_cli.", "fairseq_syntax.cli.")):
        return None
    return importlib.import_module(module).cli_main, [os.path.basename(head) if head != sys.executable else module,
                                                      *rest]


#: console script -> module with its cli_main (fairseq's and the plugin's, as setup.py installs them)
CONSOLE_SCRIPTS = {
    "fairseq-train": "fairseq_cli.train", "fairseq-generate": "fairseq_cli.generate",
    "fairseq-interactive": "fairseq_cli.interactive", "fairseq-preprocess": "fairseq_cli.preprocess",
    "fairseq-validate": "fairseq_cli.validate", "fairseq-score": "fairseq_cli.score",
    **{f"fairseq-syntax-{name.replace('_', '-')}": f"fairseq_syntax.cli.{name}" for name in (
        "parse", "align", "binarize", "prepare", "synth", "multitask", "options", "induce_parses", "evaluate",
        "detokenize", "cky_attention", "plot", "train", "generate", "interactive", "pack", "settings")},
}


def _in_process(function, argv, input, cwd):
    """Run a console entry point here, as its own process would (argv, stdin, cwd), capturing its output: file
    descriptors 1 and 2 (C-level output), sys.stdout / sys.stderr and the logging handlers that write to them;
    returns (returncode, stdout, stderr)."""
    import io
    import logging
    import tempfile

    saved = sys.argv, sys.stdin, sys.stdout, sys.stderr, os.getcwd()
    # every logger's handlers and level, restored afterwards (a CLI's logging set-up replaces root's handlers)
    loggers = [logging.getLogger()] + [x for x in logging.root.manager.loggerDict.values()
                                       if isinstance(x, logging.Logger)]
    saved_logging = [(x, list(x.handlers), x.level) for x in loggers]
    streams = [(h, h.stream) for x in loggers for h in x.handlers if type(h) is logging.StreamHandler]
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        for stream in (sys.stdout, sys.stderr):
            stream.flush()
        saved_fds = os.dup(1), os.dup(2)
        os.dup2(out.fileno(), 1)
        os.dup2(err.fileno(), 2)
        # Python-level writes through descriptors that share the files' offsets with 1 and 2
        new_out = open(os.dup(out.fileno()), "w", encoding="utf-8", buffering=1)
        new_err = open(os.dup(err.fileno()), "w", encoding="utf-8", buffering=1)
        for h, stream in streams:
            h.setStream(new_out if stream is saved[2] else new_err)
        code = 0
        try:
            sys.argv, sys.stdin, sys.stdout, sys.stderr = list(argv), io.StringIO(input or ""), new_out, new_err
            os.chdir(cwd)
            function()
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
            if not isinstance(e.code, int) and e.code is not None:
                print(e.code, file=sys.stderr)
        except KeyboardInterrupt:
            raise
        except BaseException:  # what the process would print: sys.excepthook (the plugin's one-line errors)
            code = 1
            try:
                sys.excepthook(*sys.exc_info())
            except SystemExit as e:  # the plugin's hook sets the exit status of its one-line errors
                code = e.code
        finally:
            new_out.flush()
            new_err.flush()
            sys.argv, sys.stdin, sys.stdout, sys.stderr = saved[:4]
            for h, stream in streams:
                h.setStream(stream)
            for x, handlers, level in saved_logging:
                x.handlers[:] = handlers
                x.setLevel(level)
            for x in [logging.getLogger()] + [y for y in logging.root.manager.loggerDict.values()
                                              if isinstance(y, logging.Logger)]:
                for h in x.handlers:  # handlers made during the run (a library imported then): real streams
                    if type(h) is logging.StreamHandler and h.stream in (new_out, new_err):
                        h.setStream(saved[2] if h.stream is new_out else saved[3])
            os.dup2(saved_fds[0], 1)
            os.dup2(saved_fds[1], 2)
            for fd in saved_fds:
                os.close(fd)
            new_out.close()
            new_err.close()
            os.chdir(saved[4])
        out.seek(0)
        err.seek(0)
        return code, out.read().decode("utf-8", "replace"), err.read().decode("utf-8", "replace")


def run(cmd, check=True, input=None, cwd=None, process=False, extra_env=None):
    """Run a command; on failure show its output in the assertion.

    A command line that runs a fairseq or plugin program (``fairseq-*`` console scripts, ``python -m
    fairseq_cli.X`` / ``fairseq_syntax.cli.X``, ``python preprocess/X.py``) runs in this process through its
    entry point, as fairseq's own tests call its CLIs' main; ``process=True``, and every other command (shell
    scripts, the recipes), start a real process, with ``extra_env`` added to its environment."""
    entry = None if process else _entry_point(cmd)
    if entry is not None:
        code, out, err = _in_process(*entry, input, cwd or ROOT)
        p = Result(cmd, code, out, err)
    else:
        p = subprocess.run(cmd, capture_output=True, text=True, env={**env(), **(extra_env or {})}, input=input,
                           cwd=cwd or ROOT)
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
