"""RAW (DATA_WORK/raw): the dataset's raw text, from the synthetic sample (SAMPLE=1), a LOCAL_DATA folder or the
dataset's source (:mod:`.sources`), and the record of where it came from (RAW/.complete, written last).

A run asking for raw data from another source than RAW holds (or a LOCAL_DATA folder whose files changed since
they were copied) stops and says so: FETCH_AGAIN=1 replaces RAW (the text and data-bins are then made again,
their keys being made from it)."""
import filecmp
import os
import shutil
import subprocess
import sys

from fairseq_syntax.durable_files import atomic_write
from runner.recipe import ROOT, SPLITS, Recipe, RecipeError
from runner.sources import count_lines, download


def needs_syntax(recipe: Recipe, lang: str) -> bool:
    """Does any variant need the parses of ``lang``?"""
    side = "source" if lang == recipe.src else "target"
    return any(side in v.syntax.split(",") for v in recipe.variants.values())


def raw_source(recipe: Recipe) -> str:
    """Where this run takes its raw data from (RAW/.complete records it)."""
    if recipe.sample:
        where = "sample"
    elif recipe.var("LOCAL_DATA"):
        folder = recipe.var("LOCAL_DATA")
        if not os.path.isdir(folder):
            raise RecipeError(f"LOCAL_DATA={folder}: no such folder")
        where = f"local data {os.path.realpath(folder)}"
    else:
        where = "download"
    return f"{where}\ntest sets: {' '.join(recipe.test_sets) or 'test'}"


def local_files(recipe: Recipe):
    """The names of the files fetch_local copies from LOCAL_DATA."""
    folder = recipe.var("LOCAL_DATA")
    names = (f"{s}.{lang}{ext}" for s in (*SPLITS, *recipe.test_sets) for lang in (recipe.src, recipe.tgt)
             for ext in ("", ".conllu"))
    return sorted({n for n in names if os.path.isfile(os.path.join(folder, n))})


def local_changes(recipe: Recipe):
    """The LOCAL_DATA files that are not as RAW's copies of them (changed, added or removed)."""
    folder, raw = recipe.var("LOCAL_DATA"), recipe.raw
    listed = local_files(recipe)
    changed = [n for n in listed if not (os.path.isfile(os.path.join(raw, n)) and
                                         filecmp.cmp(os.path.join(folder, n), os.path.join(raw, n), shallow=False))]
    for name in sorted(os.listdir(raw)):  # copied before and gone from LOCAL_DATA since
        if not name.endswith((".conllu", f".{recipe.src}", f".{recipe.tgt}")):
            continue
        if name not in listed and not (name.startswith("test.") and recipe.test_sets):
            changed.append(name)
    return sorted(set(changed))


def fetch_sample(recipe: Recipe) -> None:
    """Synthetic pairs with gold parses, under the dataset's language codes: gold parses where a model needs
    them, and for Japanese (its tokenisation); the other sides go through the Moses tokeniser like real data."""
    tmp = os.path.join(recipe.work, "sample")
    subprocess.run([sys.executable, os.path.join(ROOT, "preprocess", "synth.py"), "-o", tmp, "--train", "300",
                    "--valid", "20", "--test", "20", "--seed", "1"], stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, check=True)
    for split in SPLITS:
        for side, lang in (("src", recipe.src), ("tgt", recipe.tgt)):
            shutil.copyfile(os.path.join(tmp, f"{split}.{side}"), os.path.join(recipe.raw, f"{split}.{lang}"))
            if lang == "ja" or needs_syntax(recipe, lang):
                shutil.copyfile(os.path.join(tmp, f"{split}.{side}.conllu"),
                                os.path.join(recipe.raw, f"{split}.{lang}.conllu"))


def fetch_local(recipe: Recipe) -> None:
    folder = recipe.var("LOCAL_DATA")
    names = local_files(recipe)
    if not names:
        raise RecipeError(f"LOCAL_DATA={folder} has none of {{train,valid,test}}.{{{recipe.src},{recipe.tgt}}}"
                          "[.conllu]")
    for name in names:
        shutil.copyfile(os.path.join(folder, name), os.path.join(recipe.raw, name))


