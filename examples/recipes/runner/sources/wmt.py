"""The public WMT corpora: training corpora from the WMT sites as tarballs (or OPUS zips), concatenated into
RAW/train; test sets through sacreBLEU (``sacrebleu -t SET --echo``). The archives land in WORK/download (kept:
delete it to fetch again). recipe.json: ``{"module": "wmt", "train": [[CORPUS, FILE_PREFIX], ...], "valid":
SET, "test": SET}``, CORPUS a name of :data:`CORPORA` or a URL."""
import os
import shutil
import subprocess
import tarfile
import zipfile

from runner.common import RecipeError
from runner.sources import count_lines, fetch

CORPORA = {
    "EUROPARL7": "http://statmt.org/wmt13/training-parallel-europarl-v7.tgz",
    "COMMONCRAWL": "http://statmt.org/wmt13/training-parallel-commoncrawl.tgz",
    "NC9": "http://statmt.org/wmt14/training-parallel-nc-v9.tgz",
    "NC11": "http://data.statmt.org/wmt16/translation-task/training-parallel-nc-v11.tgz",
    "NC12": "http://data.statmt.org/wmt17/translation-task/training-parallel-nc-v12.tgz",
    "RAPID2016": "http://data.statmt.org/wmt17/translation-task/rapid2016.tgz",
    "EUROPARL8": "http://data.statmt.org/wmt16/translation-task/training-parallel-ep-v8.tgz",
    "SETIMES2_EN_RO": "http://opus.nlpl.eu/download.php?f=SETIMES/v2/moses/en-ro.txt.zip",
    "SETIMES2_EN_TR": "http://opus.nlpl.eu/download.php?f=SETIMES/v2/moses/en-tr.txt.zip",
}


def fetch_url(recipe, url: str) -> None:
    """The archive at ``url`` in WORK/download (downloaded once), extracted next to it."""
    dl = os.path.join(recipe.work, "download")
    name = os.path.basename(url.split("?")[0])
    if "download.php?f=" in url:
        name = os.path.basename(url.split("f=")[-1])
    os.makedirs(dl, exist_ok=True)
    path = os.path.join(dl, name)
    if not os.path.exists(path):
        recipe.log(f"download {url}")
        if not fetch(url, path + ".part"):
            raise RecipeError(f"could not download {url} (no network? put the corpus in LOCAL_DATA instead)")
        os.replace(path + ".part", path)
    if not os.path.exists(path + ".extracted"):
        if name.endswith((".tgz", ".tar.gz")):
            with tarfile.open(path) as t:
                t.extractall(dl)
        elif name.endswith(".zip"):
            with zipfile.ZipFile(path) as z:
                z.extractall(os.path.join(dl, name[:-4]))
        elif name.endswith(".gz"):
            import gzip

            with gzip.open(path, "rb") as src, open(path[:-3], "wb") as out:
                shutil.copyfileobj(src, out)
        open(path + ".extracted", "w").close()


def corpus_file(recipe, name: str) -> str:
    """The one file called ``name`` under WORK/download."""
    hits = [os.path.join(d, name) for d, _, files in os.walk(os.path.join(recipe.work, "download")) if name in files]
    if len(hits) != 1:
        raise RecipeError(f"expected one {name} under {recipe.work}/download, found {len(hits)}")
    return hits[0]


def train(recipe, corpora) -> None:
    """PREFIX.SRC / PREFIX.TGT of every (corpus, prefix) concatenated into RAW/train."""
    outs = {lang: open(os.path.join(recipe.raw, f"train.{lang}"), "wb") for lang in (recipe.src, recipe.tgt)}
    with outs[recipe.src], outs[recipe.tgt]:
        for corpus, prefix in corpora:
            fetch_url(recipe, CORPORA.get(corpus, corpus))
            s, t = (corpus_file(recipe, f"{prefix}.{lang}") for lang in (recipe.src, recipe.tgt))
            if count_lines(s) != count_lines(t):
                raise RecipeError(f"{s} and {t} differ in length")
            for path, lang in ((s, recipe.src), (t, recipe.tgt)):
                with open(path, "rb") as f:
                    shutil.copyfileobj(f, outs[lang])
    recipe.log(f"train: {count_lines(os.path.join(recipe.raw, f'train.{recipe.src}'))} pairs")


def test_set(recipe, split: str, name: str) -> None:
    """RAW/SPLIT.{SRC,TGT}: sacreBLEU's test set ``name`` (e.g. wmt16, wmt14/full, wmt16/dev)."""
    for side, lang in (("src", recipe.src), ("ref", recipe.tgt)):
        with open(os.path.join(recipe.raw, f"{split}.{lang}"), "wb") as out:
            if subprocess.run(["sacrebleu", "-t", name, "-l", f"{recipe.src}-{recipe.tgt}", "--echo", side],
                              stdout=out).returncode:
                raise RecipeError(f"sacrebleu -t {name} --echo {side} failed")


def download(recipe, spec) -> None:
    train(recipe, spec["train"])
    test_set(recipe, "valid", spec["valid"])
    test_set(recipe, "test", spec["test"])
