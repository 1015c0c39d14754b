"""Where a dataset's raw text comes from when neither SAMPLE=1 nor LOCAL_DATA gives it: one module per kind of
source, named by recipe.json's ``source.module``. Each has ``download(recipe, spec)``, writing
``RAW/{train,valid,test|TEST_SETS}.{SRC,TGT}`` (raw text) or stopping with what to do when the data is not
public, and may have ``defaults(recipe)``, the dataset's defaults of variables that depend on others."""
import importlib


def module(name: str):
    return importlib.import_module(f"{__name__}.{name}")


def download(recipe) -> None:
    spec = dict(recipe.source)
    module(spec.pop("module")).download(recipe, spec)


def shared_folder(recipe) -> str:
    """SHARED: the shared folder of models and data [$FAIRSEQ_SYNTAX_SHARED or ../shared]."""
    import os

    from runner.common import ROOT

    return recipe.var("SHARED", recipe.var("FAIRSEQ_SYNTAX_SHARED", os.path.join(ROOT, "..", "shared")))


def fetch(url: str, path: str) -> bool:
    """``url`` into ``path`` with wget, else curl; whether it came."""
    import subprocess

    for cmd in (["wget", "-nv", "-O", path, url], ["curl", "-fL", "-o", path, url]):
        try:
            if subprocess.run(cmd).returncode == 0:
                return True
        except FileNotFoundError:
            continue
    return False


def count_lines(path: str) -> int:
    with open(path, "rb") as f:
        return sum(1 for _ in f)
