"""Encoder parse-head UAS of DBSA on UD PUD English-German (gold trees on both sides) after a short CPU run:
900 training pairs, 50 valid, 50 test (docs/benchmarks.md). ``bash examples/ud_pud/dbsa_uas.sh`` runs it in the
project's environment.

Variables: PUD_DIR [work/ud_pud], SHARED (the folder holding data/UD_*-PUD) [$FAIRSEQ_SYNTAX_SHARED or ../shared],
UPDATES [500].
"""
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "examples", "recipes"))
import pipeline  # noqa: E402

from fairseq_syntax.data.trees.conllu import read_conllu, write_conllu  # noqa: E402

SPLITS = (("train", slice(0, 900)), ("valid", slice(900, 950)), ("test", slice(950, 1000)))


def main() -> int:
    work = os.environ.get("PUD_DIR") or os.path.join(ROOT, "work", "ud_pud")
    shared = (os.environ.get("SHARED") or os.environ.get("FAIRSEQ_SYNTAX_SHARED")
              or os.path.join(ROOT, "..", "shared"))
    updates = os.environ.get("UPDATES") or "500"
    raw = os.path.join(work, "raw")
    os.makedirs(raw, exist_ok=True)
    sents = {"en": list(read_conllu(f"{shared}/data/UD_English-PUD/en_pud-ud-test.conllu")),
             "de": list(read_conllu(f"{shared}/data/UD_German-PUD/de_pud-ud-test.conllu"))}
    for split, part in SPLITS:
        for lang, sentences in sents.items():
            with open(f"{raw}/{split}.{lang}.conllu", "w", encoding="utf-8") as f:
                write_conllu(sentences[part], f)
    data = os.path.join(work, "data-bin")
    shutil.rmtree(data, ignore_errors=True)
    with open(os.path.join(work, "prepare.log"), "wb") as log:
        if subprocess.call([sys.executable, os.path.join(ROOT, "preprocess", "prepare.py"), "-s", "en", "-t", "de",
                            "--trainpref", f"{raw}/train", "--validpref", f"{raw}/valid", "--testpref",
                            f"{raw}/test", "--destdir", data, "--bpe-merges", "4000", "--no-progress"],
                           stdout=log, stderr=subprocess.STDOUT):
            pipeline.tail(log.name, 20)
            return 1
    save = os.path.join(work, "checkpoints", "dbsa")
    options = ["--arch", "transformer_dbsa", *pipeline.SMALL_TRANSFORMER, "--dbsa-encoder-layer", "2",
               "--dbsa-decoder-layer", "2", "--share-all-embeddings", "--dropout", "0.1", "--criterion",
               "label_smoothed_cross_entropy_with_dependency", "--label-smoothing", "0.1", "--optimizer", "adam",
               "--adam-betas", "(0.9, 0.98)", "--lr", "2e-3", "--lr-scheduler", "inverse_sqrt", "--warmup-updates",
               "100", "--max-tokens", "2048", "--max-update", updates, "--seed", "1", "--cpu", "--num-workers", "0",
               "--disable-validation", "--no-epoch-checkpoints", "--log-format", "simple", "--log-interval", "100"]
    if not pipeline.train(os.path.join(work, "train.log"), data, save, options):
        return 1
    uas = pipeline.induce(os.path.join(work, "induced", "test"), data, os.path.join(save, "checkpoint_last.pt"),
                          ["--cpu"])
    if uas is None:
        return 1
    sys.stdout.writelines(uas)
    return 0


if __name__ == "__main__":
    sys.exit(main())
