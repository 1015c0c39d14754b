"""LSTM presets end to end: fairseq-train -> fairseq-generate (beam 4) -> restore; the Fig. 4 plot command."""
import csv
import json
import os
import re
import sys

import pytest

from helpers import ROOT, generate_cmd, run, tool, train_cmd


@pytest.mark.parametrize("arch", ["lstm_luong_tiny", pytest.param("cky_lstm_tiny", marks=pytest.mark.slow)])
def test_preset_train_generate_restore(arch, data_bin, tmp_path):
    save = str(tmp_path / "ck")
    # no parse needed: fairseq's own translation task for the baseline (the syntax task for the CKY model)
    task = ["--task", "translation"] if arch == "lstm_luong_tiny" else []
    arch_args = ["--arch", arch, "--clip-norm", "3.0", *task]
    run(train_cmd(data_bin, save, updates=3, arch=arch_args))
    ck = os.path.join(save, "checkpoint_last.pt")
    # (fairseq's translation task drops the last partial batch of 5 here unless batches need no multiple of 8;
    # its own transformer does the same: not this model's doing)
    g = run(generate_cmd(data_bin, ck, extra=task + ["--required-batch-size-multiple", "1", "--print-alignment"]))
    assert len(re.findall(r"^H-\d+", g.stdout, flags=re.M)) == 21
    assert len(re.findall(r"^A-\d+\t\d+-\d+", g.stdout, flags=re.M)) == 21  # word alignments from Eq. 8's weights
    p2 = run(train_cmd(data_bin, save, updates=5, arch=arch_args, extra=["--restore-file", ck]))
    assert "num_updates=5" in (p2.stdout + p2.stderr).replace(" ", "")
    if arch != "cky_lstm_tiny":
        bad = run([tool("fairseq-syntax-cky-attention"), data_bin, "--path", ck, "-o", str(tmp_path / "x.png")],
                  check=False)
        assert bad.returncode != 0 and "not a CKY attention model" in bad.stderr
        return
    png, tsv = str(tmp_path / "fig4.png"), str(tmp_path / "fig4.tsv")
    # --max-len 8: a model of 3 updates translates to the length limit, one heatmap per target token (matplotlib
    # drew the default's 100 in about 10 s)
    p = run([tool("fairseq-syntax-cky-attention"), data_bin, "--path", ck, "--split", "test", "--index", "3",
             "--max-len", "8", "-o", png, "--tsv", tsv])
    assert "wrote" in p.stdout and os.path.getsize(png) > 1000
    with open(png, "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"
    rows = list(csv.DictReader(open(tsv, encoding="utf-8"), delimiter="\t"))
    source_len = max(int(r["level"]) for r in rows)  # the whole sentence is the top cell
    cells = source_len * (source_len + 1) // 2
    assert len(rows) % cells == 0
    # each target token's weights over states + all cells sum to one (the joint softmax, Eq. 13-14)
    for k in range(len(rows) // cells):
        assert abs(sum(float(r["weight"]) for r in rows[k * cells:(k + 1) * cells]) - 1) < 1e-4
    # forced decoding of a given pair: 3 target tokens + EOS, a 2-token source + EOS (6 cells)
    src_words = rows[0]["span"].split()[:1] + rows[1]["span"].split()[:1]
    run([tool("fairseq-syntax-cky-attention"), data_bin, "--path", ck, "--source", " ".join(src_words),
         "--target", "a b c", "-o", png, "--tsv", tsv])
    forced = list(csv.DictReader(open(tsv, encoding="utf-8"), delimiter="\t"))
    assert len(forced) == 4 * 6 and [r["target"] for r in forced[::6]][-1] == "</s>"
    # the cells' statistics (examples/recipes/cky_cells.py): recorded under the model's name, a rerun replaces it
    record = str(tmp_path / "cells.json")
    script = [sys.executable, os.path.join(ROOT, "examples", "recipes", "cky_cells.py"), data_bin, "--path", ck,
              "--sentences", "5", "--cpu", "--json", record]
    assert "--json needs --model" in run(script, check=False, process=True).stderr
    sys.path.insert(0, os.path.join(ROOT, "examples", "recipes"))
    import cky_cells  # the recording runs in this process: the model is the same, the start-up is not

    for _ in range(2):
        cky_cells.main(script[2:] + ["--model", "cky_lstm_tiny"])
    runs = json.load(open(record, encoding="utf-8"))["runs"]
    assert [r["model"] for r in runs] == ["cky_lstm_tiny"] and runs[0]["statistics"]["sentences"] == 5
    assert 0 < runs[0]["statistics"]["attention_on_upper_cells"] < runs[0]["statistics"]["attention_on_cells"] < 1
