"""The demo (``bash examples/demo/run.sh``, the README's first command): what syntax buys, in about 6 minutes on
a 2-core CPU. run.sh sets up the environment (examples/setup_env.sh) and runs this, which:

  1. generates the seeded synthetic corpus (gold trees on both sides; its word order depends on the source tree:
     a prepositional phrase moves with its attachment),
  2. prepares a data-bin with preprocess/prepare.py (BPE, fairseq-preprocess, tree alignment, syntax
     binarization),
  3. trains three models side by side (one CPU thread each) at the same number of updates and seed: fairseq's
     transformer; the same transformer with dependency relative positions from the source parse in the encoder
     (Omote et al. 2019, with Shaw et al.'s linear positions on both sides: transformer_dep_rel); and DBSA
     (Deguchi et al. 2019), whose parse heads in encoder and decoder layer 2 learn to parse,
  4. translates the test set with fairseq-generate (beam 4; the three side by side), prints sacreBLEU of each
     with the difference to the transformer, and the UAS of DBSA's parse heads on the test set
     (fairseq-syntax-induce-parses),
  5. translates a new sentence (generated like the corpus, in none of its splits) with fairseq-interactive, its
     parse given by the CoNLL-U lookup parser (--inference-parser conllu; udpipe or stanza parse real text).

Variables (defaults in brackets; relative paths are from the repository root):
  DEMO_DIR       where everything is written (emptied first)  [<repo>/work/demo]
  DEMO_UPDATES   training updates per model                   [250]
  DEMO_TRAIN     synthetic training sentence pairs            [20000]
  DEMO_SEED      corpus and training seed                     [1]
  DEMO_TEST      test sentences (and valid)                   [500]
  DEMO_RECORD    a JSON list to add this run's record to, e.g. examples/demo/records.json (docs/results.md's
                 figures are a record's there); the record is always in DEMO_DIR/demo.json (examples/demo/record.py:
                 the scores, each step's wall seconds, the CPU, the commit)

    python examples/demo/demo.py [--start SECONDS]   # --start: when run.sh started (before the environment), so
                                                     # that the record's wall time counts a first run's build
"""
import argparse
import functools
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "examples", "recipes"))
sys.path.insert(0, HERE)
import pipeline  # noqa: E402
import record  # noqa: E402

MODELS = record.MODELS  # transformer, dep_rel, dbsa
# each model's architecture options and criterion
MODEL_OPTIONS = {
    "transformer": (("--arch", "transformer", *pipeline.SMALL_TRANSFORMER), "label_smoothed_cross_entropy"),
    "dep_rel": (("--arch", "transformer_dep_rel", *pipeline.SMALL_TRANSFORMER), "label_smoothed_cross_entropy"),
    "dbsa": (("--arch", "transformer_dbsa", *pipeline.SMALL_TRANSFORMER, "--dbsa-encoder-layer", "2",
              "--dbsa-decoder-layer", "2"), "label_smoothed_cross_entropy_with_dependency"),
}
# fairseq's and the plugin's chatter that the corpus and prepare steps do not print
CHATTER = re.compile(r"tensorboardX|^INFO|^20[0-9-]* [0-9:,]* \| INFO")


def now():
    """Seconds since the epoch as ``date +%s.%N`` prints them (run.sh's --start is one)."""
    ns = time.time_ns()
    return f"{ns // 10**9}.{ns % 10**9:09d}"


def fail(message):
    raise SystemExit(message)


def side_by_side(jobs):
    """Run the callables of ``jobs`` (name -> callable) at once, each in a thread (each starts a command and
    waits for it); returns name -> what it returned (None where it raised)."""
    results = dict.fromkeys(jobs)

    def run(name):
        results[name] = jobs[name]()

    threads = [threading.Thread(target=run, args=(name,)) for name in jobs]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results


def integer(name, default):
    value = os.environ.get(name) or str(default)
    if not re.fullmatch(r"[0-9]+", value):
        fail(f"{name}={value!r} is not a whole number")
    return int(value)


