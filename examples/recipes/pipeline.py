"""Train, translate, score, induce: the steps the example scripts take (examples/demo/demo.py,
examples/synthetic/fidelity.py, examples/ud_pud/dbsa_uas.py), with the command lines the recipes run
(examples/recipes/runner/command_lines.py). Commands are looked up on ``PATH`` (as a shell script would), so
the tests' stand-ins (tests/forkserver.py) run them; a failed step prints the end of its log and what failed, and
returns False (None for :func:`induce`).

Only the standard library is imported: a run's own process stays light while its commands train.
"""
import os
import re
import subprocess
import sys

from fairseq_syntax.errors import SyntaxDataError
from runner.command_lines import (  # noqa: F401  (the scripts take SMALL_TRANSFORMER here)
    SMALL_TRANSFORMER,
    USER_DIR,
    generate_command,
    induce_command,
    split_generate_output,
    train_command,
)


def tail(path, lines):
    """The last ``lines`` lines of a log, to stderr (what failed is in them)."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            sys.stderr.write("".join(f.readlines()[-lines:]))
    except OSError:
        pass


def start_train(log, data, save_dir, options):
    """Start a training, its output to ``log``; returns the process (:func:`finish_train` waits for it)."""
    with open(log, "wb") as out:
        return subprocess.Popen(train_command(data, save_dir, options), stdout=out, stderr=subprocess.STDOUT)


def finish_train(process, log):
    """Wait for a training; on failure the end of its log and one line."""
    if process.wait() == 0:
        return True
    tail(log, 20)
    print(f"fairseq-train failed (log: {log})", file=sys.stderr)
    return False


def train(log, data, save_dir, options):
    return finish_train(start_train(log, data, save_dir, options), log)


def generate(out, data, checkpoint, options):
    """Translate the test split: ``out``/generate.{out,log}, and ``out``/hyp.tok and ref.tok in sentence order."""
    os.makedirs(out, exist_ok=True)
    output, log = os.path.join(out, "generate.out"), os.path.join(out, "generate.log")
    with open(output, "wb") as stdout, open(log, "wb") as stderr:
        code = subprocess.call(generate_command(data, checkpoint, options), stdout=stdout, stderr=stderr)
    if code:
        tail(log, 5)
        print(f"fairseq-generate failed (log: {log})", file=sys.stderr)
        return False
    try:
        hyps, refs = split_generate_output(out)
    except SyntaxDataError as e:
        print(f"{output}: {e}", file=sys.stderr)
        return False
    if hyps != refs:
        print(f"{output}: {hyps} hypotheses for {refs} references", file=sys.stderr)
        return False
    return True


def bleu(ref, hyp):
    """sacreBLEU (13a) of ``hyp`` against ``ref``, 2 decimals, as the sacrebleu command prints it; None (its
    error on stderr) on failure."""
    done = subprocess.run(["sacrebleu", ref, "-i", hyp, "-m", "bleu", "-b", "-w", "2"], stdout=subprocess.PIPE,
                          text=True, check=False)
    if done.returncode:
        print(f"sacrebleu {hyp} failed", file=sys.stderr)
        return None
    return done.stdout.strip()


def induce(prefix, data, checkpoint, options=()):
    """The parse heads' trees of the test split (``prefix``.LANG.conllu); returns their UAS lines, None on
    failure."""
    os.makedirs(os.path.dirname(prefix) or ".", exist_ok=True)
    output, log = prefix + ".uas.txt", prefix + ".uas.log"
    with open(output, "wb") as stdout, open(log, "wb") as stderr:
        code = subprocess.call(induce_command(data, checkpoint, prefix, options), stdout=stdout, stderr=stderr)
    if code:
        tail(log, 5)
        print(f"fairseq-syntax-induce-parses failed (log: {log})", file=sys.stderr)
        return None
    with open(output, encoding="utf-8") as f:
        return [line for line in f if line.startswith("UAS")]


def last_update(log):
    """The last ``num_updates`` a fairseq log shows (0 before the first)."""
    try:
        with open(log, encoding="utf-8", errors="replace") as f:
            found = re.findall(r"num_updates[= ]([0-9]+)", f.read())
    except OSError:
        return 0
    return int(found[-1]) if found else 0
