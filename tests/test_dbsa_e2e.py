"""DBSA and SISA presets end to end: fairseq-train -> fairseq-generate (beam 4, no parses) -> restore."""
import os
import re
import shutil

import pytest

from helpers import generate_cmd, quick_subset, run, tiny_sizes, train_cmd

SMALL = tiny_sizes()  # the tiny presets' sizes on a base preset
DEP = ["--criterion", "label_smoothed_cross_entropy_with_dependency"]


def _without_test_syntax(data_bin, tmp_path):
    """A copy of the data-bin whose test split has tokens only: decoding needs no parse."""
    out = str(tmp_path / "bin-noparse")
    shutil.copytree(data_bin, out, ignore=shutil.ignore_patterns("work"))
    for f in os.listdir(out):
        if f.startswith("test.") and any(f".{x}." in f for x in ("words", "heads", "labels")):
            os.remove(os.path.join(out, f))
    return out


@pytest.mark.parametrize("arch,small", quick_subset([
    ("transformer_dbsa", True), ("transformer_dbsa_enc", True), ("transformer_dbsa_dec", True),
    ("transformer_sisa", True), ("transformer_dbsa_tiny", False), ("transformer_sisa_tiny", False),
], quick=[("transformer_dbsa_tiny", False)]))
def test_preset_train_generate_restore(arch, small, data_bin, tmp_path):
    save = str(tmp_path / "ck")
    arch_args = ["--arch", arch] + (SMALL if small else [])
    p = run(train_cmd(data_bin, save, updates=3, arch=arch_args, extra=DEP))
    log = p.stdout + p.stderr
    if arch != "transformer_dbsa_dec":
        assert "dep_enc_loss=" in log
    if arch in ("transformer_dbsa", "transformer_dbsa_dec", "transformer_dbsa_tiny"):
        assert "dep_dec_loss=" in log
    ck = os.path.join(save, "checkpoint_last.pt")
    g = run(generate_cmd(_without_test_syntax(data_bin, tmp_path), ck))
    assert len(re.findall(r"^H-\d+", g.stdout, flags=re.M)) == 21
    p2 = run(train_cmd(data_bin, save, updates=5, arch=arch_args, extra=DEP + ["--restore-file", ck]))
    assert "num_updates=5" in (p2.stdout + p2.stderr).replace(" ", "")
