"""The fairseq commands of the recipes (their command lines: :mod:`.command_lines`, shared with the example scripts):
fairseq-syntax-train (the step becomes it: the locks' descriptors pass on to it), fairseq-generate with the
hypotheses extracted in sentence order, fairseq-syntax-induce-parses, and preprocess/prepare.py (run by the
``python`` on PATH, the environment's). Commands are found on PATH."""
import os
import re
import shlex
import shutil
import subprocess
import sys
from typing import List

from runner.command_lines import (
    generate_command,
    induce_command,
    split_generate_output,
    train_command,
)
from fairseq_syntax.errors import SyntaxDataError
from runner.recipe import ROOT, Recipe, RecipeError
from runner.run_locks import inherited_fds

#: prepare.py's lines left out of the recipe's output
_NOISE = re.compile(r"tensorboardX|INFO:fairseq_cli| \| INFO \| fairseq_cli")


def python() -> str:
    return shutil.which("python") or sys.executable


def train(recipe: Recipe, data: str, save: str, args: List[str]) -> None:
    """Print the command line ([NAME] ...); unless DRY_RUN=1, become it."""
    cmd = train_command(data, save, args)
    recipe.log(shlex.join(cmd))
    if recipe.dry_run:
        return
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        os.execvp(cmd[0], cmd)
    except OSError as e:
        raise RecipeError(f"{cmd[0]}: {e.strerror}") from None


def generate(out: str, data: str, checkpoint: str, args: List[str]) -> None:
    """Translate the test split: OUT/generate.{out,log}, OUT/hyp.tok and OUT/ref.tok in sentence order."""
    os.makedirs(out, exist_ok=True)
    log = os.path.join(out, "generate.log")
    with open(os.path.join(out, "generate.out"), "w") as o, open(log, "w") as e:
        code = subprocess.run(generate_command(data, checkpoint, args), stdout=o, stderr=e,
                              pass_fds=inherited_fds()).returncode
    if code:
        sys.stderr.write("".join(open(log, errors="replace").readlines()[-5:]))
        raise RecipeError(f"fairseq-generate failed (log: {log}): translating the test set failed")
    try:
        hyps, refs = split_generate_output(out)
    except SyntaxDataError as e:
        raise RecipeError(f"fairseq-generate's output: {e}") from None
    if hyps != refs:
        raise RecipeError(f"{out}/generate.out: {hyps} hypotheses for {refs} references")


def induce(prefix: str, data: str, checkpoint: str, args: List[str]) -> str:
    """The parse heads' trees (PREFIX.LANG.conllu) on the test split; their UAS lines."""
    os.makedirs(os.path.dirname(prefix), exist_ok=True)
    with open(f"{prefix}.uas.txt", "w") as o, open(f"{prefix}.uas.log", "w") as e:
        code = subprocess.run(induce_command(data, checkpoint, prefix, args), stdout=o, stderr=e,
                              pass_fds=inherited_fds()).returncode
    if code:
        sys.stderr.write("".join(open(f"{prefix}.uas.log", errors="replace").readlines()[-5:]))
        raise RecipeError(f"fairseq-syntax-induce-parses failed (log: {prefix}.uas.log): inducing the parse heads' "
                          "trees failed")
    return "".join(line for line in open(f"{prefix}.uas.txt", encoding="utf-8") if line.startswith("UAS"))


def prepare(args: List[str]) -> None:
    """preprocess/prepare.py ARGS, its output but fairseq's INFO lines to stderr; a failure stops the step."""
    p = subprocess.Popen([python(), os.path.join(ROOT, "preprocess", "prepare.py"), *args], stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, pass_fds=inherited_fds())
    for line in p.stdout:
        if not _NOISE.search(line.decode("utf-8", "replace")):
            sys.stderr.buffer.write(line)
            sys.stderr.flush()
    if p.wait():
        raise RecipeError(f"preprocess/prepare.py failed (exit status {p.returncode})")
