"""The fairseq commands of the recipes, as examples/recipes/pipeline.sh runs them for the other example scripts:
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

from fairseq_syntax.recipe_steps.recipe import ROOT, Recipe, RecipeError
from fairseq_syntax.recipe_steps.run_locks import inherited_fds

USER_DIR = os.path.join(ROOT, "fairseq_syntax")
#: prepare.py's lines left out of the recipe's output
_NOISE = re.compile(r"tensorboardX|INFO:fairseq_cli| \| INFO \| fairseq_cli")


def python() -> str:
    return shutil.which("python") or sys.executable


def train(recipe: Recipe, data: str, save: str, args: List[str]) -> None:
    """Print the command line ([NAME] ...); unless DRY_RUN=1, become it."""
    task = [] if "--task" in args else ["--task", "syntax_translation"]
    cmd = ["fairseq-syntax-train", data, "--user-dir", USER_DIR, *task, "--save-dir", save, *args]
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
    task = [] if "--task" in args else ["--task", "syntax_translation"]
    os.makedirs(out, exist_ok=True)
    log = os.path.join(out, "generate.log")
    with open(os.path.join(out, "generate.out"), "w") as o, open(log, "w") as e:
        code = subprocess.run(["fairseq-generate", data, "--user-dir", USER_DIR, *task, "--path", checkpoint,
                               "--remove-bpe", *args], stdout=o, stderr=e, pass_fds=inherited_fds()).returncode
    if code:
        sys.stderr.write("".join(open(log, errors="replace").readlines()[-5:]))
        raise RecipeError(f"fairseq-generate failed (log: {log}): translating the test set failed")
    found = {"H": {}, "T": {}}
    with open(os.path.join(out, "generate.out"), encoding="utf-8", errors="surrogateescape") as f:
        for line in f:
            kind, _, rest = line.rstrip("\n").partition("-")
            if kind in found and "\t" in rest:
                fields = rest.split("\t")
                found[kind][int(fields[0])] = fields[2] if kind == "H" else fields[1]
    for kind, name in (("H", "hyp.tok"), ("T", "ref.tok")):
        with open(os.path.join(out, name), "w", encoding="utf-8", errors="surrogateescape") as f:
            f.writelines(found[kind][i] + "\n" for i in sorted(found[kind]))
    if len(found["H"]) != len(found["T"]):
        raise RecipeError(f"{out}/generate.out: {len(found['H'])} hypotheses for {len(found['T'])} references")


def induce(prefix: str, data: str, checkpoint: str, args: List[str]) -> str:
    """The parse heads' trees (PREFIX.LANG.conllu) on the test split; their UAS lines."""
    os.makedirs(os.path.dirname(prefix), exist_ok=True)
    with open(f"{prefix}.uas.txt", "w") as o, open(f"{prefix}.uas.log", "w") as e:
        code = subprocess.run(["fairseq-syntax-induce-parses", data, "--user-dir", USER_DIR, "--path", checkpoint,
                               "--split", "test", "--output-prefix", prefix, *args], stdout=o, stderr=e,
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
