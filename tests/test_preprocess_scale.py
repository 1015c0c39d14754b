"""Preprocessing at scale: parallel, sharded, resumable chunked steps (fairseq_syntax.preparation.chunked).

Parse (CLI, conllu lookup and UDPipe backends), language filter and BPE application: --workers 2 writes the
same bytes as --workers 1; --shard pieces assembled equal the unsharded output with nothing redone; a run
killed with SIGKILL after its first chunks and started again equals an uninterrupted run and redoes none of
the finished chunks; a truncated or corrupt chunk is detected and redone. Small inputs: the whole file runs
in well under a minute.
"""
import json
import os
import shutil
import signal
import subprocess
import sys

import pytest

import forkserver
from conftest import require_shared
from helpers import ROOT, preprocess

EWT_DEV = ("data", "UD_English-EWT", "en_ewt-ud-dev.conllu")
#: the runner that kills a command after its N-th committed chunk: [*FAULTS, "kill-after-chunks=N", "--", ...]
FAULTS = [sys.executable, os.path.join(ROOT, "tests", "faults.py")]


def _env(**extra):
    e = dict(os.environ, OMP_NUM_THREADS="1", PYTHONWARNINGS="ignore", FAIRSEQ_SYNTAX_DATA_ONLY="1")
    e.update(extra)
    return e


def _run(cmd, **env):
    return subprocess.run(cmd, capture_output=True, text=True, env=_env(**env), cwd=ROOT)


def _ok(p):
    assert p.returncode == 0, f"rc {p.returncode}\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}"
    return p


@pytest.fixture(scope="module")
def ewt(tmp_path_factory):
    """300 sentences of UD English EWT dev: their tokens (one line each) and the gold CoNLL-U to look up."""
    from fairseq_syntax.data.trees.conllu import read_conllu

    gold = require_shared(*EWT_DEV)
    d = tmp_path_factory.mktemp("ewt")
    sents = []
    for s in read_conllu(gold):
        if len(sents) == 300:
            break
        sents.append(s)
    tok = d / "dev.tok"
    tok.write_text("".join(" ".join(s.tokens) + "\n" for s in sents), encoding="utf-8")
    raw = d / "dev.txt"
    raw.write_text("".join(next(c for c in s.comments if c.startswith("# text = "))[9:] + "\n"
                           for s in sents[:40]), encoding="utf-8")
    return dict(gold=gold, tok=str(tok), raw=str(raw), dir=d)


def _parse_cmd(ewt, out, *extra):
    return preprocess("parse") + ["-i", ewt["tok"], "-o", str(out), "--backend", "conllu", "--model", ewt["gold"],
                                  "--batch-size", "16", "--chunk-size", "64", "--no-progress", *extra]


@pytest.fixture(scope="module")
def reference(ewt):
    """The uninterrupted single-process parse."""
    out = ewt["dir"] / "reference.conllu"
    _ok(_run(_parse_cmd(ewt, out)))
    return out.read_bytes()


def test_parse_with_two_workers_equals_one_and_the_parses(ewt, reference, tmp_path):
    from fairseq_syntax.data.trees.conllu import read_conllu

    out = tmp_path / "w2.conllu"
    p = _ok(_run(_parse_cmd(ewt, out, "--workers", "2")))
    assert out.read_bytes() == reference
    assert "300 sentences ->" in p.stdout
    got = list(read_conllu(str(out)))
    gold = list(read_conllu(ewt["gold"]))[:300]
    assert [s.heads for s in got] == [s.heads for s in gold] and [s.tokens for s in got] == [s.tokens for s in gold]
    # only the completion record stays beside the output
    assert os.listdir(str(out) + ".chunks") == ["done.json"]
    again = _ok(_run(_parse_cmd(ewt, out, "--workers", "2")))  # finished work is never redone
    assert "parsed 0 sentences (300 reused" in again.stdout and out.read_bytes() == reference


def test_udpipe_two_workers_equal_one(ewt, tmp_path):
    pytest.importorskip("ufal.udpipe")
    model = require_shared("models", "en_ewt_udpipe_small.udpipe")
    outs = []
    for w in (1, 2):
        out = tmp_path / f"u{w}.conllu"
        _ok(_run(preprocess("parse") + ["-i", ewt["raw"], "-o", str(out), "--backend", "udpipe", "--model", model,
                                        "--batch-size", "8", "--chunk-size", "8", "--workers", str(w),
                                        "--no-progress"]))
        outs.append(out.read_bytes())
    assert outs[0] == outs[1] and outs[0].count(b"\n\n") == 40


