"""Relative-position presets end to end: fairseq-train -> fairseq-generate (beam 4) -> restore."""
import os
import re

import pytest

from helpers import generate_cmd, quick_subset, run, train_cmd
from test_dbsa_e2e import SMALL, _without_test_syntax


@pytest.mark.parametrize("arch,small", quick_subset([
    ("transformer_rel", True), ("transformer_dep", True), ("transformer_dep_rel", True),
    ("transformer_rel_tiny", False), ("transformer_dep_tiny", False), ("transformer_dep_rel_tiny", False),
    ("transformer_dep_rel_tiny+dbsa", False),
], quick=[("transformer_dep_rel_tiny+dbsa", False)]))
def test_preset_train_generate_restore(arch, small, data_bin, tmp_path):
    save = str(tmp_path / "ck")
    arch, _, composed = arch.partition("+")
    arch_args = ["--arch", arch] + (["--encoder-layers", "2", "--decoder-layers", "2"] + SMALL if small else [])
    extra = []
    if composed:  # mechanisms compose: DBSA parse heads (encoder layer 2 also has relative positions)
        arch_args += ["--dbsa-encoder-layer", "2", "--dbsa-decoder-layer", "1"]
        extra = ["--criterion", "label_smoothed_cross_entropy_with_dependency"]
    p = run(train_cmd(data_bin, save, updates=3, arch=arch_args, extra=extra))
    if composed:
        assert "dep_enc_loss=" in p.stdout + p.stderr and "dep_dec_loss=" in p.stdout + p.stderr
    ck = os.path.join(save, "checkpoint_last.pt")
    # the source depths of the test split are read from its syntax data (no syntax option repeated here)
    g = run(generate_cmd(data_bin, ck))
    assert len(re.findall(r"^H-\d+", g.stdout, flags=re.M)) == 21
    if "dep" in arch:  # a model input: decoding without the source parse is an error naming the file
        bad = run(generate_cmd(_without_test_syntax(data_bin, tmp_path), ck), check=False)
        assert bad.returncode != 0 and "test.src-tgt.src.words" in bad.stderr
        assert "source syntax is a model input (depths)" in bad.stderr
    p2 = run(train_cmd(data_bin, save, updates=5, arch=arch_args, extra=extra + ["--restore-file", ck]))
    assert "num_updates=5" in (p2.stdout + p2.stderr).replace(" ", "")