def join_test_sets(recipe: Recipe) -> None:
    """TEST_SETS: RAW/test.* are the sets' files one after the other; RAW/test.sets holds "NAME LINES" a set."""
    raw, src, tgt = recipe.raw, recipe.src, recipe.tgt
    if not recipe.test_sets:
        return
    have = lambda name: os.path.isfile(os.path.join(raw, name))  # noqa: E731
    for s in recipe.test_sets:
        if not have(f"{s}.{src}") and not have(f"{s}.{src}.conllu"):  # e.g. SAMPLE=1: one test split
            recipe.log(f"no {raw}/{s}.{src}: one test set (test)")
            return
    if have(f"test.{src}") or have(f"test.{src}.conllu"):
        raise RecipeError(f'TEST_SETS="{" ".join(recipe.test_sets)}" and a test.{src} in {raw}')
    for lang in (src, tgt):
        for ext in ("", ".conllu"):  # each kind of file when every set has it
            if all(have(f"{s}.{lang}{ext}") for s in recipe.test_sets):
                with open(os.path.join(raw, f"test.{lang}{ext}"), "wb") as out:
                    for s in recipe.test_sets:
                        with open(os.path.join(raw, f"{s}.{lang}{ext}"), "rb") as f:
                            shutil.copyfileobj(f, out)
    if not have(f"test.{tgt}"):
        raise RecipeError(f"TEST_SETS: the raw references {raw}/{{{','.join(recipe.test_sets)}}}.{tgt} are needed")
    lines = "".join(f"{s} {count_lines(os.path.join(raw, f'{s}.{tgt}'))}\n" for s in recipe.test_sets)
    atomic_write(os.path.join(raw, "test.sets"), lines.encode("utf-8"))


def fetch(recipe: Recipe) -> None:
    """RAW as this run asks for it: kept when it holds that already, else made (FETCH_AGAIN=1 to replace raw
    data from another source)."""
    raw, want = recipe.raw, raw_source(recipe)
    record = os.path.join(raw, ".complete")
    again = recipe.var("FETCH_AGAIN", "0") == "1"
    if os.path.isfile(record):
        with open(record, encoding="utf-8") as f:
            had = f.read().rstrip("\n")
        if not had and (recipe.sample or not os.path.isdir(os.path.join(recipe.work, "sample"))):
            # an earlier recipe's record (it wrote none): not the sample, as this run asks
            atomic_write(record, (want + "\n").encode("utf-8"))
            had = want
        if had == want and not recipe.sample and recipe.var("LOCAL_DATA"):  # the same folder: its files?
            changed = local_changes(recipe)
            if changed and not again:
                raise RecipeError(
                    f"LOCAL_DATA={recipe.var('LOCAL_DATA')}: {' '.join(changed)} changed since {raw} was copied from "
                    "it: FETCH_AGAIN=1 to copy it again (the text and data-bins are then made again), or put the old "
                    "files back")
            if changed:
                had += " (other files)"
        if had == want:
            recipe.log(f"raw data: {raw} (delete it to fetch again)")
            return
        if not again:
            had = had.replace("\n", ", ") or "the sample (SAMPLE=1)"
            raise RecipeError(f"{raw} holds raw data from {had}, and this run asks for {want.replace(chr(10), ', ')}: "
                              "give the same settings again, another WORK, or FETCH_AGAIN=1 to replace it (the text "
                              "and data-bins are then made again)")
        recipe.log(f"raw data: {raw} is replaced (FETCH_AGAIN=1)")
    shutil.rmtree(raw, ignore_errors=True)
    os.makedirs(raw)
    if recipe.sample:
        fetch_sample(recipe)
    elif recipe.var("LOCAL_DATA"):
        fetch_local(recipe)
    else:
        download(recipe)
    join_test_sets(recipe)
    atomic_write(record, (want + "\n").encode("utf-8"))

