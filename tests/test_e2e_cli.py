"""End to end through the real CLIs: synth -> prepare -> fairseq-train -> fairseq-generate -> restore."""
import os
import re
import sys

import pytest
import torch

from helpers import USER_DIR, generate_cmd, preprocess, run, tool, train_cmd


def test_prepare_writes_tokens_and_aligned_syntax(data_bin):
    for split in ("train", "valid", "test"):
        for lang in ("src", "tgt"):
            for f in ("", ".words", ".heads", ".labels"):
                assert os.path.exists(os.path.join(data_bin, f"{split}.src-tgt.{lang}{f}.idx")), (split, lang, f)
    assert os.path.exists(os.path.join(data_bin, "dict.src.labels.txt"))


def test_train_generate_restore(data_bin, tmp_path):
    save = str(tmp_path / "ck")
    p = run(train_cmd(data_bin, save, updates=4))
    assert "done training" in p.stdout + p.stderr
    ck = os.path.join(save, "checkpoint_last.pt")
    # checkpoints load under torch's default weights_only=True (no safety switch-off)
    import fairseq_syntax.plugin  # noqa: F401  (registers the allow-list)

    from fairseq_syntax.patches.checkpoint_safety import allowed_global_names

    needed = set(torch.serialization.get_unsafe_globals_in_checkpoint(ck))
    allowed = allowed_global_names()
    assert needed <= allowed, f"checkpoint pickles globals outside the allow-list: {needed - allowed}"
    state = torch.load(ck, weights_only=True)
    assert state["extra_state"]["train_iterator"]["epoch"] >= 1 and "model" in state
    g = run(generate_cmd(data_bin, ck))
    n_hyp = len(re.findall(r"^H-\d+", g.stdout, flags=re.M))
    assert n_hyp == 21  # every test sentence, none dropped by fairseq's batching
    assert "BLEU4" in g.stdout
    # --restore-file continues from the checkpoint (optimizer state, iterator)
    p2 = run(train_cmd(data_bin, save, updates=6, extra=["--restore-file", ck]))
    log = p2.stdout + p2.stderr
    assert "Loaded checkpoint" in log and "num_updates=6" in log.replace(" ", "")


def test_explicit_syntax_fields_with_plain_transformer(data_bin, tmp_path):
    # the plain transformer ignores syntax; the collater still builds every field in the real loop
    save = str(tmp_path / "ck")
    run(train_cmd(data_bin, save, updates=2, extra=[
        "--source-syntax", "parents,depths,labels,words", "--target-syntax", "parents,depths",
        "--parent-strategy", "middle"]))
    g = run(generate_cmd(data_bin, os.path.join(save, "checkpoint_last.pt")))
    assert len(re.findall(r"^H-\d+", g.stdout, flags=re.M)) == 21


def test_interactive(data_bin, tmp_path):
    save = str(tmp_path / "ck")
    run(train_cmd(data_bin, save, updates=2))
    # the data-bin's preparation record: text as the training text was given (whitespace tokens), BPE inside
    src = open(os.path.join(data_bin, "work", "test.tok.src")).read().splitlines()[:2]
    p = run([tool("fairseq-interactive"), data_bin, "--user-dir", USER_DIR, "--task", "syntax_translation",
             "--path", os.path.join(save, "checkpoint_last.pt"), "--beam", "4", "--cpu", "-s", "src", "-t", "tgt"],
            input="\n".join(src) + "\n")
    assert len(re.findall(r"^H-\d+", p.stdout, flags=re.M)) == 2
    bpe = open(os.path.join(data_bin, "work", "test.bpe.src")).read().splitlines()[:2]
    assert re.findall(r"^S-\d+\t(.*)$", p.stdout, flags=re.M) == bpe  # BPE'd by the record's codes


def test_cli_data_errors_exit_cleanly(tmp_path):
    c = tmp_path / "a.conllu"
    c.write_text("1\ta\t_\t_\t_\t_\t0\troot\t_\t_\n2\tb\t_\t_\t_\t_\t5\tdep\t_\t_\n\n")
    b = tmp_path / "a.bpe"
    b.write_text("a b\n")
    p = run(preprocess("align") + ["--conllu", str(c), "--bpe", str(b), "-o", str(tmp_path / "o"), "--no-progress"],
            check=False)
    assert p.returncode == 1
    assert "a.conllu:2: HEAD 5 is out of range" in p.stderr
    assert "Traceback" not in p.stderr