def test_shards_assembled_equal_the_unsharded_parse(ewt, reference, tmp_path):
    out = tmp_path / "sharded.conllu"
    done = 0
    for i in range(3):
        p = _ok(_run(_parse_cmd(ewt, out, "--shard", f"{i}/3")))
        assert f"shard {i}/3" in p.stdout
        done += int(p.stdout.split("parsed ")[1].split()[0])
        assert not out.exists()  # a shard never assembles: others may still run
    assert done == 300  # the shards cover every line once (5 chunks of 64 lines: 1 + 2 + 2 chunks)
    p = _ok(_run(_parse_cmd(ewt, out)))
    assert "parsed 0 sentences (300 reused" in p.stdout
    assert out.read_bytes() == reference


def test_killed_parse_resumes_to_the_same_output(ewt, reference, tmp_path):
    out = tmp_path / "killed.conllu"
    p = _run([*FAULTS, "kill-after-chunks=2", "--", *_parse_cmd(ewt, out)[1:]])
    assert p.returncode == -signal.SIGKILL
    assert not out.exists()
    chunks = sorted(os.listdir(str(out) + ".chunks"))
    assert chunks[:4] == ["00000000.json", "00000000.out", "00000001.json", "00000001.out"]
    p = _ok(_run(_parse_cmd(ewt, out)))
    assert "parsed 172 sentences (128 reused" in p.stdout  # chunks 0 and 1 were not parsed again
    assert out.read_bytes() == reference


def test_truncated_or_corrupt_chunks_are_detected_and_redone(ewt, reference, tmp_path, caplog):
    from fairseq_syntax.preparation.parse_files import parse_chunked

    out = str(tmp_path / "c.conllu")
    spec = ("conllu", {"path": ewt["gold"]})
    res = parse_chunked(ewt["tok"], out, spec=spec, batch_size=16, chunk_size=64, shard=(0, 2), progress=False)
    assert not res.complete and res.processed == 128  # chunks 0 and 1
    chunks = out + ".chunks"
    with open(os.path.join(chunks, "00000000.out"), "r+b") as f:  # truncated (a crash mid-copy, a full disk)
        f.truncate(100)
    data = bytearray(open(os.path.join(chunks, "00000001.out"), "rb").read())
    data[50] ^= 1  # one flipped bit, same size
    open(os.path.join(chunks, "00000001.out"), "wb").write(bytes(data))
    res = parse_chunked(ewt["tok"], out, spec=spec, batch_size=16, chunk_size=64, progress=False)
    assert res.complete and res.reused == 0 and res.processed == 300
    assert open(out, "rb").read() == reference
    assert sum("corrupt or truncated" in r.getMessage() for r in caplog.records) == 2
    # an unreadable manifest, a manifest for other input, and a finished output changed afterwards
    os.remove(os.path.join(chunks, "done.json"))
    parse_chunked(ewt["tok"], out, spec=spec, batch_size=16, chunk_size=64, shard=(0, 2), progress=False)
    open(os.path.join(chunks, "00000000.json"), "w").write('{"key": ')
    m = json.load(open(os.path.join(chunks, "00000001.json")))
    m["input_sha1"] = "0" * 40
    json.dump(m, open(os.path.join(chunks, "00000001.json"), "w"))
    res = parse_chunked(ewt["tok"], out, spec=spec, batch_size=16, chunk_size=64, progress=False)
    assert res.reused == 0 and open(out, "rb").read() == reference
    open(out, "ab").write(b"x")
    res = parse_chunked(ewt["tok"], out, spec=spec, batch_size=16, chunk_size=64, progress=False)
    assert res.processed == 300 and open(out, "rb").read() == reference


def test_chunks_of_another_job_are_not_reused(ewt, tmp_path):
    """Options are part of the job key: a parse with another model redoes every chunk."""
    from fairseq_syntax.preparation.parse_files import parse_chunked

    out = str(tmp_path / "k.conllu")
    parse_chunked(ewt["tok"], out, spec=("conllu", {"path": ewt["gold"]}), chunk_size=64, shard=(0, 2),
                  progress=False)
    res = parse_chunked(ewt["tok"], out, spec=("conllu", {"path": ewt["gold"], "x": 1}), chunk_size=64,
                        progress=False)
    assert res.reused == 0 and res.processed == 300


def test_a_failed_chunk_leaves_no_pool_thread_behind():
    """A worker's error reaches the caller only after the pool's manager thread has ended: left running, it
    raced the interpreter's exit hook on its wakeup pipe and the run printed a second traceback ("Bad file
    descriptor") after its own error (seen once in the test below under the suite's load)."""
    import threading

    from fairseq_syntax.preparation.chunked import _call, worker_pool

    before = set(threading.enumerate())
    with pytest.raises(TypeError):
        with worker_pool(2, None, ()) as pool:
            futures = [pool.submit(_call, pow, i, [], ()) for i in range(4)]  # pow(None, i, []): TypeError
            for f in futures:
                f.result()
    left = [t.name for t in threading.enumerate() if t not in before and t.is_alive()]
    assert not left, left


