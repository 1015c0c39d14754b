"""Multi30k task 1: the shared copy of the raw files (MULTI30K_DIR [SHARED/data/multi30k/task1/raw]), else the
dataset's GitHub repository; its parsers default to UDPipe 1 with the shared models."""
import gzip
import os
import shutil
import tempfile

from runner.common import RecipeError
from runner.sources import count_lines, fetch, shared_folder

URL = "https://github.com/multi30k/dataset/raw/master/data/task1/raw"
FILES = (("train", "train"), ("val", "valid"), ("test_2016_flickr", "test2016"), ("test_2017_flickr", "test2017"))
UDPIPE = {"en": "en_ewt_udpipe_small.udpipe", "de": "de_udpipe_small.udpipe"}


def defaults(recipe) -> None:
    shared = shared_folder(recipe)
    recipe.env.setdefault("MULTI30K_DIR", os.path.join(shared, "data", "multi30k", "task1", "raw"))
    for lang, model in UDPIPE.items():
        recipe.env[f"PARSER_{lang}"] = recipe.var(f"PARSER_{lang}", "udpipe")
        if recipe.env[f"PARSER_{lang}"] == "udpipe":
            recipe.env[f"PARSER_MODEL_{lang}"] = recipe.var(f"PARSER_MODEL_{lang}",
                                                            os.path.join(shared, "models", model))


def download(recipe, spec) -> None:
    folder = recipe.var("MULTI30K_DIR")
    for name, to in FILES:
        for lang in (recipe.src, recipe.tgt):
            path, out = os.path.join(folder, f"{name}.{lang}"), os.path.join(recipe.raw, f"{to}.{lang}")
            if os.path.isfile(path):
                shutil.copyfile(path, out)
                continue
            recipe.log(f"no {path}: download {URL}/{name}.{lang}.gz")
            with tempfile.TemporaryDirectory() as tmp:
                gz = os.path.join(tmp, "file.gz")
                if not fetch(f"{URL}/{name}.{lang}.gz", gz):
                    raise RecipeError(f"could not download {name}.{lang} (set MULTI30K_DIR or LOCAL_DATA)")
                with gzip.open(gz, "rb") as src, open(out, "wb") as dst:
                    shutil.copyfileobj(src, dst)
    recipe.log(f"train: {count_lines(os.path.join(recipe.raw, f'train.{recipe.src}'))} pairs")