def test_help_of_every_tool():
    for name in ("parse", "align", "binarize", "prepare", "synth", "multitask"):
        p = run(preprocess(name) + ["--help"])
        assert "usage:" in p.stdout
        assert "tensorboardX" not in p.stdout + p.stderr  # installed: fairseq's install hint is gone
    # fairseq prints --help before task options exist; our options command lists them
    p = run([sys.executable, "-m", "fairseq_syntax.cli.options"])
    assert "--parent-strategy {auto,chain,middle,first}" in p.stdout and "--source-syntax" in p.stdout
    assert "--dbsa-encoder-layer" in p.stdout and "--dependency-lambda-enc" in p.stdout


def test_prepare_refuses_sides_of_different_length(tmp_path):
    raw = tmp_path / "raw"
    run(preprocess("synth") + ["-o", str(raw), "--train", "20", "--valid", "3", "--test", "3"])
    lines = open(raw / "train.tgt").read().splitlines()
    (raw / "train.tgt").write_text("\n".join(lines[:-1]) + "\n")
    (raw / "train.tgt.conllu").unlink()  # target side: text only, one line short
    p = run(preprocess("prepare") + ["-s", "src", "-t", "tgt", "--trainpref", str(raw / "train"), "--syntax", "source",
                                     "--destdir", str(tmp_path / "bin"), "--no-progress"], check=False)
    assert p.returncode == 1
    assert "line count mismatch in split 'train': 20 src sentences vs 19 tgt sentences" in p.stderr


def test_prepare_selects_training_pairs_on_tokenised_length(tmp_path):
    """--train-first, --max-words and --max-ratio (the papers' training filters) keep the parses aligned."""
    from fairseq.data import data_utils

    raw = tmp_path / "raw"
    run(preprocess("synth") + ["-o", str(raw), "--train", "60", "--valid", "3", "--test", "3", "--seed", "3"])
    (raw / "train.tgt.conllu").unlink()  # target: text only; source: CoNLL-U only (both paths are filtered)
    (raw / "train.src").unlink()
    tgt_lines = open(raw / "train.tgt").read().splitlines()
    from fairseq_syntax.data.trees.conllu import read_conllu

    src_words = [s.forms("surface") for s in read_conllu(str(raw / "train.src.conllu"))]
    pairs = list(zip(src_words, [t.split() for t in tgt_lines]))[:50]
    expected = [(a, b) for a, b in pairs if max(len(a), len(b)) <= 12 and max(len(a), len(b)) <= 1.2 * min(len(a), len(b))]
    assert 0 < len(expected) < 50  # the filters bite on this corpus
    out = tmp_path / "bin"
    run(preprocess("prepare") + ["-s", "src", "-t", "tgt", "--trainpref", str(raw / "train"),
                                 "--validpref", str(raw / "valid"), "--syntax", "source", "--bpe-merges", "0",
                                 "--train-first", "50", "--max-words", "12", "--max-ratio", "1.2",
                                 "--destdir", str(out), "--no-progress"])
    assert open(out / "work" / "train.tok.src").read().splitlines() == [" ".join(a) for a, _ in expected]
    assert open(out / "work" / "train.tok.tgt").read().splitlines() == [" ".join(b) for _, b in expected]
    # --bpe-merges 0: words are the units, and the binarized syntax matches the token data sentence by sentence
    tokens = data_utils.load_indexed_dataset(str(out / "train.src-tgt.src"), None)
    heads = data_utils.load_indexed_dataset(str(out / "train.src-tgt.src.heads"), None)
    assert len(tokens) == len(heads) == len(expected)
    assert [len(tokens[i]) - 1 for i in range(len(tokens))] == [len(a) for a, _ in expected]  # + EOS
    assert not any("@@" in line for line in open(out / "dict.src.txt"))


