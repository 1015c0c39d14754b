"""python -m runner DATASET prepare|train|evaluate [ARGS...]: one step of examples/DATASET's
recipe (what examples/DATASET/{prepare,train,evaluate}.sh run); ``--help`` lists the steps, the variables and
the models. A stop prints ``[DATASET] error: ...`` and exits 1."""
import os
import sys

from runner.recipe import RecipeError, load, place

STEPS = """\
  bash examples/{d}/prepare.sh [MODEL...]  fetch (or LOCAL_DATA / SAMPLE=1), tokenise, parse, BPE,
                                                 binarize: the data-bins of these models (default: all)
  bash examples/{d}/train.sh MODEL [...]   the paper's settings for MODEL (extra fairseq-train options)
  bash examples/{d}/evaluate.sh MODEL      beam search on test, sacreBLEU / chrF (+ RIBES), bootstrap
                                                 against the baseline, BLEU by source length (table + PNG)"""

VARIABLES = """\
Variables for users (defaults in brackets; nothing assumes a home folder):
  WORK          everything this dataset writes                                  [<repo>/work/NAME]
  LOCAL_DATA    a folder with {train,valid,test|TEST_SETS}.{SRC,TGT} (raw text, one sentence per line) and/or
                their CoNLL-U parses {split}.{lang}.conllu (e.g. KyTea + EDA for Japanese): used
                instead of downloading; parses given here are used as they are
  SAMPLE=1      offline run on a small synthetic sample with gold parses, in the dataset's language
                codes; models narrowed to d 32 and 2 updates on CPU (what tests/test_recipes.py runs)
  FETCH_AGAIN=1 replace WORK/raw when it holds raw data from another source (the sample, another
                LOCAL_DATA folder, the download) than this run's; without it prepare.sh stops and says so
  PARSER_<lang> / PARSER_MODEL_<lang>   parser backend for a language (stanza | spacy | udpipe) and its
                model [stanza, except ja: spacy with ja_ginza]; STANZA_DIR: stanza's model folder
  JA_TOKENIZED=1  the Japanese raw text is tokenised already (KyTea): kept, parsed --pretokenized
                (TOKENIZER_ja=given); otherwise `kytea -notags` when kytea is on PATH, else the parser's own
                tokeniser
  SIZE          cpu or base (another value stops the recipe): the size of the CPU table's models (Multi30k,
                Tanaka): cpu, 3+3 layers, d 128, for a 2-core CPU; base, Transformer base (the papers' size)
                for GPUs; the other recipes train at the paper's size either way [cpu]
  GPUS MAX_TOKENS   GPUs used and tokens per GPU batch [all visible / 1; 4096]: --update-freq makes
                the paper's batch; EXTRA_TRAIN_ARGS (e.g. --fp16) and extra train.sh arguments pass on"""


def help_text(recipe, dataset: str) -> str:
    return "\n".join([*recipe.about, "", STEPS.format(d=dataset), "", VARIABLES, "",
                      f"Models: {' '.join(recipe.model_list())}"])


def run_step(dataset: str, step: str, args) -> None:
    recipe = load(dataset, os.environ)
    recipe.step = step
    if args[:1] in (["-h"], ["--help"]):
        print(help_text(recipe, dataset))
        return
    place(recipe)
    os.environ.setdefault("PYTHONWARNINGS", "ignore")
    if step == "prepare":
        from runner.prepare_step import prepare

        prepare(recipe, list(args))
    elif step == "train":
        from runner.train_step import train

        train(recipe, args[0] if args else "", list(args[1:]))
    elif step == "evaluate":
        from runner.evaluate_step import evaluate

        evaluate(recipe, args[0] if args else "", list(args[1:]))
    else:
        raise RecipeError(f"unknown step {step}")


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) < 2:
        print("usage: python -m runner DATASET prepare|train|evaluate [ARGS...]", file=sys.stderr)
        return 2
    try:
        run_step(argv[0], argv[1], argv[2:])
    except RecipeError as e:
        print(f"[{argv[0]}] error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
