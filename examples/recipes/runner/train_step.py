"""train.sh MODEL [fairseq-train options...]: the model's settings from the table (the paper's), its batch split over
GPUS with MAX_TOKENS per GPU batch, EXTRA_TRAIN_ARGS and the extra arguments last; SAMPLE=1 narrows the model to
run in seconds on CPU. A killed training resumes from its checkpoint_last.pt (fairseq's own resumption).

What a model trains on is written at its first start to WORK/checkpoints/MODEL/trained_on.txt: the SHA-256 of
the data-bin's token dictionaries and BPE codes (``DIGEST  FILE`` lines). A training resumed on a data-bin
prepared again otherwise (other tokens or codes, dictionaries of the same sizes) would go on silently on other
text: refused, naming the files that differ. examples/recipes/results_table.py reads the record for models
whose task keeps no digests in its checkpoints (fairseq's translation task: the LSTMs). A training begun before
the record is not held to it."""
import fnmatch
import os
import shlex
from typing import List

from fairseq_syntax.durable_files import atomic_write, file_sha256
from runner import commands
from runner.recipe import Recipe, RecipeError
from runner.run_locks import data_lock, model_lock

SAMPLE_TRANSFORMER = ["--encoder-embed-dim", "32", "--decoder-embed-dim", "32", "--encoder-ffn-embed-dim", "64",
                      "--decoder-ffn-embed-dim", "64"]
SAMPLE_RUN = ["--max-update", "2", "--cpu", "--num-workers", "0", "--max-tokens", "1024", "--batch-size", "64",
              "--update-freq", "1", "--no-epoch-checkpoints", "--log-interval", "1"]


def require_prepared(data_bin: str) -> None:
    """prepare.sh finished ``data_bin`` (its .prepared marker), or stop: fairseq's own task (the LSTMs', C&H's)
    does not look for an interrupted prepare's marker as syntax_translation does."""
    if not os.path.isdir(data_bin):
        raise RecipeError(f"{data_bin} does not exist: run prepare.sh first")
    if not os.path.isfile(os.path.join(data_bin, ".prepared")):
        raise RecipeError(f"{data_bin} is not finished (no .prepared: its prepare.sh was interrupted or is still "
                          "running): run prepare.sh again")


def text_digests(data_bin: str) -> str:
    """``DIGEST  FILE`` of the data-bin's token dictionaries and BPE codes (not the parses' label dictionaries)."""
    names = sorted(n for n in os.listdir(data_bin) if os.path.isfile(os.path.join(data_bin, n)) and
                   (fnmatch.fnmatch(n, "dict.*.txt") and not n.endswith(".labels.txt") or "codes" in n))
    dicts = [n for n in names if n.startswith("dict.")]  # in the order the shell globs list them
    return "".join(f"{file_sha256(os.path.join(data_bin, n))}  {n}\n" for n in dicts + [n for n in names
                                                                                      if n not in dicts])


def trained_on(data_bin: str, checkpoints: str) -> None:
    now = text_digests(data_bin)
    record = os.path.join(checkpoints, "trained_on.txt")
    if os.path.isfile(record):
        old = open(record, encoding="utf-8").read()
        old_lines, now_lines = set(old.splitlines()) - {""}, set(now.splitlines()) - {""}
        if old_lines != now_lines:  # (as sets: the order the shell listed them in before is not the text)
            differ = sorted({line.split("  ", 1)[-1] for line in old_lines ^ now_lines})
            raise RecipeError(f"{data_bin} is not the data-bin {checkpoints} was trained on: {' '.join(differ)} differ "
                              f"from {record}; train on the data-bin it started on, or remove {checkpoints} to train "
                              "it again")
    elif not os.path.isfile(os.path.join(checkpoints, "checkpoint_last.pt")):
        os.makedirs(checkpoints, exist_ok=True)
        atomic_write(record, now.encode("utf-8"))


def sample_options(train: List[str]) -> List[str]:
    """The paper's model narrowed to run in seconds on CPU (a switch to the head's own tree after the first of
    its 2 updates)."""
    narrow = ["--embed-dim", "32"] if "lstm" in shlex.join(train) else SAMPLE_TRANSFORMER
    after = ["--self-parse-train-after", "1"] if "--self-parse-train-after" in train else []
    return narrow + SAMPLE_RUN + after


def train(recipe: Recipe, model: str, extra: List[str]) -> None:
    s = recipe.model(model, "train.sh")
    if s.checkpoint_of:  # nothing of its own to train (a queue passes over it)
        if not os.path.isdir(os.path.join(recipe.work, "checkpoints", s.checkpoint_of)):
            raise RecipeError(f"{model} decodes {s.checkpoint_of}'s checkpoint: train {s.checkpoint_of} first")
        recipe.log(f"{model} decodes {s.checkpoint_of}'s checkpoint: nothing to train (evaluate.sh {model})")
        return
    data_bin = os.path.join(recipe.data_work, s.data, "data-bin")
    require_prepared(data_bin)
    data_lock(recipe, True, f"train {model}")
    model_lock(recipe, model)
    opts = list(s.train)
    if recipe.sample:  # validation BLEU of a 2-update model: cap its output length as evaluate does
        for i, word in enumerate(opts[:-1]):
            if word == "--eval-bleu-args":
                value = opts[i + 1][:-1] if opts[i + 1].endswith("}") else opts[i + 1]
                opts[i + 1] = value + ', "max_len_a": 1.2, "max_len_b": 4}'
    cmd = ["--task", s.task, "--source-lang", recipe.src, "--target-lang", recipe.tgt, *opts,
           *recipe.batch_args(s.batch), "--log-format", "simple", "--log-interval", "100",
           *(sample_options(list(s.train)) if recipe.sample else []), *recipe.var("EXTRA_TRAIN_ARGS").split(), *extra]
    checkpoints = os.path.join(recipe.work, "checkpoints", model)
    if s.starts_from:  # fairseq resumes from checkpoints/MODEL/checkpoint_last.pt where one exists
        model_lock(recipe, s.starts_from, shared=True)  # not from a best checkpoint still being trained
        start = os.path.join(recipe.work, "checkpoints", s.starts_from, "checkpoint_best.pt")
        if not recipe.dry_run and not os.path.isfile(start):
            raise RecipeError(f"{model} fine-tunes {s.starts_from}'s best checkpoint ({start}): train "
                              f"{s.starts_from} first")
        cmd += ["--finetune-from-model", start]
    if not recipe.dry_run:
        trained_on(data_bin, checkpoints)
    commands.train(recipe, data_bin, checkpoints, cmd)
