"""The Tanaka corpus (small_parallel_enja): its files (TANAKA_DIR [SHARED/data/small_parallel_enja]), else its
GitHub repository; the Japanese without KyTea's spaces (the parser tokenises it), the English as it is
(tokenised). Its English is parsed by UDPipe 1 with the shared EWT model by default."""
import os
import shutil

from runner.common import RecipeError
from runner.sources import count_lines, fetch, shared_folder

URL = "https://raw.githubusercontent.com/odashi/small_parallel_enja/master"


def defaults(recipe) -> None:
    shared = shared_folder(recipe)
    recipe.env.setdefault("TANAKA_DIR", os.path.join(shared, "data", "small_parallel_enja"))
    if recipe.var("PARSER_ja") == "spacy":
        recipe.env["PARSER_MODEL_ja"] = recipe.var("PARSER_MODEL_ja", "ja_ginza")
    if recipe.var("PARSER_en") == "udpipe":
        recipe.env["PARSER_MODEL_en"] = recipe.var("PARSER_MODEL_en",
                                                   os.path.join(shared, "models", "en_ewt_udpipe_small.udpipe"))


def download(recipe, spec) -> None:
    folder, raw = recipe.var("TANAKA_DIR"), recipe.raw
    for name, to in (("train", "train"), ("dev", "valid"), ("test", "test")):
        for lang in ("ja", "en"):
            path, given = os.path.join(folder, f"{name}.{lang}"), os.path.join(raw, f"{to}.{lang}.given")
            if os.path.isfile(path):
                shutil.copyfile(path, given)
                continue
            recipe.log(f"no {path}: download {URL}/{name}.{lang}")
            if not fetch(f"{URL}/{name}.{lang}", given):
                raise RecipeError(f"could not download {name}.{lang} (set TANAKA_DIR or LOCAL_DATA)")
        with open(os.path.join(raw, f"{to}.ja.given"), encoding="utf-8") as f, \
                open(os.path.join(raw, f"{to}.ja"), "w", encoding="utf-8") as out:
            for line in f:
                out.write(line.replace(" ", ""))
        os.replace(os.path.join(raw, f"{to}.en.given"), os.path.join(raw, f"{to}.en"))
    recipe.log(f"train: {count_lines(os.path.join(raw, 'train.ja'))} pairs")