def test_prepare_lowercase_only_without_syntax(tmp_path):
    raw = tmp_path / "raw"
    run(preprocess("synth") + ["-o", str(raw), "--train", "20", "--valid", "3", "--test", "3"])
    for f in raw.glob("*.conllu"):
        f.unlink()
    for f in raw.glob("train.*"):
        f.write_text(f.read_text().title())  # capitals to lowercase
    p = run(preprocess("prepare") + ["-s", "src", "-t", "tgt", "--trainpref", str(raw / "train"), "--lowercase",
                                     "--destdir", str(tmp_path / "bin"), "--no-progress"], check=False)
    assert p.returncode == 2 and "--lowercase is for corpora without syntax" in p.stderr
    run(preprocess("prepare") + ["-s", "src", "-t", "tgt", "--trainpref", str(raw / "train"), "--lowercase",
                                 "--syntax", "none", "--destdir", str(tmp_path / "bin"), "--no-progress"])
    text = open(tmp_path / "bin" / "work" / "train.tok.src").read()
    assert text == text.lower() and text.lower() == (raw / "train.src").read_text().lower()



def test_prepare_refuses_an_existing_data_bin_before_any_work_unless_overwrite(tmp_path):
    raw = tmp_path / "raw"
    run(preprocess("synth") + ["-o", str(raw), "--train", "20", "--valid", "3", "--test", "3"])
    args = preprocess("prepare") + ["-s", "src", "-t", "tgt", "--trainpref", str(raw / "train"),
                                    "--destdir", str(tmp_path / "bin"), "--no-progress", "--bpe-merges", "20"]
    run(args)
    codes = tmp_path / "bin" / "work" / "bpe.codes.joint"
    learned = codes.stat().st_mtime_ns
    before = {p.name: p.stat().st_mtime_ns for p in (tmp_path / "bin").iterdir() if p.is_file()}
    p = run(args, check=False)
    assert p.returncode == 2 and "Traceback" not in p.stderr
    assert f"--destdir {tmp_path / 'bin'} already holds a data-bin" in p.stderr and "--overwrite" in p.stderr
    assert {p.name: p.stat().st_mtime_ns for p in (tmp_path / "bin").iterdir() if p.is_file()} == before
    run(args + ["--overwrite"])
    assert (tmp_path / "bin" / "dict.src.txt").stat().st_mtime_ns > before["dict.src.txt"]
    assert codes.stat().st_mtime_ns == learned  # the BPE codes were reused, not learned again

def test_safe_loader_takes_numeric_numpy_meters_only(tmp_path):
    """--eval-bleu checkpoints hold numpy integer arrays (sacreBLEU counts in the meters): they load with
    weights_only=True; arrays of objects or strings are still refused."""
    import numpy as np
    import pytest

    import fairseq_syntax.plugin  # noqa: F401  (registers the allow-list)

    ok = {"_bleu_counts": {"val": np.array([800, 796], dtype=np.int64), "sum": np.array([1.5, 2.0])}}
    torch.save(ok, tmp_path / "ok.pt")
    loaded = torch.load(tmp_path / "ok.pt", weights_only=True)
    assert loaded["_bleu_counts"]["val"].tolist() == [800, 796] and loaded["_bleu_counts"]["sum"].dtype == np.float64
    for bad in (np.array([object()], dtype=object), np.array(["ab"])):
        torch.save({"x": bad}, tmp_path / "bad.pt")
        with pytest.raises(Exception, match="Weights only load failed"):
            torch.load(tmp_path / "bad.pt", weights_only=True)


@pytest.mark.parametrize("arch, criterion", [("transformer_dep_rel_tiny", "label_smoothed_cross_entropy"),
                                             ("transformer_dbsa_tiny", "label_smoothed_cross_entropy_with_dependency")])
def test_one_cli_training_step_of_a_preset_on_the_golden_data_bin(arch, criterion, tmp_path):
    """tests/helpers.py's train_one_step: fairseq-syntax-train, one update of a tiny preset on the golden data-bin
    (no valid split), a checkpoint saved (the helper a new mechanism's tests start from: docs/extending.md)."""
    import os

    from helpers import train_one_step

    checkpoint = train_one_step(arch, tmp_path / "ck", criterion=criterion)
    assert os.path.isfile(checkpoint)
