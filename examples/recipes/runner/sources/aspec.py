"""ASPEC-JE (not public: apply at the WAT / ASPEC site, then ASPEC_DIR names your ASPEC-JE folder): WAT's field
layout to RAW/{train,valid,test}.{ja,en}. recipe.json: ``{"module": "aspec", "train": [TRAINING FILES]}``."""
import os

from runner.common import RecipeError


def _fields(path: str, ja: int, en: int, outs, mode: str) -> None:
    """Training lines: score ||| id ||| sentence id ||| ja ||| en; dev / test: id ||| sentence id ||| ja ||| en."""
    with open(path, encoding="utf-8") as f, open(outs[0], mode, encoding="utf-8") as j, \
            open(outs[1], mode, encoding="utf-8") as e:
        for line in f:
            parts = line.rstrip("\n").split(" ||| ")
            j.write((parts[ja] if len(parts) > ja else "") + "\n")
            e.write((parts[en] if len(parts) > en else "") + "\n")


def download(recipe, spec) -> None:
    folder = recipe.var("ASPEC_DIR")
    if not folder:
        raise RecipeError("ASPEC is not public: set ASPEC_DIR to your ASPEC-JE folder (train/ dev/ test/), or\n"
                          "  LOCAL_DATA to a folder with {train,valid,test}.{ja,en} (+ .conllu parses, e.g. KyTea + "
                          "EDA)")
    raw = recipe.raw
    outs = (os.path.join(raw, "train.ja"), os.path.join(raw, "train.en"))
    for o in outs:
        open(o, "w").close()
    for name in spec["train"]:
        path = os.path.join(folder, "train", name)
        if not os.path.isfile(path):
            raise RecipeError(f"{path} does not exist")
        _fields(path, 3, 4, outs, "a")
    for split, to in (("dev", "valid"), ("test", "test")):
        path = os.path.join(folder, split, f"{split}.txt")
        if not os.path.isfile(path):
            raise RecipeError(f"{path} does not exist")
        _fields(path, 2, 3, (os.path.join(raw, f"{to}.ja"), os.path.join(raw, f"{to}.en")), "w")
