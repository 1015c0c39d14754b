"""The fairseq command lines the project's scripts run, written once: training with the plugin, translating the
test split, inducing the parse heads' trees, and fairseq-generate's output split into hypotheses and references
in sentence order (by the plugin's one reader of that output). The recipes (:mod:`.commands`) and the example scripts (examples/recipes/pipeline.py: the demo,
the fidelity runs, the UD PUD UAS run) build their commands here; each runs them its own way (a recipe step
becomes its training; the example scripts wait for theirs). Commands are looked up on ``PATH``.

Only the standard library: a script's own process stays light while its commands train.
"""
import importlib.util
import os
from typing import List, Sequence, Tuple

from fairseq_syntax.evaluation.generate_output import SENTENCE_LINE, read_generate_output
from fairseq_syntax.preparation.databin_record import language_option, target_in_pieces

#: the plugin's folder, given to every command as ``--user-dir``: the fairseq_syntax on this process's path
#: (located, not imported)
USER_DIR = importlib.util.find_spec("fairseq_syntax").submodule_search_locations[0]
#: the size of the small CPU runs (demo, fidelity, UD PUD UAS): 3+3 layers, d 128, FFN 256, 4 heads (the recipes'
#: CPU table, fairseq_syntax/settings/cpu_table.py, is 3+3, d 128, FFN 512)
SMALL_TRANSFORMER = ("--encoder-layers", "3", "--decoder-layers", "3", "--encoder-embed-dim", "128",
                     "--decoder-embed-dim", "128", "--encoder-ffn-embed-dim", "256", "--decoder-ffn-embed-dim",
                     "256", "--encoder-attention-heads", "4", "--decoder-attention-heads", "4")


def _task(options: Sequence[str]) -> List[str]:
    return [] if "--task" in options else ["--task", "syntax_translation"]


def train_command(data: str, save_dir: str, options: Sequence[str]) -> List[str]:
    """fairseq-syntax-train with the plugin, the syntax_translation task unless ``options`` name a --task."""
    return ["fairseq-syntax-train", data, "--user-dir", USER_DIR, *_task(options), "--save-dir", save_dir,
            *options]


def generate_command(data: str, checkpoint: str, options: Sequence[str]) -> List[str]:
    """fairseq-generate of the test split with the plugin, BPE removed (SentencePiece's pieces joined, where the
    data-bin's record says that SentencePiece segments the target language)."""
    return ["fairseq-generate", data, "--user-dir", USER_DIR, *_task(options), "--path", checkpoint,
            "--remove-bpe", *(["sentencepiece"] if target_in_pieces(data.split(os.pathsep)[0], language_option(
                options)) else []), *options]


def induce_command(data: str, checkpoint: str, prefix: str, options: Sequence[str]) -> List[str]:
    """fairseq-syntax-induce-parses of the test split: PREFIX.LANG.conllu and the UAS lines."""
    return ["fairseq-syntax-induce-parses", data, "--user-dir", USER_DIR, "--path", checkpoint, "--split", "test",
            "--output-prefix", prefix, *options]


def split_generate_output(out: str) -> Tuple[int, int]:
    """OUT/generate.out (fairseq-generate's output, sentences as their batches finished) -> OUT/hyp.tok and
    OUT/ref.tok in sentence order, read by the plugin's reader (:func:`fairseq_syntax.evaluation.generate_output.
    read_generate_output`: its D- lines, every sentence once, no BPE marks left, the closing line there); returns
    (hypotheses, references); a file the reader refuses raises its SyntaxDataError (one line)."""
    path = os.path.join(out, "generate.out")
    with open(path, encoding="utf-8", errors="surrogateescape") as f:
        lines = f.read().splitlines()
    ids = {int(m.group(2)) for m in map(SENTENCE_LINE.match, lines) if m and m.group(1) == "T"}
    read = read_generate_output(path, lines, len(ids), "its T- lines (the test split's references)")
    for name, text in (("hyp.tok", read.hypotheses), ("ref.tok", read.targets or [])):
        with open(os.path.join(out, name), "w", encoding="utf-8", errors="surrogateescape") as f:
            f.writelines(line + "\n" for line in text)
    return len(read.hypotheses), len(read.targets or [])