def test_parse_errors_name_file_and_line_before_parsing(ewt, tmp_path):
    bad = tmp_path / "bad.tok"
    lines = open(ewt["tok"], encoding="utf-8").read().splitlines()
    bad.write_text("\n".join(lines[:70] + ["", *lines[70:80]]) + "\n", encoding="utf-8")
    p = _run(_parse_cmd(dict(ewt, tok=str(bad)), tmp_path / "o.conllu", "--workers", "2"))
    assert p.returncode == 1 and f"{bad}:71: empty line" in p.stderr
    assert not os.path.exists(tmp_path / "o.conllu.chunks")  # checked before anything was parsed
    bad.write_text("\n".join(lines[:70] + ["no such sentence here"]) + "\n", encoding="utf-8")
    p = _run(_parse_cmd(dict(ewt, tok=str(bad)), tmp_path / "o.conllu", "--workers", "2"))
    assert p.returncode == 1 and "no sentence with the tokens of the input 'no such sentence here'" in p.stderr
    assert "Traceback" not in p.stderr  # the worker's error reaches the parent intact


# --- language filter and BPE: the functions prepare runs, in a subprocess that is killed ----------------------
FILTER = """
import sys
from fairseq_syntax.preparation.pair_selection import language_keep_file
res = language_keep_file(sys.argv[1], sys.argv[2], sys.argv[3], ("en", "de"), "langdetect",
                         workers=int(sys.argv[4]), chunk_size=16)
print("reused", res.reused, "processed", res.processed)
"""


@pytest.fixture(scope="module")
def pud_pairs(tmp_path_factory):
    from fairseq_syntax.data.trees.conllu import read_conllu

    def text(lang, name):
        path = require_shared("data", f"UD_{name}-PUD", f"{lang}_pud-ud-test.conllu")
        return [next(c for c in s.comments if c.startswith("# text = "))[9:] for s in read_conllu(path)][:70]

    en, de = text("en", "English"), text("de", "German")
    de[5], de[40] = en[5], en[40]  # two pairs in the wrong language
    d = tmp_path_factory.mktemp("pud")
    (d / "a.en").write_text("\n".join(en) + "\n", encoding="utf-8")
    (d / "a.de").write_text("\n".join(de) + "\n", encoding="utf-8")
    return str(d / "a.en"), str(d / "a.de")


def test_language_filter_workers_kill_and_resume(pud_pairs, tmp_path):
    pytest.importorskip("langdetect")  # langid goes through the same code; langdetect starts faster
    from fairseq_syntax.preparation.pair_filter import read_mask

    ref = tmp_path / "ref.mask"
    _ok(_run([sys.executable, "-c", FILTER, *pud_pairs, str(ref), "1"]))
    keep = read_mask(str(ref))
    assert len(keep) == 70 and not keep[5] and not keep[40] and sum(keep) >= 66
    w2 = tmp_path / "w2.mask"
    _ok(_run([sys.executable, "-c", FILTER, *pud_pairs, str(w2), "2"]))
    assert w2.read_bytes() == ref.read_bytes()
    killed = tmp_path / "killed.mask"
    p = _run([*FAULTS, "kill-after-chunks=1", "--", "-c", FILTER, *pud_pairs, str(killed), "1"])
    assert p.returncode == -signal.SIGKILL and not killed.exists()
    p = _ok(_run([sys.executable, "-c", FILTER, *pud_pairs, str(killed), "2"]))
    assert "reused 16 processed 54" in p.stdout
    assert killed.read_bytes() == ref.read_bytes()


BPE = """
import sys
from fairseq_syntax.preparation.bpe import apply_bpe_file
res = apply_bpe_file(sys.argv[1], sys.argv[2], sys.argv[3], workers=int(sys.argv[4]), chunk_size=50,
                     progress=False)
print("reused", res.reused, "processed", res.processed)
"""


def test_bpe_apply_workers_kill_and_resume(ewt, tmp_path):
    from subword_nmt.apply_bpe import BPE as SubwordBPE
    from subword_nmt.learn_bpe import learn_bpe

    codes = tmp_path / "codes"
    with open(ewt["tok"], encoding="utf-8") as fin, open(codes, "w", encoding="utf-8") as fout:
        learn_bpe(fin, fout, 200, min_frequency=2)
    with open(codes, encoding="utf-8") as fc:
        bpe = SubwordBPE(fc)
    expected = "".join(bpe.process_line(line.strip()) + "\n" for line in open(ewt["tok"], encoding="utf-8"))
    assert "@@ " in expected
    for w in (1, 2):
        out = tmp_path / f"w{w}.bpe"
        _ok(_run([sys.executable, "-c", BPE, str(codes), ewt["tok"], str(out), str(w)]))
        assert out.read_text(encoding="utf-8") == expected
    killed = tmp_path / "killed.bpe"
    p = _run([*FAULTS, "kill-after-chunks=3", "--", "-c", BPE, str(codes), ewt["tok"], str(killed), "1"])
    assert p.returncode == -signal.SIGKILL and not killed.exists()
    p = _ok(_run([sys.executable, "-c", BPE, str(codes), ewt["tok"], str(killed), "1"]))
    assert "reused 150 processed 150" in p.stdout
    assert killed.read_text(encoding="utf-8") == expected


