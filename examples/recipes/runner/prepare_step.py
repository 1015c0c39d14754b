"""prepare.sh [MODEL...]: the raw data (:mod:`.raw_data`), WORK/text (every split of both languages tokenised, and
parsed where any variant needs its syntax, by ``prepare.py --text-only``), then the data-bin of each variant the
models train on (default: every variant).

A data-bin is finished when its ``.prepared`` marker holds its key: the SHA-256 of what it is made from (the
variant's options, the text's stamps). A killed prepare leaves no marker, and prepare.py runs again reusing its
finished chunks; a data-bin made from other text or options is made again."""
import hashlib
import os
import shlex
import shutil
import subprocess
from typing import List

from fairseq_syntax.durable_files import atomic_write
from runner import commands
from runner.raw_data import fetch, needs_syntax
from runner.recipe import ROOT, SPLITS, Recipe, RecipeError
from runner.run_locks import data_lock

TOKENIZERS = ("given", "parser", "kytea", "moses")


def parser_args(recipe: Recipe, lang: str, side: str) -> List[str]:
    backend = recipe.var(f"PARSER_{lang}") or ("spacy" if lang == "ja" else "stanza")
    model = recipe.var(f"PARSER_MODEL_{lang}") or ("ja_ginza" if backend == "spacy" else "")
    return [f"--parser-{side}", backend] + ([f"--parser-model-{side}", model] if model else [])


def tokenizer_of(recipe: Recipe, lang: str) -> str:
    if recipe.var(f"TOKENIZER_{lang}"):
        return recipe.var(f"TOKENIZER_{lang}")
    if lang != "ja":
        return "moses"
    if recipe.var("JA_TOKENIZED", "0") == "1":
        return "given"
    return "kytea" if shutil.which("kytea") else "parser"


def text_args(recipe: Recipe, lang: str, side: str) -> List[str]:
    tokenizer = tokenizer_of(recipe, lang)
    if tokenizer not in TOKENIZERS:
        raise RecipeError(f"TOKENIZER_{lang}={tokenizer}: one of given, parser, kytea, moses")
    return [f"--tokenizer-{side}", tokenizer, f"--normalize-{side}", "moses" if tokenizer == "moses" else "none",
            *parser_args(recipe, lang, side)]


def make_text(recipe: Recipe) -> None:
    """WORK/text for every variant of the dataset (whichever models are prepared first, so that every data-bin
    has the same tokens); WORK/text/text.json says how (each data-bin records it for decoding raw text)."""
    src, tgt, work, raw = recipe.src, recipe.tgt, recipe.work, recipe.raw
    sides = [s for s, lang in (("source", src), ("target", tgt)) if needs_syntax(recipe, lang)]
    syntax = ",".join(sides) or "none"
    args = text_args(recipe, src, "source") + text_args(recipe, tgt, "target")
    if recipe.var("STANZA_DIR"):
        args += ["--stanza-dir", recipe.var("STANZA_DIR")]
    recipe.log(f"tokens and parses of {src} and {tgt} (syntax: {syntax}): {work}/text")
    commands.prepare(["--text-only", "-s", src, "-t", tgt, "--trainpref", f"{raw}/train", "--validpref",
                      f"{raw}/valid", "--testpref", f"{raw}/test", "--workdir", f"{work}/text", "--syntax", syntax,
                      "--train-first", str(recipe.train_first), *args, "--no-progress"])


def variant_key(recipe: Recipe, name: str) -> str:
    """What variant ``name``'s data-bin is made from (the text's stamps, how it is prepared), hashed."""
    v, text = recipe.variants[name], os.path.join(recipe.work, "text")
    lang_filter = "" if recipe.sample else v.lang_filter
    parts = [f"prepare: {v.prepare}\nsyntax: {v.syntax}\nmultitask: {int(v.multitask)}\nlang filter: {lang_filter}\n"
             .encode("utf-8")]
    if os.path.isfile(os.path.join(text, "text.json")):
        parts.append(open(os.path.join(text, "text.json"), "rb").read())
    for split in SPLITS:
        for lang in (recipe.src, recipe.tgt):
            for f in (os.path.join(text, f"{split}.{lang}.conllu"), os.path.join(text, f"{split}.{lang}")):
                if os.path.isfile(f):
                    parts.append(f"{split}.{lang}\n".encode("utf-8"))
                    if os.path.isfile(f + ".done"):
                        parts.append(open(f + ".done", "rb").read())
                    else:
                        from fairseq_syntax.durable_files import file_sha256

                        parts.append(f"{file_sha256(f)}  -\n".encode("utf-8"))
                    break
    return hashlib.sha256(b"".join(parts)).hexdigest()