class Demo:
    """One run: its settings (from the DEMO_* variables) and its folder; a method a step."""

    def __init__(self, start):
        self.dir = os.environ.get("DEMO_DIR") or os.path.join(ROOT, "work", "demo")
        self.updates, self.train = integer("DEMO_UPDATES", 250), integer("DEMO_TRAIN", 20000)
        self.seed, self.test = integer("DEMO_SEED", 1), integer("DEMO_TEST", 500)
        self.record = os.environ.get("DEMO_RECORD") or None
        if self.record:
            if not os.path.isdir(os.path.dirname(os.path.abspath(self.record))):
                fail(f"DEMO_RECORD={self.record}: its folder does not exist")
            self.record = os.path.abspath(self.record)
        shutil.rmtree(self.dir, ignore_errors=True)
        os.makedirs(self.dir)
        with open(self.path("times.tsv"), "w") as f:
            f.write(f"start {start or now()}\nenvironment {now()}\n")
        with open(self.path("settings.json"), "w") as f:
            f.write(json.dumps({"seed": self.seed, "updates": self.updates, "train": self.train, "test": self.test})
                    + "\n")

    def path(self, *parts):
        return os.path.join(self.dir, *parts)

    def mark(self, step):
        """The step just finished, with the time, in times.tsv (record.py's step seconds)."""
        with open(self.path("times.tsv"), "a") as f:
            f.write(f"{step} {now()}\n")

    def quiet(self, cmd):
        """Run ``cmd``, printing its output (both streams) but the chatter; exit on failure."""
        process = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                   errors="replace")
        for line in process.stdout:
            if not CHATTER.search(line):
                sys.stdout.write(line)
        if process.wait():
            sys.exit(1)

    def corpus(self):
        print(f"== 1/5 synthetic corpus -> {self.path('raw')}")
        # and, beside it, new sentences for step 5: the same generator run further (same vocabulary), the 60
        # test sentences after the corpus's
        sizes = ["--seed", str(self.seed), "--train", str(self.train), "--valid", str(self.test)]
        with open(self.path("new.log"), "wb") as log:
            new = subprocess.Popen(["python", "preprocess/synth.py", "-o", self.path("new"), *sizes,
                                    "--test", str(self.test + 60)], stdout=log, stderr=subprocess.STDOUT)
        try:
            self.quiet(["python", "preprocess/synth.py", "-o", self.path("raw"), *sizes, "--test", str(self.test)])
        except SystemExit:
            new.terminate()
            raise
        if new.wait():
            pipeline.tail(self.path("new.log"), 10**6)
            sys.exit(1)
        self.mark("corpus")

    def prepare(self):
        print(f"== 2/5 prepare (BPE, fairseq-preprocess, align, binarize) -> {self.path('data-bin')}")
        raw = self.path("raw")
        self.quiet(["python", "preprocess/prepare.py", "-s", "src", "-t", "tgt", "--trainpref", f"{raw}/train",
                    "--validpref", f"{raw}/valid", "--testpref", f"{raw}/test", "--destdir", self.path("data-bin"),
                    "--bpe-merges", "2000", "--no-progress"])
        if not os.path.isfile(self.path("data-bin", "train.src-tgt.src.heads.idx")):
            fail(f"{self.path('data-bin')}: prepare wrote no source heads (train.src-tgt.src.heads.idx)")
        self.mark("prepare")

    def options(self, name):
        """fairseq-train's options for one of the three models."""
        arch, criterion = MODEL_OPTIONS[name]
        return [*arch, "--share-all-embeddings", "--dropout", "0.1",
                "--optimizer", "adam", "--adam-betas", "(0.9, 0.98)", "--lr", "2e-3", "--lr-scheduler",
                "inverse_sqrt", "--warmup-updates", "100", "--criterion", criterion, "--label-smoothing", "0.1",
                "--max-tokens", "4096", "--max-update", str(self.updates), "--seed", str(self.seed), "--cpu",
                "--no-epoch-checkpoints", "--log-format", "simple", "--log-interval", "25",
                "--validate-interval-updates", "1000000", "--disable-validation"]

    def progress(self):
        """One line: each model's updates so far."""
        return "   " + "".join(f"{name:<12} {pipeline.last_update(self.path(f'train.{name}.log')):>4}/{self.updates}   "
                               for name in MODELS)

    def train_all(self):
        print(f"== 3/5 train {' '.join(MODELS)} side by side ({self.updates} updates each, seed {self.seed}, one "
              f"thread each; logs: {self.path('train.*.log')})")
        running = {name: pipeline.start_train(self.path(f"train.{name}.log"), self.path("data-bin"),
                                              self.path("checkpoints", name), self.options(name)) for name in MODELS}
        last = ""
        while any(p.poll() is None for p in running.values()):  # a line every 10 s where it changed
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline and any(p.poll() is None for p in running.values()):
                time.sleep(0.2)
            line = self.progress()
            if line != last:
                print(line)
            last = line
        for name, process in running.items():
            log = self.path(f"train.{name}.log")
            if not pipeline.finish_train(process, log) \
                    or not os.path.isfile(self.path("checkpoints", name, "checkpoint_last.pt")):
                fail(f"training {name} failed (log: {log})")
            with open(log, encoding="utf-8", errors="replace") as f:
                for line in f:
                    if "done training" in line:
                        print(re.sub(r".*\| ", f"   {name}: ", line.rstrip("\n"), count=1))
        self.mark("train")

    def generate_all(self):
        print(f"== 4/5 fairseq-generate (beam 4), {self.test} test sentences, {self.updates} updates each, "
              f"seed {self.seed}")
        data = self.path("data-bin")

        def checkpoint(name):
            return self.path("checkpoints", name, "checkpoint_last.pt")

        def induce():
            lines = pipeline.induce(self.path("induced", "test"), data, checkpoint("dbsa"), ["--cpu"])
            if lines is not None:
                with open(self.path("induce.log"), "w", encoding="utf-8") as f:
                    f.writelines(lines)
            return lines is not None

        jobs = {name: functools.partial(pipeline.generate, self.path("gen", name), data, checkpoint(name),
                                        ["--beam", "4", "--batch-size", "128", "--cpu"]) for name in MODELS}
        if not all(side_by_side({**jobs, "induce": induce}).values()):
            sys.exit(1)
        self.mark("generate")
        record.score(self.dir)  # sacreBLEU of each (13a) and the parse heads' UAS
        print("(dep_rel reads the source tree; DBSA must first learn it: its parse losses slow early training, and "
              "after\n 2000 updates it is level with the transformer. docs/benchmarks.md: every model at 2000 "
              "updates.)")

    def new_sentence(self):
        """Pick the first new sentence (8 to 14 words, after the corpus's test sentences, in none of its splits);
        write it, its parse and its reference; print it and its parse."""
        from fairseq_syntax.data.trees.conllu import read_conllu, write_conllu

        seen = set()
        for split in ("train", "valid", "test"):
            with open(self.path("raw", f"{split}.src"), encoding="utf-8") as f:
                seen.update(f.read().splitlines())
        with open(self.path("new", "test.tgt"), encoding="utf-8") as f:
            tgt = f.read().splitlines()
        for i, sent in enumerate(read_conllu(self.path("new", "test.src.conllu"))):
            line = " ".join(sent.words)
            if i >= self.test and line not in seen and 8 <= len(sent.words) <= 14:
                break
        else:
            fail(f"{self.path('new')}: no new sentence found")
        with open(self.path("new.src.conllu"), "w", encoding="utf-8") as f:
            write_conllu([sent], f)
        for name, text in (("new.src", line), ("new.ref", tgt[i])):
            with open(self.path(name), "w", encoding="utf-8") as f:
                f.write(text + "\n")
        print("source   ", line)
        print("its parse", " ".join(f"{w}<-{sent.words[h - 1] if h else 'ROOT'}"
                                    for w, h in zip(sent.words, sent.heads)))

    def interactive(self, name):
        """``name``'s translation of the new sentence into DIR/new.NAME.txt; False on failure."""
        out, log = self.path(f"interactive.{name}.out"), self.path(f"interactive.{name}.log")
        with open(self.path("new.src"), "rb") as stdin, open(out, "wb") as stdout, open(log, "wb") as stderr:
            code = subprocess.call(
                ["fairseq-interactive", self.path("data-bin"), "--user-dir", pipeline.USER_DIR, "--task",
                 "syntax_translation", "-s", "src", "-t", "tgt", "--path",
                 self.path("checkpoints", name, "checkpoint_last.pt"), "--beam", "4", "--cpu", "--bpe",
                 "subword_nmt", "--bpe-codes", self.path("data-bin", "work", "bpe.codes.joint"), "--inference-parser",
                 "conllu", "--inference-parser-model", self.path("new.src.conllu")],
                stdin=stdin, stdout=stdout, stderr=stderr)
        if code:
            pipeline.tail(log, 5)
            return False
        with open(out, encoding="utf-8") as f:
            found = [line.rstrip("\n").split("\t")[2] for line in f if line.startswith("D-")]
        if not found:
            print(f"{out}: no translation (D- line)", file=sys.stderr)
            return False
        with open(self.path(f"new.{name}.txt"), "w", encoding="utf-8") as f:
            f.writelines(text + "\n" for text in found)
        return True

    def translate_new(self):
        print("== 5/5 a new sentence through fairseq-interactive, parsed by the CoNLL-U lookup parser")
        self.new_sentence()
        names = ("transformer", "dep_rel")
        if not all(side_by_side({name: functools.partial(self.interactive, name) for name in names}).values()):
            sys.exit(1)
        for name, said in (("new.ref", "reference  "), ("new.transformer.txt", "transformer"),
                           ("new.dep_rel.txt", "dep_rel    ")):
            with open(self.path(name), encoding="utf-8") as f:
                print(said, f.read().rstrip("\n"))
        self.mark("interactive")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--start", metavar="SECONDS", help="when the demo started (date +%%s.%%N), before its "
                        "environment was set up; default: now")
    args = parser.parse_args(argv)
    sys.stdout.reconfigure(line_buffering=True)  # the lines in order with the commands' own
    os.chdir(ROOT)  # the commands' relative paths (preprocess/...) and relative DEMO_DIR are from the root
    demo = Demo(args.start)
    demo.corpus()
    demo.prepare()
    demo.train_all()
    demo.generate_all()
    demo.translate_new()
    record.main(["finish", demo.dir, *(["--append", demo.record] if demo.record else [])])


if __name__ == "__main__":
    main()
