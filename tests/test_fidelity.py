"""examples/synthetic/fidelity.py (docs/benchmarks.md "Fidelity") and the steps it shares with the demo and the
UD PUD run (examples/recipes/pipeline.py): every model it names trains with a registered architecture and
criterion; unknown names are refused before anything runs; fairseq-generate's output becomes hyp.tok / ref.tok in
sentence order, with the recipes' command line. A whole fidelity run is not tested (its test set is 500 sentences);
the demo's end-to-end test runs the shared steps."""
import os
import sys

import pytest

from helpers import ROOT

sys.path.insert(0, os.path.join(ROOT, "examples", "synthetic"))
sys.path.insert(0, os.path.join(ROOT, "examples", "recipes"))
import fidelity  # noqa: E402
import pipeline  # noqa: E402


def option(options, name):
    return options[options.index(name) + 1]


def test_every_model_trains_a_registered_architecture_and_criterion():
    from fairseq.criterions import CRITERION_REGISTRY
    from fairseq.models import ARCH_MODEL_REGISTRY

    for model in fidelity.MODELS:
        options = fidelity.Fidelity().options(model)
        assert option(options, "--arch") in ARCH_MODEL_REGISTRY, model
        assert option(options, "--criterion") in CRITERION_REGISTRY, model
        assert ("--share-all-embeddings" in options) == ("lstm" not in model), model
        assert options.count("--criterion") == 1 and options.count("--arch") == 1, model


def test_the_example_scripts_and_the_recipes_build_one_command_line():
    """The example scripts' steps and the recipes' steps take their command lines from one module."""
    from runner import command_lines, commands

    assert pipeline.train_command is commands.train_command is command_lines.train_command
    assert pipeline.generate_command is commands.generate_command
    assert pipeline.induce_command is commands.induce_command
    assert pipeline.split_generate_output is commands.split_generate_output
    scripts = [os.path.join(ROOT, p) for p in ("examples/demo/demo.py", "examples/synthetic/fidelity.py",
                                                 "examples/ud_pud/dbsa_uas.py", "examples/recipes/pipeline.py")]
    for script in scripts:  # no script spells a fairseq command line of its own
        text = open(script, encoding="utf-8").read()
        assert '"fairseq-generate", data' not in text and '"fairseq-syntax-train", data' not in text, script


def test_an_unknown_model_is_refused_before_anything_runs(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("FIDELITY_DIR", str(tmp_path / "fidelity"))
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as exit_:
        fidelity.main(["transformer", "dbsa_encoder"])
    assert exit_.value.code == 2
    assert "unknown model dbsa_encoder (one of: transformer, dbsa," in capsys.readouterr().err
    assert not (tmp_path / "fidelity").exists()


def test_generate_writes_hypotheses_and_references_in_sentence_order(tmp_path, monkeypatch, capsys):
    """fairseq-generate prints sentences as their batches finish; hyp.tok and ref.tok are in sentence order (an
    empty hypothesis an empty line), and a sentence without its translation is a failure named by the plugin's
    reader of that output."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "fairseq-generate"
    fake.write_text("#!/bin/sh\necho \"$*\" > \"$ARGS\"\ncat \"$OUTPUT\"\necho 'a log line' >&2\n")
    fake.chmod(0o755)
    output = tmp_path / "printed"
    output.write_text("S-2\tx\nT-2\tref ten\nH-2\t-0.5\thyp ten\nD-2\t-0.5\thyp ten\n"
                      "S-0\ty\nT-0\tref two\nH-0\t-0.7\t\nD-0\t-0.7\t\nT-1\tref nine\nH-1\t-0.1\thyp nine\n"
                      "D-1\t-0.1\thyp nine\nGenerate test with beam=4: BLEU4 = 1.00\n")
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("OUTPUT", str(output))
    monkeypatch.setenv("ARGS", str(tmp_path / "args"))
    out = tmp_path / "gen"
    assert pipeline.generate(str(out), "DATA", "CKPT", ["--beam", "4"])
    assert (out / "hyp.tok").read_text() == "\nhyp nine\nhyp ten\n"
    assert (out / "ref.tok").read_text() == "ref two\nref nine\nref ten\n"
    assert (out / "generate.log").read_text() == "a log line\n"
    assert (tmp_path / "args").read_text().split() == [
        "DATA", "--user-dir", pipeline.USER_DIR, "--task", "syntax_translation", "--path", "CKPT",
        "--remove-bpe", "--beam", "4"]
    output.write_text("T-0\tref\nT-1\tref\nH-0\t-1\thyp\nD-0\t-1\thyp\nGenerate test with beam=4: BLEU4 = 1\n")
    assert not pipeline.generate(str(out), "DATA", "CKPT", [])
    assert "no translation of 1 of the 2 sentences" in capsys.readouterr().err