def stage_variant(recipe: Recipe, name: str) -> str:
    """WORK/VARIANT/text, the inputs of prepare.py (one per side: its parse when it has one, else its tokens), or
    of the multi-task corpus, which is then the input; the folder prepare.py reads."""
    work, folder = recipe.work, os.path.join(recipe.work, name, "text")
    shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(folder)
    for split in SPLITS:
        for lang in (recipe.src, recipe.tgt):
            parsed = os.path.join(work, "text", f"{split}.{lang}.conllu")
            target = parsed if os.path.isfile(parsed) else os.path.join(work, "text", f"{split}.{lang}")
            os.symlink(target, os.path.join(folder, os.path.basename(target)))
    if recipe.variants[name].multitask:
        out = os.path.join(work, name, "multitask")
        shutil.rmtree(out, ignore_errors=True)  # no split of an earlier run left for prepare.py if this one fails
        if subprocess.run(["fairseq-syntax-multitask", "-s", recipe.src, "-t", recipe.tgt, "--trainpref",
                           f"{folder}/train", "--validpref", f"{folder}/valid", "--testpref", f"{folder}/test",
                           "-o", out, "--no-progress"], stdout=2).returncode:
            raise RecipeError(f"variant {name}: its inputs could not be staged (fairseq-syntax-multitask failed)")
        folder = out
    return folder


def prepare(recipe: Recipe, models: List[str]) -> None:
    if recipe.data_from:  # the other direction's preparation builds the shared data-bin
        for m in models:
            recipe.model(m, "prepare.sh")
        recipe.log(f"data shared with {recipe.data_from}: {recipe.data_work}")
        env = {**os.environ, "WORK": recipe.data_work}
        os.execvpe("bash", ["bash", os.path.join(ROOT, "examples", recipe.data_from, "prepare.sh"), *models], env)
    selected = []
    for m in models:
        data = recipe.model(m, "prepare.sh").data
        if data not in selected:
            selected.append(data)
    work = recipe.work
    os.makedirs(work, exist_ok=True)
    data_lock(recipe, False, "prepare")
    fetch(recipe)
    make_text(recipe)  # before narrowing to the selected models' variants: the tokens of all of them
    for name in selected or list(recipe.variants):
        v, key = recipe.variants[name], variant_key(recipe, name)
        marker = os.path.join(work, name, "data-bin", ".prepared")
        if os.path.isfile(marker):
            if os.path.getsize(marker) == 0:  # an earlier recipe's marker: its raw data passed fetch
                atomic_write(marker, (key + "\n").encode("utf-8"))
            if open(marker, encoding="utf-8").read().strip() == key:
                recipe.log(f"variant {name}: {work}/{name}/data-bin is complete (remove it to rebuild)")
                continue
            recipe.log(f"variant {name}: {work}/{name}/data-bin was made from other text or options: made again")
            os.remove(marker)
        recipe.log(f"variant {name}: {v.prepare} (syntax: {v.syntax})")
        folder = stage_variant(recipe, name)
        args = shlex.split(v.prepare)
        if v.lang_filter:
            if recipe.sample:
                recipe.log("sample: no --lang-filter (the sample's words are synthetic)")
            else:
                args += ["--lang-filter", v.lang_filter]
        commands.prepare(["-s", recipe.src, "-t", recipe.tgt, "--trainpref", f"{folder}/train", "--validpref",
                          f"{folder}/valid", "--testpref", f"{folder}/test", "--destdir", f"{work}/{name}/data-bin",
                          "--workdir", f"{work}/{name}/work", "--syntax", "none" if v.multitask else v.syntax, *args,
                          "--text-record", f"{work}/text/text.json", "--overwrite", "--no-progress"])
        # a killed run leaves none: prepare.py runs again, reusing its finished chunks
        atomic_write(marker, (key + "\n").encode("utf-8"))
    recipe.log("data-bins: " + "".join(f"{work}/{n}/data-bin " for n in selected or recipe.variants))
