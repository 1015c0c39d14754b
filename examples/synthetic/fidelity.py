"""Fidelity report on the synthetic corpus (``bash examples/synthetic/fidelity.sh [MODEL ...]``, docs/benchmarks.md
"Fidelity"): BLEU of each model at equal updates, and the UAS of the parse heads of the models that have them.

MODEL (default: transformer dbsa) is one of: transformer, dbsa, dbsa_enc, dbsa_dec, sisa (parse heads); rel, dep,
dep_rel (relative positions, k = l = 2); noabs, dep_noabs (no absolute encoder positions: the setting of Omote et
al.'s Table 3 ablation); pascal (2 of 4 heads in layer 1), sh (10-dim label embeddings), ch (a plain transformer on
the C&H translate + parse corpus, built by preprocess/multitask.py); syncattn (parse heads in layer 1, C from
decoder layer 3, lambda_dep 0.5, lambda_sync 0.5) and dbsa_l1 (its DBSA baseline: the same heads and lambda_dep);
lstm_luong and cky_lstm (LSTM ANMT with dot / CKY-based attention, d 128, gradient clipping 3.0 as in Watanabe et
al. 2017; no parse); cky_lstm_du (cky_lstm with the paper's Deduction Unit literally: no normalisation of its
output, --cky-norm none).

Models train one after another (PARALLEL=1: all at once, one core each). Variables: FIDELITY_DIR [work/fidelity],
UPDATES [2000], TRAIN [20000], SEED [1]. A run again in the same FIDELITY_DIR reuses its data-bins and resumes
each training from its last checkpoint (fairseq's --restore-file default).
"""
import argparse
import os
import re
import subprocess
import sys
import threading

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "examples", "recipes"))
import pipeline  # noqa: E402

LABEL_SMOOTHED = ("--criterion", "label_smoothed_cross_entropy")
DEP = ("--criterion", "label_smoothed_cross_entropy_with_dependency")
LSTM = ("--embed-dim", "128", "--clip-norm", "3.0")
# each model's architecture and criterion options (the transformers also get pipeline.SMALL_TRANSFORMER)
MODELS = {
    "transformer": ("--arch", "transformer", *LABEL_SMOOTHED),
    "dbsa": ("--arch", "transformer_dbsa", "--dbsa-encoder-layer", "2", "--dbsa-decoder-layer", "2", *DEP),
    "dbsa_enc": ("--arch", "transformer_dbsa_enc", "--dbsa-encoder-layer", "2", *DEP),
    "dbsa_dec": ("--arch", "transformer_dbsa_dec", "--dbsa-decoder-layer", "2", *DEP),
    "sisa": ("--arch", "transformer_sisa", "--dbsa-encoder-layer", "2", *DEP),
    "rel": ("--arch", "transformer_rel", *LABEL_SMOOTHED),
    "dep": ("--arch", "transformer_dep", *LABEL_SMOOTHED),
    "dep_rel": ("--arch", "transformer_dep_rel", *LABEL_SMOOTHED),
    "noabs": ("--arch", "syntax_transformer", "--rel-no-absolute-positions", *LABEL_SMOOTHED),
    "pascal": ("--arch", "transformer_pascal", "--pascal-heads", "2", *LABEL_SMOOTHED),
    "sh": ("--arch", "transformer_sh", *LABEL_SMOOTHED),
    "ch": ("--arch", "transformer", *LABEL_SMOOTHED),
    "syncattn": ("--arch", "transformer_syncattn", "--sync-layer", "3", "--criterion",
                 "label_smoothed_cross_entropy_with_sync"),
    "dbsa_l1": ("--arch", "transformer_dbsa", "--dbsa-encoder-layer", "1", "--dbsa-decoder-layer", "1", *DEP,
                "--dependency-lambda-enc", "0.5", "--dependency-lambda-dec", "0.5"),
    "lstm_luong": ("--arch", "lstm_luong", *LSTM, *LABEL_SMOOTHED),
    "cky_lstm": ("--arch", "cky_lstm", *LSTM, *LABEL_SMOOTHED),
    "cky_lstm_du": ("--arch", "cky_lstm", "--cky-norm", "none", *LSTM, *LABEL_SMOOTHED),
    "dep_noabs": ("--arch", "transformer_dep", "--rel-no-absolute-positions", *LABEL_SMOOTHED),
}
DEFAULT_MODELS = ("transformer", "dbsa")


def has_parse_heads(model):
    return model.startswith("dbsa") or model in ("sisa", "syncattn")


def integer(name, default):
    value = os.environ.get(name) or str(default)
    if not re.fullmatch(r"[0-9]+", value):
        raise SystemExit(f"{name}={value!r} is not a whole number")
    return value


def run(cmd, log, append=False):
    """Run a data step, its output to ``log``; False (with the log's end and one line) on failure."""
    with open(log, "ab" if append else "wb") as out:
        if subprocess.call(cmd, stdout=out, stderr=subprocess.STDOUT):
            pipeline.tail(log, 5)
            print(f"{cmd[1]} failed (log: {log})", file=sys.stderr)
            return False
    return True


