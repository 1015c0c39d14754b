"""A data-bin's preparation record names files inside its own folder (or absolute paths given at preparation):
pack and from_pretrained refuse anything else with one line and write nothing; a file that is not BPE codes
or not the recorded parser's model is named, never printed; an empty split is refused before any work."""
import json
import os
import shutil

import pytest

from helpers import preprocess, run, tool
from test_failures import assert_one_line, checkpoint, corpus  # noqa: F401  (module fixtures)


def _copy_with_record(data_bin, tmp_path, change):
    dest = tmp_path / "bin"
    shutil.copytree(data_bin, dest)
    record = json.loads((dest / "preparation.json").read_text())
    change(record)
    (dest / "preparation.json").write_text(json.dumps(record))
    return dest


def _pack(dest, checkpoint, out):  # noqa: F811
    return run([tool("fairseq-syntax-pack"), str(dest), str(checkpoint), "-o", str(out)], check=False)


def test_pack_refuses_bpe_codes_outside_the_data_bin(data_bin, checkpoint, tmp_path):  # noqa: F811
    (tmp_path / "outside.codes").write_text("#version: 0.2\na b\n")
    dest = _copy_with_record(data_bin, tmp_path, lambda r: r.update(bpe={"src": "../outside.codes",
                                                                         "tgt": "../outside.codes"}))
    p = _pack(dest, checkpoint, tmp_path / "out")
    line = assert_one_line(p, dest / "preparation.json", "'../outside.codes'")
    assert "is not a file of this folder" in line
    assert not (tmp_path / "out").exists() and sorted(os.listdir(tmp_path)) == ["bin", "outside.codes"]


def test_pack_copies_only_a_file_that_loads_as_the_parsers_model(data_bin, checkpoint, tmp_path):  # noqa: F811
    secret = tmp_path / "not-a-model.txt"
    secret.write_text("root:x:0:0:root:/root:/bin/bash\n")
    dest = _copy_with_record(data_bin, tmp_path, lambda r: r["languages"]["src"].update(
        parser={"backend": "conllu", "options": {"path": str(secret)}}))
    p = _pack(dest, checkpoint, tmp_path / "out")
    assert_one_line(p, secret, "not packed", "cannot load the conllu parser")
    assert "root:x" not in p.stderr and not (tmp_path / "out").exists()


def test_from_pretrained_refuses_a_parser_path_leading_out_of_the_folder(data_bin, checkpoint, tmp_path):  # noqa: F811
    from fairseq_syntax.errors import SyntaxDataError
    from fairseq_syntax.inference.hub import from_pretrained

    dest = _copy_with_record(data_bin, tmp_path, lambda r: r["languages"]["src"].update(
        parser={"backend": "conllu", "options": {"path": "../elsewhere.conllu"}}))
    with pytest.raises(SyntaxDataError, match=r"the parser's path: '\.\./elsewhere\.conllu' is not a file of this"):
        from_pretrained(str(dest), str(checkpoint), str(dest)).translate("a b")


def test_a_bad_codes_file_is_named_not_printed_and_exits_nothing(data_bin, checkpoint, tmp_path, capfd):  # noqa: F811
    from fairseq_syntax.errors import SyntaxDataError
    from fairseq_syntax.inference.hub import from_pretrained

    dest = tmp_path / "bin"
    shutil.copytree(data_bin, dest)
    (dest / "bpe.codes").write_text("#version: 0.2\nsecret words of a system file\n")
    with pytest.raises(SyntaxDataError, match="bpe.codes:2: not BPE codes"):  # not SystemExit
        from_pretrained(str(dest), str(checkpoint), str(dest)).translate("a b")
    assert "secret words" not in capfd.readouterr().err
    p = _pack(dest, checkpoint, tmp_path / "out")
    assert_one_line(p, f"{dest / 'bpe.codes'}:2", "not BPE codes")
    assert "secret words" not in p.stderr and not (tmp_path / "out").exists()


@pytest.mark.parametrize("merges", ["0", "50"])
def test_an_empty_split_is_refused_before_any_work(corpus, tmp_path, merges):  # noqa: F811
    """With or without BPE: one line naming the empty file, exit 1, no data-bin (before: a traceback with BPE,
    and with --bpe-merges 0 an empty data-bin and exit 0)."""
    empty = tmp_path / "c"
    empty.mkdir()
    for name in ("train.src", "train.tgt"):
        (empty / name).write_text("")
    for name in ("valid.src", "valid.tgt", "valid.src.conllu", "valid.tgt.conllu"):
        shutil.copyfile(corpus / name, empty / name)
    p = run(preprocess("prepare") + ["-s", "src", "-t", "tgt", "--trainpref", str(empty / "train"), "--validpref",
                                     str(empty / "valid"), "--destdir", str(tmp_path / "bin"), "--syntax", "none",
                                     "--bpe-merges", merges, "--no-progress"], check=False)
    assert_one_line(p, empty / "train.src", "empty")
    assert not (tmp_path / "bin").exists()
