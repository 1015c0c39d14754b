"""Failures found early and named clearly: a criterion the model cannot feed (before any checkpoint), an output
path that is a folder (before any parsing), half of a dataset's files missing, a line of input that is not
UTF-8, a full disk (docs/design.md, "Errors")."""
import errno
import re
import os
import shutil

import pytest

from helpers import preprocess, run, train_cmd
from test_failures import assert_one_line, checkpoint, corpus  # noqa: F401  (module fixtures)


@pytest.mark.parametrize("criterion,arch,expected", [
    ("label_smoothed_cross_entropy_with_dependency", "transformer_rel_tiny", "trains parse heads, and the model has none"),
    ("label_smoothed_cross_entropy_with_sync", "transformer_dbsa_tiny", "needs a SyncAttn model"),
])
def test_a_criterion_the_model_cannot_feed_is_refused_before_training(data_bin, tmp_path, criterion, arch, expected):
    """Before: the sync loss failed at the first step after fairseq wrote crash.pt, and the parse-head loss
    trained a model without parse heads with its terms at zero, silently."""
    save = tmp_path / "ck"
    p = run(train_cmd(data_bin, str(save), arch=["--arch", arch], extra=["--criterion", criterion]), check=False)
    assert_one_line(p, expected, status=2)
    assert not save.exists() or os.listdir(save) == []


def test_an_output_path_that_is_a_folder_is_refused_before_parsing(corpus, tmp_path):  # noqa: F811
    out = tmp_path / "out"
    out.mkdir()
    p = run(preprocess("parse") + ["-i", str(corpus / "train.src"), "-o", str(out), "--backend", "conllu",
                                   "--model", str(corpus / "train.src.conllu"), "--no-progress"], check=False)
    assert_one_line(p, out, "is a folder")
    assert sorted(os.listdir(tmp_path)) == ["out"] and os.listdir(out) == []  # no temporary file left


@pytest.mark.parametrize("missing", ["valid.src-tgt.src.idx", "valid.src-tgt.tgt.heads.bin"])
def test_half_of_a_dataset_missing_is_named_with_what_to_do(data_bin, tmp_path, missing):
    dest = tmp_path / "bin"
    shutil.copytree(data_bin, dest)
    os.remove(dest / missing)
    p = run(train_cmd(str(dest), str(tmp_path / "ck")), check=False)
    other = missing[:-3] + ("bin" if missing.endswith("idx") else "idx")
    assert_one_line(p, dest / missing, f"missing, while {other} is there", "prepare it again")


def test_a_raw_line_that_is_not_utf8_is_named(data_bin, checkpoint):  # noqa: F811
    """What a non-UTF-8 byte read from stdin becomes in Python (a surrogate escape) is refused with its line and
    byte, before the parser sees it (UDPipe's binding failed with a SWIG type error)."""
    from fairseq_syntax.errors import InputLineError
    from fairseq_syntax.inference.hub import from_pretrained

    hub = from_pretrained(os.path.dirname(str(checkpoint)), str(checkpoint), data_bin)
    with pytest.raises(InputLineError, match=r"input line 2: is not UTF-8 \(byte 0xE9 at character 4\)"):
        hub.translate(["a b", "caf\udce9 au lait"])


def test_a_full_disk_names_the_file_and_leaves_no_temporary_file(tmp_path, monkeypatch):
    from fairseq_syntax import durable_files
    from fairseq_syntax.patches.error_display import one_line

    def full(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(durable_files.os, "fsync", full)
    target = tmp_path / "train.tok.src"
    with pytest.raises(OSError) as e:
        durable_files.atomic_write(str(target), b"a b\n")
    assert os.listdir(tmp_path) == []
    line = one_line(e.value)
    assert line.startswith(f"{target}: no space left on the device") and "run the same command again" in line


def test_a_failed_pre_check_leaves_the_data_bin_as_it_was(corpus, tmp_path):  # noqa: F811
    """A finished data-bin rebuilt (--overwrite) with a parser model that does not load: refused before anything
    is written, the data-bin still finished (not marked unfinished), so the corrected command is not refused
    as 'left unfinished by a prepare with other options' (before: it was, with exit 2)."""
    pytest.importorskip("ufal.udpipe")
    from conftest import require_shared

    model = require_shared("models", "en_ewt_udpipe_small.udpipe")
    raw = tmp_path / "raw"
    raw.mkdir()
    for split in ("train", "valid"):
        for lang in ("src", "tgt"):
            lines = (corpus / f"{split}.{lang}").read_text(encoding="utf-8").splitlines()[:40]
            (raw / f"{split}.{lang}").write_text("\n".join(lines) + "\n", encoding="utf-8")  # raw text: parsed
    dest = tmp_path / "bin"

    def prepare(parser_model, *extra):
        return run(preprocess("prepare") + ["-s", "src", "-t", "tgt", "--trainpref", str(raw / "train"),
                                            "--validpref", str(raw / "valid"), "--destdir", str(dest), "--syntax",
                                            "source", "--parser", "udpipe", "--parser-model-source",
                                            str(parser_model), "--pretokenized", "--bpe-merges", "50",
                                            "--no-progress", *extra], check=False)

    assert prepare(model).returncode == 0
    before = {name: (dest / name).read_bytes() for name in os.listdir(dest) if (dest / name).is_file()}
    p = prepare(tmp_path / "missing.udpipe", "--overwrite")
    assert_one_line(p, "missing.udpipe")
    assert {name: (dest / name).read_bytes() for name in os.listdir(dest) if (dest / name).is_file()} == before
    again = prepare(model, "--overwrite")
    assert again.returncode == 0, again.stderr[-2000:]


@pytest.mark.parametrize("state", ["unreadable", "empty", "other"])
def test_a_udpipe_model_that_cannot_be_read_is_told_from_one_that_is_not_a_model(tmp_path, state, monkeypatch):
    """UDPipe's loader says only that it failed: a file that cannot be read, an empty file and another kind of
    file are told apart in the one line (as root a permission cannot be taken away: the read fails by a stub)."""
    pytest.importorskip("ufal.udpipe")
    import builtins

    from fairseq_syntax.errors import SyntaxDataError
    from fairseq_syntax.parsing.base import load_parser

    model = tmp_path / "en.udpipe"
    model.write_bytes(b"" if state == "empty" else b"not a model at all")
    if state == "unreadable":
        real_open = builtins.open

        def denying_open(path, *a, **k):
            if str(path) == str(model):
                raise PermissionError(13, "Permission denied", str(path))
            return real_open(path, *a, **k)

        monkeypatch.setattr(builtins, "open", denying_open)
    expected = {"unreadable": "cannot be read (Permission denied)", "empty": "is empty",
                "other": "is not a UDPipe model"}[state]
    with pytest.raises(SyntaxDataError, match=re.escape(expected)):
        load_parser("udpipe", {"model_path": str(model)}, str(model))