class Fidelity:
    """One report: its settings (from the variables) and its folder; the data-bins made once."""

    def __init__(self):
        self.dir = os.environ.get("FIDELITY_DIR") or os.path.join(ROOT, "work", "fidelity")
        self.updates, self.train = integer("UPDATES", 2000), integer("TRAIN", 20000)
        self.seed = integer("SEED", 1)

    def path(self, *parts):
        return os.path.join(self.dir, *parts)

    def splits(self, folder):
        return ["--trainpref", self.path(folder, "train"), "--validpref", self.path(folder, "valid"),
                "--testpref", self.path(folder, "test")]

    def data_bin(self):
        """The synthetic corpus and its data-bin, unless a finished one is there."""
        os.makedirs(self.dir, exist_ok=True)
        if os.path.isfile(self.path("data-bin", "train.src-tgt.tgt.heads.idx")):
            return
        if subprocess.call(["python", "preprocess/synth.py", "-o", self.path("raw"), "--seed", self.seed, "--train",
                            self.train, "--valid", "500", "--test", "500"]) \
                or not run(["python", "preprocess/prepare.py", "-s", "src", "-t", "tgt", *self.splits("raw"),
                            "--destdir", self.path("data-bin"), "--bpe-merges", "2000", "--no-progress"],
                           self.path("prepare.log")):
            sys.exit(1)

    def ch_bin(self):
        """C&H's data-bin: its own corpus (translate + parse), the same BPE settings; unless one is there. None
        on failure."""
        data = self.path("ch-bin")
        if not os.path.isfile(os.path.join(data, "dict.tgt.txt")):
            log = self.path("multitask.log")
            with open(log, "wb") as out:  # its errors to the terminal
                code = subprocess.call(["python", "preprocess/multitask.py", "-s", "src", "-t", "tgt",
                                        *self.splits("raw"), "-o", self.path("ch-raw")], stdout=out)
            if code:
                print(f"preprocess/multitask.py failed (log: {log})", file=sys.stderr)
                return None
            if not run(["python", "preprocess/prepare.py", "-s", "src", "-t", "tgt", *self.splits("ch-raw"),
                        "--destdir", data, "--syntax", "none", "--bpe-merges", "2000", "--no-progress"], log,
                       append=True):
                return None
        return data

    def options(self, model):
        """fairseq-train's options for ``model``."""
        size = () if "lstm" in model else (*pipeline.SMALL_TRANSFORMER, "--share-all-embeddings")
        return [*MODELS[model], *size, "--dropout", "0.1", "--label-smoothing", "0.1",
                "--optimizer", "adam", "--adam-betas", "(0.9, 0.98)", "--lr", "2e-3", "--lr-scheduler", "inverse_sqrt",
                "--warmup-updates", "200", "--max-tokens", "4096", "--max-update", self.updates, "--seed", self.seed,
                "--cpu", "--num-workers", "0", "--no-epoch-checkpoints", "--disable-validation",
                "--log-format", "simple", "--log-interval", "100"]

    def run_model(self, model):
        """Train, translate and score ``model``: DIR/bleu.MODEL, and DIR/uas.MODEL for the parse heads' models.
        Returns whether it got its BLEU."""
        data = self.ch_bin() if model == "ch" else self.path("data-bin")
        checkpoint = self.path("checkpoints", model, "checkpoint_last.pt")
        if data is None or not pipeline.train(self.path(f"train.{model}.log"), data, self.path("checkpoints", model),
                              self.options(model)) \
                or not pipeline.generate(self.path("gen", model), data, checkpoint,
                                         ["--beam", "4", "--batch-size", "128", "--cpu"]):
            return False
        score = pipeline.bleu(self.path("gen", model, "ref.tok"), self.path("gen", model, "hyp.tok"))
        if score is None:
            return False
        with open(self.path(f"bleu.{model}"), "w", encoding="utf-8") as f:
            f.write(score + "\n")
        if has_parse_heads(model):  # their UAS; a failure leaves the file empty and the BLEU standing
            lines = pipeline.induce(self.path("induced", model), self.path("data-bin"), checkpoint, ["--cpu"])
            with open(self.path(f"uas.{model}"), "w", encoding="utf-8") as f:
                f.writelines(lines or [])
        return True

    def report(self, models):
        print(f"== synthetic corpus, {self.updates} updates, test set (500 sentences, beam 4)")
        for model in models:
            if not os.path.isfile(self.path(f"bleu.{model}")):
                continue
            with open(self.path(f"bleu.{model}"), encoding="utf-8") as f:
                print(f"{model:<12} sacreBLEU {f.read().strip()}")
            if os.path.isfile(self.path(f"uas.{model}")):
                with open(self.path(f"uas.{model}"), encoding="utf-8") as f:
                    sys.stdout.writelines(" " * 13 + line for line in f)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    parser.add_argument("models", nargs="*", metavar="MODEL", default=list(DEFAULT_MODELS),
                        help=f"default: {' '.join(DEFAULT_MODELS)}")
    args = parser.parse_args(argv)
    unknown = [m for m in args.models if m not in MODELS]
    if unknown:
        parser.error(f"unknown model {unknown[0]} (one of: {', '.join(MODELS)})")
    sys.stdout.reconfigure(line_buffering=True)
    os.chdir(ROOT)  # the commands' relative paths (preprocess/...) and a relative FIDELITY_DIR are from the root
    fidelity = Fidelity()
    fidelity.data_bin()
    for stale in args.models:  # a figure is this run's
        for name in (f"bleu.{stale}", f"uas.{stale}"):
            if os.path.exists(fidelity.path(name)):
                os.remove(fidelity.path(name))
    if os.environ.get("PARALLEL", "0") == "1":
        done = dict.fromkeys(args.models, False)

        def run_one(model):
            done[model] = fidelity.run_model(model)

        threads = [threading.Thread(target=run_one, args=(m,)) for m in args.models]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        failed = [m for m, ok in done.items() if not ok]
    else:
        failed = []
        for model in args.models:
            if not fidelity.run_model(model):
                sys.exit(1)
    fidelity.report(args.models)
    if failed:
        raise SystemExit(f"failed: {' '.join(failed)} (logs: {fidelity.path('train.MODEL.log')}, "
                         f"{fidelity.path('gen', 'MODEL', 'generate.log')})")


if __name__ == "__main__":
    main()
