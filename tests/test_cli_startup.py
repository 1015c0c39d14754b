"""The data and scoring tools start without importing fairseq (fairseq_syntax/__init__.py); every other
program importing the package gets the models, tasks and criterions registered."""
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROBE = ("import sys; sys.argv = [{prog!r}]; import fairseq_syntax; "
         "print('fairseq' in sys.modules, 'torch' in sys.modules); "
         "from fairseq.models import ARCH_MODEL_REGISTRY; print('transformer_dbsa' in ARCH_MODEL_REGISTRY)")


def probe(prog):
    out = subprocess.run([sys.executable, "-c", PROBE.format(prog=prog)], cwd=ROOT, capture_output=True, text=True,
                         check=True).stdout.split("\n")
    return out[0], out[1]


@pytest.mark.parametrize("prog", ["/venv/bin/fairseq-syntax-evaluate", "fairseq-syntax-parse",
                                  os.path.join(ROOT, "preprocess", "prepare.py")])
def test_data_tools_do_not_import_fairseq(prog):
    loaded, registered = probe(prog)
    assert loaded == "False False" and registered == "False"


@pytest.mark.parametrize("prog", ["/venv/bin/fairseq-train", "fairseq-syntax-induce-parses", "-c",
                                  os.path.join(ROOT, "examples", "prepare.py")])
def test_other_programs_register_everything(prog):
    loaded, registered = probe(prog)
    assert loaded == "True True" and registered == "True"


PARSERS = {"parse": "get_parser", "align": "get_parser", "binarize": "get_parser", "prepare": "get_parser",
           "synth": "get_parser", "multitask": "get_parser", "evaluate": "get_parser",
           "induce_parses": "get_parser", "cky_attention": "build_parser", "plot": "get_parser"}


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
    """--help explains every option (reviewed: issue 17); the usage line names the program that runs."""
    import importlib

    parser = getattr(importlib.import_module(f"fairseq_syntax.cli.{module}"), PARSERS[module])()
    undocumented = [a.option_strings or a.dest for a in all_actions(parser) if not a.help]
    assert not undocumented, (module, undocumented)
    assert parser.prog.startswith(("fairseq-syntax-", "preprocess/"))
