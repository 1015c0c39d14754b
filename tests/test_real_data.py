"""Real treebanks (skipped without the shared data): UD PUD En-De gold trees end to end."""
import os
import re

import pytest
from conftest import require_shared
from helpers import generate_cmd, preprocess, run, train_cmd

from fairseq_syntax.data.trees.conllu import read_conllu, write_conllu


@pytest.mark.slow  # 6 s
def test_pud_en_de_gold_prepare_train_generate(tmp_path):
    en = require_shared("data", "UD_English-PUD", "en_pud-ud-test.conllu")
    de = require_shared("data", "UD_German-PUD", "de_pud-ud-test.conllu")
    sents = {"en": list(read_conllu(en)), "de": list(read_conllu(de))}
    assert sum(s.has_multiword_tokens() for s in sents["de"]) > 100  # zum, am, ... are in play
    raw = tmp_path / "raw"
    raw.mkdir()
    splits = {"train": slice(0, 900), "valid": slice(900, 950), "test": slice(950, 1000)}
    for split, sl in splits.items():
        for lang in ("en", "de"):
            with open(raw / f"{split}.{lang}.conllu", "w", encoding="utf-8") as f:
                write_conllu(sents[lang][sl], f)
    out = tmp_path / "bin"
    run(preprocess("prepare") + ["-s", "en", "-t", "de", "--trainpref", str(raw / "train"),
                                 "--validpref", str(raw / "valid"), "--testpref", str(raw / "test"),
                                 "--destdir", str(out), "--bpe-merges", "2000", "--no-progress"])
    # the German text is the surface text: 'zum' stays one token, carrying one tree node
    tok = open(out / "work" / "train.tok.de", encoding="utf-8").read().split()
    assert "zum" in tok or "am" in tok
    save = str(tmp_path / "ck")
    run(train_cmd(str(out), save, updates=20, extra=["--source-syntax", "parents,depths,labels",
                                                     "--target-syntax", "parents"]))
    g = run(generate_cmd(str(out), os.path.join(save, "checkpoint_last.pt"), extra=["--max-len-b", "20"]))
    assert len(re.findall(r"^H-\d+", g.stdout, flags=re.M)) == 50
