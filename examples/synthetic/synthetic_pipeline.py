"""Train, translate, score: the steps that the runs on the synthetic corpus (examples/demo/demo.py and
examples/synthetic/fidelity.py) take, with the command lines and files of examples/recipes/pipeline.sh, which the
shell recipes source. Commands are looked up on ``PATH`` (as a shell script would), so the tests' stand-ins
(tests/forkserver.py) run them; each step's output goes to the files pipeline.sh writes, and a failed step
prints the end of its log and what failed, and returns False (None for :func:`induce`).

Only the standard library is imported: a run's own process stays light while its commands train.
"""
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
USER_DIR = os.path.join(ROOT, "fairseq_syntax")
# the size of the small CPU runs, as pipeline.sh's SMALL_TRANSFORMER: 3+3 layers, d 128, FFN 256, 4 heads
SMALL_TRANSFORMER = ("--encoder-layers", "3", "--decoder-layers", "3", "--encoder-embed-dim", "128",
                     "--decoder-embed-dim", "128", "--encoder-ffn-embed-dim", "256", "--decoder-ffn-embed-dim",
                     "256", "--encoder-attention-heads", "4", "--decoder-attention-heads", "4")


def tail(path, lines):
    """The last ``lines`` lines of a log, to stderr (what failed is in them)."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            sys.stderr.write("".join(f.readlines()[-lines:]))
    except OSError:
        pass


def _task(options):
    return [] if "--task" in options else ["--task", "syntax_translation"]


def train_command(data, save_dir, options):
    """fairseq-syntax-train with the plugin, the syntax_translation task unless ``options`` name a --task."""
    return ["fairseq-syntax-train", data, "--user-dir", USER_DIR, *_task(options), "--save-dir", save_dir, *options]


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


def _lines(path, tag, field):
    """Field ``field`` (tab-separated) of the lines of fairseq-generate's output tagged ``tag`` (H, T), in
    sentence order."""
    found = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.startswith(tag + "-"):
                fields = line.rstrip("\n").split("\t")
                found.append((int(fields[0][len(tag) + 1:]), fields[field] if len(fields) > field else ""))
    return [text for _, text in sorted(found, key=lambda pair: pair[0])]


def generate(out, data, checkpoint, options):
    """Translate the test split: ``out``/generate.{out,log}, and ``out``/hyp.tok and ref.tok in sentence order."""
    os.makedirs(out, exist_ok=True)
    output, log = os.path.join(out, "generate.out"), os.path.join(out, "generate.log")
    with open(output, "wb") as stdout, open(log, "wb") as stderr:
        code = subprocess.call(["fairseq-generate", data, "--user-dir", USER_DIR, *_task(options), "--path",
                                checkpoint, "--remove-bpe", *options], stdout=stdout, stderr=stderr)
    if code:
        tail(log, 5)
        print(f"fairseq-generate failed (log: {log})", file=sys.stderr)
        return False
    hyps, refs = _lines(output, "H", 2), _lines(output, "T", 1)
    for name, lines in (("hyp.tok", hyps), ("ref.tok", refs)):
        with open(os.path.join(out, name), "w", encoding="utf-8") as f:
            f.writelines(line + "\n" for line in lines)
    if len(hyps) != len(refs):
        print(f"{output}: {len(hyps)} hypotheses for {len(refs)} references", file=sys.stderr)
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
        code = subprocess.call(["fairseq-syntax-induce-parses", data, "--user-dir", USER_DIR, "--path", checkpoint,
                                "--split", "test", "--output-prefix", prefix, *options], stdout=stdout, stderr=stderr)
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