# --- bounded memory: the streaming writer writes what the in-memory corpus wrote ------------------------------
def test_streaming_align_binarize_writes_the_same_files(tmp_path, monkeypatch):
    import random

    from fairseq_syntax.data.alignment.binarize import align_and_binarize, binarize_corpus
    from fairseq_syntax.data.alignment import syntax_io
    from fairseq_syntax.data.trees.conllu import write_conllu
    from fairseq_syntax.data.alignment.subword_align import align_corpus
    from fairseq_syntax.preparation.corpora.synthetic import SyntheticLanguagePair

    pair, rng = SyntheticLanguagePair(3), random.Random(3)
    sents = [pair.sample(rng)[0] for _ in range(120)]
    conllu, bpe = tmp_path / "x.conllu", tmp_path / "x.bpe"
    with open(conllu, "w", encoding="utf-8") as f:
        write_conllu(sents, f)
    bpe.write_text("".join(" ".join(w[:2] + "@@ " + w[2:] if len(w) > 4 else w for w in s.words) + "\n"
                           for s in sents), encoding="utf-8")
    monkeypatch.setattr(syntax_io.StreamingSyntaxWriter, "FLUSH", 37)  # many flushes
    for split in ("train", "valid"):  # valid reuses train's label dictionary
        corpus = align_corpus(str(conllu), str(bpe), progress=False)
        corpus.write_text(str(tmp_path / f"mem.{split}"))
        binarize_corpus(corpus, str(tmp_path / "mem"), split, "src", "tgt", "src")
        align_and_binarize(str(conllu), str(bpe), str(tmp_path / "stream"), split, "src", "tgt", "src",
                           text_prefix=str(tmp_path / f"stream.{split}"), progress=False)
        for f in ("words", "heads", "labels"):
            assert (tmp_path / f"mem.{split}.{f}").read_bytes() == (tmp_path / f"stream.{split}.{f}").read_bytes()
    for name in sorted(os.listdir(tmp_path / "mem")):
        assert (tmp_path / "mem" / name).read_bytes() == (tmp_path / "stream" / name).read_bytes(), name
    assert sorted(os.listdir(tmp_path / "mem")) == sorted(os.listdir(tmp_path / "stream"))


@pytest.mark.slow  # three prepares, each loading UDPipe
def test_shards_parse_the_text_the_assembling_run_parses(pud_pairs, tmp_path):
    """prepare --shard with --normalize-source moses: the shards parse the Moses-normalised text, as the run
    without --shard does, so that it finds their chunks (before, the shards parsed the raw text, PUD's curly
    quotes and all, and the last run parsed everything again, exit 0)."""
    pytest.importorskip("ufal.udpipe")
    model = require_shared("models", "en_ewt_udpipe_small.udpipe")
    en, de = pud_pairs
    for split in ("train", "valid", "test"):  # the same 70 pairs for each split: what is checked is train's
        shutil.copy(en, tmp_path / f"{split}.en")
        shutil.copy(de, tmp_path / f"{split}.de")
    work = tmp_path / "work"

    def prepare(*extra):  # forked from the test worker's fork server (tests/forkserver.py): its own process
        splits = (a for s in ("train", "valid", "test") for a in (f"--{s}pref", str(tmp_path / s)))
        return _ok(_run([forkserver.command("python"), os.path.join(ROOT, "preprocess", "prepare.py"), "-s", "en",
                         "-t", "de", *splits, "--destdir", str(tmp_path / "bin"), "--workdir", str(work),
                         "--syntax", "source", "--parser-source", "udpipe", "--parser-model-source", model,
                         "--normalize-source", "moses", "--bpe-merges", "100", "--chunk-size", "2000", "--no-progress",
                         *extra], **forkserver.environment()))

    for i in range(2):
        prepare("--shard", f"{i}/2")
    chunks = work / "train.en.conllu.chunks"
    parsed = {json.load(open(p))["input_sha1"] for p in chunks.glob("[0-9]*.json")}
    assert parsed
    prepare()
    assert set(json.load(open(chunks / "done.json"))["chunks"]) == parsed
