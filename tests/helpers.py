"""Helpers for end-to-end tests that drive the real command-line tools."""
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
USER_DIR = os.path.join(ROOT, "fairseq_syntax")
BIN = os.path.dirname(sys.executable)


def quick_subset(values, quick):
    """``values`` as pytest parameters, those not in ``quick`` marked slow: the quick tier (``-m 'not slow'``)
    runs one or a few of a family of presets, covering each mechanism once; the full suite runs them all."""
    import pytest

    return [v if v in quick else pytest.param(*(v if isinstance(v, tuple) else (v,)), marks=pytest.mark.slow)
            for v in values]

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
    with function reading sys.argv[1:] (fairseq's cli_main and the plugin's); else None."""
    import importlib

    if not cmd:
        return None
    head, rest = cmd[0], list(cmd[1:])
    if head == sys.executable and rest and os.path.abspath(rest[0]) in IN_PROCESS_SCRIPTS:
        return _script_main(os.path.abspath(rest[0])), [rest[0], *rest[1:]]
    if head == sys.executable and rest[:1] == ["-m"] and len(rest) > 1:
        module, rest = rest[1], rest[2:]
    elif head == sys.executable and rest and rest[0].endswith(".py") and \
            os.path.dirname(os.path.abspath(rest[0])) == os.path.join(ROOT, "preprocess"):
        module, rest = f"fairseq_syntax.cli.{os.path.basename(rest[0])[:-3]}", rest[1:]
    elif os.path.dirname(head) == BIN and os.path.basename(head) in CONSOLE_SCRIPTS:
        module = CONSOLE_SCRIPTS[os.path.basename(head)]
    else:
        return None
    if not module.startswith(_CLI_PACKAGES):
        return None
    return importlib.import_module(module).cli_main, [os.path.basename(head) if head != sys.executable else module,
                                                      *rest]


#: example scripts whose ``main()`` reads sys.argv and whose ``__main__`` only calls it: run in-process too
IN_PROCESS_SCRIPTS = {os.path.join(ROOT, "examples", "recipes", "results_table.py")}


def _script_main(path):
    """The ``main`` of an example script, the script imported once by its path."""
    import importlib.util

    name = "script_" + os.path.basename(path)[:-3]
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name].main


#: the packages whose console scripts the tests run in-process (fairseq's and the plugin's)
_CLI_PACKAGES = ("fairseq_cli.", "fairseq_syntax.cli.")


def console_scripts():
    """console script -> module with its cli_main, for fairseq's and the plugin's installed console scripts
    (the entry points setup.py and fairseq's own setup install, read from the environment's metadata)."""
    from importlib.metadata import entry_points

    return {e.name: e.module for e in entry_points(group="console_scripts")
            if e.module.startswith(_CLI_PACKAGES) and e.attr == "cli_main" and e.name not in OWN_PROCESS}


#: console scripts that always run as a process of their own (a real one, or forked: tests/forkserver.py), never
#: in-process: Hydra's entry point owns process state (its global instance, the working folder, logging)
OWN_PROCESS = ("fairseq-hydra-train",)


CONSOLE_SCRIPTS = console_scripts()


def _exit_status(e):
    """The exit status of a process that ends with SystemExit ``e``, printing a message code as Python does."""
    if e.code is None:
        return 0
    if isinstance(e.code, int):
        return e.code & 0xFF
    print(e.code, file=sys.stderr)
    return 1


def run_entry_point(main, argv, cwd=None, input=None, capture=False, interrupt_raises=False):
    """Run a console script's entry point in this process as its console script would run it: ``sys.argv =
    argv``, in ``cwd``, ``sys.exit(main())``; returns ``(status, stdout, stderr)``. The exit status is the
    interpreter's: SystemExit's code (a message is printed, status 1); an uncaught exception is shown by
    sys.excepthook (the plugin's hook prints its one-line errors and exits with their status), status 1.

    It serves both ways the tests run a command without a fresh interpreter: :func:`run` (``capture=True``:
    standard input from ``input``; descriptors 1 and 2, sys.stdout / sys.stderr and the logging handlers that
    write to them captured and returned; argv, streams, cwd and logging restored afterwards; a KeyboardInterrupt
    stops the tests) and the fork server's child (tests/forkserver.py: the process is the command's own, its
    streams are the caller's; stdout and stderr are returned as None)."""
    if not capture:
        return _call(main, argv, cwd, interrupt_raises), None, None
    with _captured(input) as output:
        code = _call(main, argv, cwd, interrupt_raises=True)
    return (code, *output)


def _call(main, argv, cwd, interrupt_raises):
    sys.argv = list(argv)
    try:
        if cwd is not None:
            os.chdir(cwd)
        sys.exit(main())
    except SystemExit as e:
        return _exit_status(e)
    except KeyboardInterrupt:
        if interrupt_raises:
            raise
        return _uncaught()
    except BaseException:
        return _uncaught()


def _uncaught():
    """What the interpreter does with the exception being handled: sys.excepthook shows it, status 1 (or the
    status the hook exits with)."""
    try:
        sys.excepthook(*sys.exc_info())
    except SystemExit as e:
        return _exit_status(e)
    return 1


class _captured:
    """Standard input from a string, and the output of descriptors 1 and 2, sys.stdout / sys.stderr and the
    logging handlers that write to them, into ``self.output`` = [stdout, stderr] when it ends; sys.argv, the
    streams, the working folder and every logger's handlers and level as they were (a CLI's logging set-up
    replaces root's handlers)."""

    def __init__(self, input):
        self.input = input

    @staticmethod
    def _loggers():
        import logging

        return [logging.getLogger()] + [x for x in logging.root.manager.loggerDict.values()
                                        if isinstance(x, logging.Logger)]

    def __enter__(self):
        import io
        import logging
        import tempfile

        self.saved = sys.argv, sys.stdin, sys.stdout, sys.stderr, os.getcwd()
        loggers = self._loggers()
        self.saved_logging = [(x, list(x.handlers), x.level) for x in loggers]
        self.streams = [(h, h.stream) for x in loggers for h in x.handlers if type(h) is logging.StreamHandler]
        self.out, self.err = tempfile.TemporaryFile(), tempfile.TemporaryFile()
        for stream in (sys.stdout, sys.stderr):
            stream.flush()
        self.saved_fds = os.dup(1), os.dup(2)
        os.dup2(self.out.fileno(), 1)
        os.dup2(self.err.fileno(), 2)
        # Python-level writes through descriptors that share the files' offsets with 1 and 2
        self.new_out = open(os.dup(self.out.fileno()), "w", encoding="utf-8", buffering=1)
        self.new_err = open(os.dup(self.err.fileno()), "w", encoding="utf-8", buffering=1)
        for h, stream in self.streams:
            h.setStream(self.new_out if stream is self.saved[2] else self.new_err)
        sys.stdin, sys.stdout, sys.stderr = io.StringIO(self.input or ""), self.new_out, self.new_err
        self.output = []
        return self.output

    def __exit__(self, *exc):
        import logging

        new_out, new_err, saved = self.new_out, self.new_err, self.saved
        try:
            new_out.flush()
            new_err.flush()
            sys.argv, sys.stdin, sys.stdout, sys.stderr = saved[:4]
            for h, stream in self.streams:
                h.setStream(stream)
            for x, handlers, level in self.saved_logging:
                x.handlers[:] = handlers
                x.setLevel(level)
            for x in self._loggers():
                for h in x.handlers:  # handlers made during the run (a library imported then): real streams
                    if type(h) is logging.StreamHandler and h.stream in (new_out, new_err):
                        h.setStream(saved[2] if h.stream is new_out else saved[3])
            os.dup2(self.saved_fds[0], 1)
            os.dup2(self.saved_fds[1], 2)
            for fd in self.saved_fds:
                os.close(fd)
            new_out.close()
            new_err.close()
            os.chdir(saved[4])
            for f in (self.out, self.err):
                f.seek(0)
                self.output.append(f.read().decode("utf-8", "replace"))
        finally:
            self.out.close()
            self.err.close()
        return False


def run(cmd, check=True, input=None, cwd=None, process=False, extra_env=None):
    """Run a command; on failure show its output in the assertion.

    A command line that runs a fairseq or plugin program (``fairseq-*`` console scripts, ``python -m
    fairseq_cli.X`` / ``fairseq_syntax.cli.X``, ``python preprocess/X.py``) runs in this process through its
    entry point, as fairseq's own tests call its CLIs' main; ``process=True``, and every other command (shell
    scripts, the recipes), start a real process, with ``extra_env`` added to its environment."""
    entry = None if process else _entry_point(cmd)
    if entry is not None:
        code, out, err = run_entry_point(*entry, cwd=cwd or ROOT, input=input, capture=True)
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


def train_one_step(arch, save_dir, extra=(), criterion="label_smoothed_cross_entropy"):
    """One training step of a (tiny) architecture through fairseq-syntax-train on the golden data-bin
    (tests/data/golden: its train split only, so no validation); returns the checkpoint it saved. A new
    mechanism's preset runs here before it has a recipe (docs/extending.md)."""
    import os

    data = os.path.join(ROOT, "tests", "data", "golden", "data-bin")
    run([tool("fairseq-syntax-train"), data, "--task", "syntax_translation", "--source-lang", "en", "--target-lang",
         "de", "--arch", arch, "--criterion", criterion, "--optimizer", "adam", "--lr", "1e-3", "--max-tokens",
         "1000", "--max-update", "1", "--cpu", "--save-dir", str(save_dir), "--no-epoch-checkpoints",
         "--disable-validation", "--num-workers", "0", "--seed", "1", *extra])
    return os.path.join(str(save_dir), "checkpoint_last.pt")


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
