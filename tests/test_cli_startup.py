"""Start-up: the data and scoring tools import neither torch nor fairseq (the package registers nothing on
import; docs/design.md, "What imports what"), and fairseq's own programs with --user-dir, the plugin's
fairseq wrapper and ``import fairseq_syntax.plugin`` register everything. Fresh interpreters: what a user
starts."""
import os
import re
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.dirname(sys.executable)
DATA_TOOLS = ["parse", "align", "binarize", "prepare", "synth", "multitask", "evaluate", "detokenize", "settings"]
LOADED = "import sys; print('torch' in sys.modules, 'fairseq' in sys.modules)"


def fresh(code, *argv):
    return subprocess.run([sys.executable, "-c", code, *argv], cwd=ROOT, capture_output=True, text=True,
                          check=True, env=dict(os.environ, PYTHONWARNINGS="ignore")).stdout.split()


def test_data_tools_import_neither_torch_nor_fairseq():
    modules = [f"fairseq_syntax.cli.{t}" for t in DATA_TOOLS] + [
        "fairseq_syntax.preparation.prepare", "fairseq_syntax.evaluation.scores", "fairseq_syntax.parsing.base",
        "fairseq_syntax.preparation.chunked", "fairseq_syntax.data.alignment.binarize"]
    out = fresh("import importlib, sys\nfor m in sys.argv[1:]: importlib.import_module(m)\n" + LOADED, *modules)
    assert out == ["False", "False"]
    assert fresh("import fairseq_syntax\n" + LOADED) == ["False", "False"]


def test_plugin_import_registers_everything():
    out = fresh("import fairseq_syntax.plugin\nfrom fairseq.models import ARCH_MODEL_REGISTRY as M\n"
                "from fairseq.tasks import TASK_REGISTRY as T\nfrom fairseq.criterions import CRITERION_REGISTRY as C\n"
                "print('transformer_dbsa' in M, 'cky_lstm' in M, 'syntax_translation' in T, "
                "'label_smoothed_cross_entropy_with_sync' in C)")
    assert out == ["True"] * 4


@pytest.mark.parametrize("program", ["fairseq-train", "fairseq-syntax-train"])
def test_training_registers_the_plugin_and_logs_as_fairseq_train_does(program, tmp_path):
    """One cold start of each training program with --user-dir, checked three ways.

    - Registration: fairseq knows the plugin's task, architecture and their options: the task's
      --parent-strategy reaches the logged configuration (for fairseq-syntax-train, whose own import loads the
      package first, fairseq would otherwise skip the plugin's subpackages and refuse --task), and a bad value
      is refused by name.
    - Logging: importing fairseq sets the root logger to DEBUG with Python's default format (fairseq's
      wav2vec2_classification.py calls logging.basicConfig at import); fairseq-train configures its logging
      before it imports fairseq, and so must fairseq-syntax-train: fairseq's format on stdout, no DEBUG lines.
    - Quiet start: with Python's default warning filters, the plugin's start-up silences hydra's deprecation
      warnings about fairseq's configuration (about twenty lines before the data is read), so stderr holds the
      error alone; and no "Please install tensorboardX" line (fairseq logs it when it imports its tasks
      without tensorboardX)."""
    missing = str(tmp_path / "no-data-bin")
    quiet = {k: v for k, v in os.environ.items() if k != "PYTHONWARNINGS"}
    command = [os.path.join(BIN, program), missing, "--user-dir", os.path.join(ROOT, "fairseq_syntax"), "--task",
               "syntax_translation", "--arch", "transformer_dep_rel", "--cpu", "--max-tokens", "64"]
    p = subprocess.run(command + ["--parent-strategy", "middle"], capture_output=True, text=True, env=quiet,
                       cwd=tmp_path)  # fairseq-train makes its default ./checkpoints before it reads the data
    error = f"error: {missing}: No such file or directory (FAIRSEQ_SYNTAX_DEBUG=1 shows where it came from)"
    assert p.returncode == 1 and p.stderr.strip().splitlines() == [error], p.stderr[-2000:]
    assert " | INFO | fairseq_cli.train | {" in p.stdout and "DEBUG" not in p.stdout, p.stdout[:2000]
    task = re.search(r"'task': \{'_name': 'syntax_translation', .*?'parent_strategy': (\w+)", p.stdout)
    assert task and task.group(1) == "middle", p.stdout[:2000]  # the logged configuration's task section
    assert "tensorboardX" not in p.stdout + p.stderr
    # a bad value is refused by name (in-process: the cold start is the run above)
    from helpers import run

    bad = run(command + ["--parent-strategy", "x"], check=False, cwd=str(tmp_path))
    assert bad.returncode == 2 and "argument --parent-strategy: invalid choice: 'x'" in bad.stderr, bad.stderr[-2000:]


