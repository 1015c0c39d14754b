"""PASCAL and S&H presets end to end: train -> generate (beam 4) -> interactive (parsed on the fly) -> restore."""
import os
import re

import pytest

from helpers import USER_DIR, generate_cmd, quick_subset, run, tool, train_cmd
from test_dbsa_e2e import SMALL


def interactive_cmd(data_bin, checkpoint, *extra):
    return [tool("fairseq-interactive"), data_bin, "--user-dir", USER_DIR, "--task", "syntax_translation",
            "--path", checkpoint, "--beam", "4", "--cpu", "-s", "src", "-t", "tgt", *extra]


@pytest.mark.parametrize("arch,small", quick_subset([
    ("transformer_pascal", True), ("transformer_sh", True),
    ("transformer_pascal_tiny", False), ("transformer_sh_tiny", False),
], quick=[("transformer_pascal_tiny", False)]))
def test_preset_train_generate_interactive_restore(arch, small, data_bin, tmp_path):
    save = str(tmp_path / "ck")
    arch_args = ["--arch", arch] + (["--encoder-layers", "2", "--decoder-layers", "2"] + SMALL if small else [])
    if arch == "transformer_pascal":
        arch_args += ["--pascal-heads", "3", "--pascal-ignore-prob", "0.3"]  # 3 of 4 heads (SMALL)
    run(train_cmd(data_bin, save, updates=3, arch=arch_args))
    ck = os.path.join(save, "checkpoint_last.pt")
    g = run(generate_cmd(data_bin, ck))  # the test split's own syntax files
    assert len(re.findall(r"^H-\d+", g.stdout, flags=re.M)) == 21
    # fairseq-interactive: tokenised input, BPE by fairseq, parsed on the fly by the CoNLL-U lookup parser
    work = os.path.join(data_bin, "work")
    lines = open(os.path.join(work, "test.tok.src")).read().splitlines()[:2]
    conllu = os.path.join(os.path.dirname(data_bin), "raw", "test.src.conllu")
    p = run(interactive_cmd(data_bin, ck, "--bpe", "subword_nmt", "--bpe-codes", os.path.join(work, "bpe.codes.joint"),
                            "--inference-parser", "conllu", "--inference-parser-model", conllu),
            input="\n".join([lines[0], "", lines[1]]) + "\n")  # an empty line: an empty translation, no parse
    hyps = dict(re.findall(r"^H-(\d+)\t\S+\t?(.*)$", p.stdout, flags=re.M))
    assert sorted(hyps) == ["0", "1", "2"] and hyps["1"] == "" and hyps["0"] and hyps["2"]
    # a sentence the lookup parser does not know: a clear error naming the line, not a silent unparsed input;
    # that line gets an empty translation and the session goes on
    bad = run(interactive_cmd(data_bin, ck, "--inference-parser", "conllu", "--inference-parser-model", conllu),
              input="no such sentence\n" + lines[0] + "\n", check=False)
    assert re.search(r"error: input line 1: the parser failed on this line: .*test.src.conllu: no sentence with the "
                     r"tokens of the input", bad.stderr) and "Traceback" not in bad.stderr
    assert dict(re.findall(r"^D-(\d+)\t\S+\t?(.*)$", bad.stdout, flags=re.M))["0"] == ""
    p2 = run(train_cmd(data_bin, save, updates=5, arch=arch_args, extra=["--restore-file", ck]))
    assert "num_updates=5" in (p2.stdout + p2.stderr).replace(" ", "")


TABLE2 = {"nc11-en-de": ("(0.9, 0.997)", 2, 0.4), "nc11-de-en": ("(0.9, 0.997)", 8, 0.0),
          "wmt18-en-tr": ("(0.9, 0.98)", 7, 0.3), "wmt16-en-de": ("(0.9, 0.98)", 5, 0.0),
          "wmt17-en-de": ("(0.9, 0.997)", 7, 0.3), "wat-en-ja": ("(0.9, 0.997)", 7, 0.0)}


def test_recipes_use_table2(tmp_path):
    """examples/<corpus>/train.sh pascal carries Table 2's values (tests/test_recipes.py runs the recipes)."""
    import shlex

    from helpers import ROOT

    os.makedirs(tmp_path / "main" / "data-bin")
    open(os.path.join(tmp_path / "main" / "data-bin", ".prepared"), "w").close()  # as prepare.sh leaves it
    for corpus, (betas, heads, q) in TABLE2.items():
        recipe = os.path.join(ROOT, "examples", corpus, "train.sh")
        p = run(["env", "DRY_RUN=1", f"WORK={tmp_path}", "bash", recipe, "pascal"])
        train = shlex.split(p.stderr.split("] ", 1)[1])
        opt = {train[i]: train[i + 1] for i in range(len(train) - 1) if train[i].startswith("--")}
        assert (opt["--adam-betas"], int(opt["--pascal-heads"]), float(opt["--pascal-ignore-prob"])) == (betas, heads, q)
        assert opt["--lr"] == "0.0007" and opt["--warmup-updates"] == "8000" and opt["--pascal-layer"] == "1"
        assert opt["--arch"] == "transformer_pascal" and opt["--pascal-variance"] == "1"
