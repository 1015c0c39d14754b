"""The README's own-corpus block runs as written: real Multi30k text, UDPipe on both sides, its three trainings,
their translations and the scoring against the baseline, at sizes of seconds.

The block is taken from the README between its markers and run by bash in a folder laid out as the block expects
(``corpus/{train,valid,test}.{en,de}``, ``models/{english,german}.udpipe``). Only sizes change, each by an exact
substitution that must find its text (so a rewritten block fails here rather than running something else): fewer
BPE merges, the ``_tiny`` preset of each architecture, 2 updates, short translations.
"""
import os
import re
import subprocess

import pytest

import forkserver
from conftest import require_shared
from helpers import ROOT, env

BEGIN, END = "<!-- own corpus (tests/test_readme_block.py runs this block) -->", "<!-- end own corpus -->"

#: the README's text -> what the test runs instead (sizes only)
SIZES = {
    "--bpe-merges 8000": "--bpe-merges 300",
    "--arch $ARCH ": "--arch ${ARCH}_tiny ",
    "--max-update 50000": "--max-update 2",
    "--lenpen 0.6": "--lenpen 0.6 --max-len-a 0 --max-len-b 12",
}


def readme_block():
    text = open(os.path.join(ROOT, "README.md"), encoding="utf-8").read()
    assert BEGIN in text and END in text, "README.md: the own-corpus block's markers are gone"
    block = text[text.index(BEGIN) + len(BEGIN):text.index(END)].strip()
    m = re.fullmatch(r"```bash\n(.*)\n```", block, re.S)
    assert m, "README.md: the own-corpus block is not one bash code block"
    return m.group(1)


def sized(block):
    for readme, test in SIZES.items():
        assert readme in block, f"README.md's own-corpus block no longer has {readme!r}: update tests/test_readme_block.py"
        block = block.replace(readme, test)
    return block


def lay_out(folder, train=300, valid=30, test=20):
    """corpus/ from the first sentences of Multi30k's task-1 files, models/ the shared UDPipe models."""
    raw = require_shared("data", "multi30k", "task1", "raw")
    english = require_shared("models", "en_ewt_udpipe_small.udpipe")
    german = require_shared("models", "de_udpipe_small.udpipe")
    pytest.importorskip("ufal.udpipe")
    os.makedirs(os.path.join(folder, "corpus"))
    os.makedirs(os.path.join(folder, "models"))
    for split, source, n in (("train", "train", train), ("valid", "val", valid), ("test", "test_2016_flickr", test)):
        for lang in ("en", "de"):
            with open(os.path.join(raw, f"{source}.{lang}"), encoding="utf-8") as f:
                lines = [next(f) for _ in range(n)]
            with open(os.path.join(folder, "corpus", f"{split}.{lang}"), "w", encoding="utf-8") as f:
                f.writelines(lines)
    os.symlink(english, os.path.join(folder, "models", "english.udpipe"))
    os.symlink(german, os.path.join(folder, "models", "german.udpipe"))


@pytest.mark.slow  # a prepare with two UDPipe models, three trainings and their translations (~20 s)
def test_the_readmes_own_corpus_block_runs(tmp_path):
    lay_out(str(tmp_path))
    script = "set -euo pipefail\n" + sized(readme_block()) + "\n"
    variables = {**env(), **forkserver.environment()}
    p = subprocess.run(["bash", "-c", script], cwd=tmp_path, env=variables, capture_output=True, text=True,
                       timeout=600)
    assert p.returncode == 0, p.stderr[-4000:]
    for arch in ("transformer", "transformer_rel", "transformer_dep_rel"):
        hyps = [line for line in open(tmp_path / f"gen.{arch}.txt", encoding="utf-8") if line.startswith("D-")]
        assert len(hyps) == 20, arch
    # the scores of the model against its baseline, with the test between them
    assert re.search(r"^BLEU \d+\.\d\d ", p.stdout, re.M) and re.search(r"^chrF \d+\.\d\d ", p.stdout, re.M), p.stdout
    assert re.search(r"^paired bootstrap bleu: system .* vs baseline .*, p = [01]\.\d{4}$", p.stdout, re.M), p.stdout
