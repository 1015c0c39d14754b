"""SentencePiece preparation at scale, as for BPE (docs/data.md, "At scale"): the data-bin is byte for byte the
same with any number of --workers, after a run killed at each of its write boundaries and run again, and after
a sharded parse (a SLURM array) assembled by the command without --shard."""
import os

import faults
import pytest
from conftest import require_shared
from helpers import preprocess, run
from test_failures import _differences
from test_prepare_resume import _args, _killed_at, _ok

SPM = ["--spm-vocab-size", "60"]


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory):
    """A tiny synthetic corpus with gold parses (and their # text), its clean SentencePiece data-bin, and the
    write boundaries of that run."""
    d = tmp_path_factory.mktemp("spm_scale")
    run(preprocess("synth") + ["-o", str(d / "c"), "--train", "40", "--valid", "8", "--test", "1", "--seed", "6"])
    _ok(_args(d / "c", d / "clean", SPM))
    log = d / "writes.log"
    _ok(_args(d / "c", d / "logged", SPM), lambda: faults.log_boundaries(str(log)))
    return d, [line.split("\t", 1)[1] for line in log.read_text().splitlines()]


def test_the_model_and_its_stamp_are_write_boundaries(synthetic):
    d, writes = synthetic
    names = [os.path.relpath(w, d / "logged") for w in writes]
    for expected in ("work/train.raw.src", "work/spm.joint.model", "work/spm.joint.model.done",
                     "work/train.spm.src.chunks/00000000.out", "work/train.spm.src", "spm.model"):
        assert expected in names, expected
    assert names.index("work/spm.joint.model") < names.index("work/spm.joint.model.done")


def test_any_number_of_workers_makes_the_same_data_bin(synthetic, tmp_path):
    d, _ = synthetic
    _ok(_args(d / "c", tmp_path / "bin", SPM + ["--workers", "2"]))
    assert _differences(d / "clean", tmp_path / "bin") == []


@pytest.mark.parametrize("group", [0, pytest.param(1, marks=pytest.mark.slow), pytest.param(2, marks=pytest.mark.slow)])
def test_killed_at_each_write_boundary_then_rerun_is_a_clean_run(synthetic, tmp_path, group):
    """A run killed right after its N-th durable write (this group: every third N), then the same command: the
    clean data-bin, byte for byte."""
    d, writes = synthetic
    for n in range(group + 1, len(writes) + 1, 3):
        dest = tmp_path / f"n{n}"
        _killed_at(_args(d / "c", dest, SPM), n)
        _ok(_args(d / "c", dest, SPM))
        assert _differences(d / "clean", dest) == [], (n, writes[n - 1])


@pytest.mark.slow  # UDPipe three times: about 12 s
def test_a_sharded_parse_assembles_into_the_same_data_bin(tmp_path):
    """prepare --shard 0/2 and 1/2 (the parse of each half of the training pairs), then the command without
    --shard: the data-bin of one unsharded run."""
    raw = require_shared("data", "multi30k", "task1", "raw")
    en = require_shared("models", "en_ewt_udpipe_small.udpipe")
    c = tmp_path / "c"
    c.mkdir()
    for split, name, n in (("train", "train", 600), ("valid", "val", 20)):
        for lang in ("en", "de"):
            with open(os.path.join(raw, f"{name}.{lang}"), encoding="utf-8") as f:
                (c / f"{split}.{lang}").write_text("".join(next(f) for _ in range(n)), encoding="utf-8")
    common = ["-s", "en", "-t", "de", "--trainpref", str(c / "train"), "--validpref", str(c / "valid"), "--syntax",
              "source", "--parser-source", "udpipe", "--parser-model-source", en, "--spm-vocab-size", "300",
              "--chunk-size", "256", "--no-progress"]
    _ok(common + ["--destdir", str(tmp_path / "one")])
    work = ["--destdir", str(tmp_path / "sharded"), "--workdir", str(tmp_path / "shared-work")]
    for shard in ("0/2", "1/2"):
        _ok(common + work + ["--shard", shard])
    assert not (tmp_path / "sharded" / "preparation.json").exists()
    _ok(common + work)
    assert _differences(tmp_path / "one", tmp_path / "sharded") == []


def test_a_model_per_side(synthetic, tmp_path):
    """--spm-model-source / --spm-model-target: each side segmented by its own model, both copied and recorded."""
    import json

    import sentencepiece as spm

    d, _ = synthetic
    for lang, size in (("src", 40), ("tgt", 50)):
        lines = (d / "c" / f"train.{lang}").read_text(encoding="utf-8").splitlines()
        spm.SentencePieceTrainer.train(sentence_iterator=iter(lines), model_prefix=str(tmp_path / lang),
                                       vocab_size=size, hard_vocab_limit=False, num_threads=1, minloglevel=2)
    _ok(_args(d / "c", tmp_path / "bin", ["--spm-model-source", str(tmp_path / "src.model"), "--spm-model-target",
                                          str(tmp_path / "tgt.model")]))
    record = json.loads((tmp_path / "bin" / "preparation.json").read_text())["spm"]
    assert record["src"]["file"] == "spm.src.model" and record["tgt"]["file"] == "spm.tgt.model"
    assert (tmp_path / "bin" / "spm.tgt.model").read_bytes() == (tmp_path / "tgt.model").read_bytes()
    assert record["src"]["pieces"] == 40 and record["tgt"]["source"] == str(tmp_path / "tgt.model")


@pytest.mark.parametrize("options, says", [
    (["--spm-vocab-size", "60", "--bpe-merges", "40"], "--bpe-merges 40 and SentencePiece"),
    (["--spm-vocab-size", "60", "--units", "words"], "--units words: SentencePiece cuts the raw sentence"),
    (["--spm-vocab-size", "60", "--syntax", "source", "--tokenizer-target", "parser"], "--tokenizer-target parser"),
    (["--spm-model-source", "CLEAN/spm.model"], "the target side has no SentencePiece model"),
])
def test_options_that_do_not_go_with_sentencepiece(synthetic, tmp_path, options, says):
    d, _ = synthetic
    options = [x.replace("CLEAN", str(d / "clean")) for x in options]
    p = run([*preprocess("prepare"), *_args(d / "c", tmp_path / "bin", options)], check=False)
    assert p.returncode == 2 and says in p.stderr, p.stderr[-1500:]
    assert not (tmp_path / "bin").exists()