def test_fairseq_commands_with_the_plugin_print_none_of_the_known_warnings(data_bin, tmp_path):
    """A training step and a decoding with the plugin's filters (fairseq_syntax/patches/known_warnings.py) on Python's
    default ones: none of the warnings fairseq's use of hydra and torch raises on every command comes out (hydra's
    deprecations, pin_memory without an accelerator, torch.cuda.amp.autocast), and the filters are narrow: another
    UserWarning from hydra or torch still shows."""
    import warnings

    from fairseq_syntax.patches import known_warnings
    from helpers import generate_cmd, run, train_cmd

    with warnings.catch_warnings(record=True) as caught:
        warnings.resetwarnings()
        warnings.simplefilter("always")
        warnings.filterwarnings("ignore", category=DeprecationWarning)  # Python's default outside __main__
        known_warnings.install()
        run(train_cmd(data_bin, str(tmp_path / "ck"), updates=1))
        run(generate_cmd(data_bin, str(tmp_path / "ck" / "checkpoint_last.pt"), ["--gen-subset", "valid",
                                                                                "--beam", "1"]))
        shown = [f"{w.category.__name__}: {w.message}" for w in caught]
        assert shown == [], shown
        for module in ("hydra.core.utils", "torch.utils.data.dataloader", "fairseq.tasks.fairseq_task"):
            warnings.warn_explicit("The version_base parameter is another", UserWarning, "x.py", 1, module=module)
        assert len(caught) == 3


PARSERS = {"parse": "get_parser", "align": "get_parser", "binarize": "get_parser", "prepare": "get_parser",
           "synth": "get_parser", "multitask": "get_parser", "evaluate": "get_parser",
           "induce_parses": "get_parser", "cky_attention": "build_parser", "plot": "get_parser",
           "settings": "get_parser"}


def all_actions(parser):
    import argparse

    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                yield from all_actions(sub)
        else:
            yield action


@pytest.mark.parametrize("module", sorted(PARSERS))
def test_every_option_of_every_tool_has_help(module):
    """--help explains every option; the usage line names the program that runs."""
    import importlib

    parser = getattr(importlib.import_module(f"fairseq_syntax.cli.{module}"), PARSERS[module])()
    undocumented = [a.option_strings or a.dest for a in all_actions(parser) if not a.help]
    assert not undocumented, (module, undocumented)
    assert parser.prog.startswith(("fairseq-syntax-", "preprocess/"))


def test_setup_py_lists_every_console_script_of_the_cli_package():
    """Every fairseq_syntax/cli module with a cli_main is a console script of setup.py (and the tests' table of
    in-process entry points), and every console script names an existing cli_main."""
    import glob
    import importlib
    import re

    from helpers import CONSOLE_SCRIPTS, ROOT

    setup = open(os.path.join(ROOT, "setup.py"), encoding="utf-8").read()
    scripts = dict((name, module) for name, module in re.findall(r'"(fairseq-syntax-[\w-]+)=([\w.]+):cli_main"', setup))
    mains = {os.path.basename(p)[:-3] for p in glob.glob(os.path.join(ROOT, "fairseq_syntax", "cli", "*.py"))
             if "\ndef cli_main(" in open(p, encoding="utf-8").read()}
    assert {m.rsplit(".", 1)[1] for m in scripts.values()} == mains
    for name, module in scripts.items():
        assert callable(getattr(importlib.import_module(module), "cli_main")), name
        assert CONSOLE_SCRIPTS.get(name) == module, name
