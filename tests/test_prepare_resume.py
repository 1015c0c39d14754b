"""prepare killed at every write boundary (fairseq_syntax/durable_files.py), then run again with the same options
and with other ones: byte for byte the data-bin of a clean run of the options given; the BPE cache cannot
hand a run codes learned with other settings; one prepare at a time per folder, a stale lock taken over.

The runs are forked from this process (the plugin imported once: a tiny prepare takes about 0.3 s), and a run
is killed with SIGKILL at its N-th durable write (tests/faults.py, an observer of the write boundaries)."""
import json
import os
import signal
import socket
import subprocess
import sys

import faults
import pytest

from helpers import preprocess, run
from test_failures import _differences, assert_one_line

OPTIONS_A = ["--bpe-merges", "60"]
OPTIONS_B = ["--bpe-merges", "40", "--overwrite"]


def _args(corpus, dest, extra):
    return ["-s", "src", "-t", "tgt", "--trainpref", str(corpus / "train"), "--validpref", str(corpus / "valid"),
            "--destdir", str(dest), "--no-progress", *extra]


def _forked(argv, fault=None, stop=False):
    """Run prepare in a forked child, ``fault`` (a function of tests/faults.py) called there first; (pid, wait
    status) once it ended, or with ``stop`` the pid once it has stopped itself."""
    import logging

    from fairseq_syntax import durable_files
    from fairseq_syntax.cli.prepare import get_parser
    from fairseq_syntax.preparation.prepare import prepare

    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        code = 1
        try:
            durable_files.boundary_observers.clear()
            if fault is not None:
                fault()
            logging.disable(logging.WARNING)
            prepare(get_parser().parse_args(argv))
            code = 0
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, os.WUNTRACED if stop else 0)
    return pid, status


def _ok(argv, fault=None):
    _, status = _forked(argv, fault)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, status


def _killed_at(argv, n):
    _, status = _forked(argv, lambda: faults.kill_at_boundary(n))
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL, (n, status)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """A tiny synthetic corpus with gold parses (train and valid), the clean data-bins of options A and B, and
    the write boundaries of a run of A (paths, in order)."""
    d = tmp_path_factory.mktemp("tiny")
    run(preprocess("synth") + ["-o", str(d / "c"), "--train", "40", "--valid", "8", "--test", "1", "--seed", "6"])
    _ok(_args(d / "c", d / "clean_a", OPTIONS_A))
    _ok(_args(d / "c", d / "clean_b", OPTIONS_B))
    log = d / "writes.log"
    _ok(_args(d / "c", d / "logged", OPTIONS_A), lambda: faults.log_boundaries(str(log)))
    writes = [line.split("\t", 1)[1] for line in log.read_text().splitlines()]
    return d, writes


def test_every_write_boundary_is_logged_once_per_durable_file(tiny):
    d, writes = tiny
    names = [os.path.relpath(w, d / "logged") for w in writes]
    assert names[0] == ".prepare-unfinished" and names[-1] == "preparation.json"
    for expected in ("work/train.tok.src", "work/bpe.codes.joint", "work/bpe.codes.joint.done",
                     "work/train.bpe.src.chunks/00000000.out", "work/train.bpe.src.chunks/00000000.json",
                     "work/train.bpe.src", "work/train.bpe.src.chunks/done.json", "train.src-tgt.src.heads.bin",
                     "bpe.codes"):
        assert expected in names, expected
    assert names.index("work/bpe.codes.joint") < names.index("work/bpe.codes.joint.done")  # the stamp after


GROUPS = 4


# a group is 4 s of kills and reruns: the first in the quick tier, the others marked slow
@pytest.mark.parametrize("group", [g if g == 0 else pytest.param(g, marks=pytest.mark.slow) for g in range(GROUPS)])
def test_killed_at_each_write_boundary_then_rerun_is_a_clean_run(tiny, tmp_path, group):
    """For every boundary N (this group: N = group+1, group+1+GROUPS, ...): a run of A killed right after its
    N-th durable write, then A again (it resumes) equals the clean A; killed the same way, then B (other BPE
    settings, --overwrite) equals the clean B."""
    d, writes = tiny
    for n in range(group + 1, len(writes) + 1, GROUPS):
        for again, clean in ((OPTIONS_A, "clean_a"), (OPTIONS_B, "clean_b")):
            dest = tmp_path / f"n{n}-{clean}"
            _killed_at(_args(d / "c", dest, OPTIONS_A), n)
            _ok(_args(d / "c", dest, again))
            assert _differences(d / clean, dest) == [], (n, writes[n - 1], again)
            assert not (dest / ".prepare-unfinished").exists() and not (dest / ".prepare.lock").exists()


def test_codes_of_a_killed_run_with_other_merges_are_not_reused(tiny, tmp_path):
    """The reported case: a data-bin made with A; an --overwrite run with B killed after it replaced the BPE codes
    and before it stamped them; then A again (--overwrite): the codes are learned again, not reused from the
    killed run (before the fix the old stamp, which held no digest of the codes, vouched for them)."""
    d, writes = tiny
    dest = tmp_path / "bin"
    _ok(_args(d / "c", dest, OPTIONS_A))
    log = tmp_path / "b.log"
    _ok(_args(d / "c", tmp_path / "probe", OPTIONS_B), lambda: faults.log_boundaries(str(log)))
    codes_write = next(i for i, line in enumerate(log.read_text().splitlines(), 1)
                       if line.endswith("work/bpe.codes.joint"))
    _killed_at(_args(d / "c", dest, OPTIONS_B), codes_write)  # B's codes in place, A's stamp (if any) beside
    _ok(_args(d / "c", dest, OPTIONS_A + ["--overwrite"]))
    assert _differences(d / "clean_a", dest) == []  # before the fix: the dictionaries and token files differed


def test_one_prepare_at_a_time_and_a_stale_lock_is_taken_over(tiny, tmp_path):
    """A second prepare into a folder in use stops with one line naming the folder and the holder's pid,
    changing nothing; once the holder is killed (its lock left behind), the next run takes the lock over
    with a line saying so and finishes."""
    d, _ = tiny
    dest = tmp_path / "bin"
    argv = _args(d / "c", dest, OPTIONS_A)
    holder, status = _forked(argv, lambda: faults.stop_at_boundary("work/bpe.codes.joint"), stop=True)
    try:
        assert os.WIFSTOPPED(status)
        before = sorted(os.listdir(dest))
        second = run(preprocess("prepare") + argv + ["--overwrite"], check=False)
        line = assert_one_line(second, dest, f"pid {holder}")
        assert "in use by another prepare" in line
        assert sorted(os.listdir(dest)) == before
    finally:
        os.kill(holder, signal.SIGKILL)
        os.waitpid(holder, 0)
    again = run(preprocess("prepare") + argv, check=False)
    assert again.returncode == 0, again.stderr[-2000:]
    assert f"taking over the lock of prepare pid {holder}" in again.stderr
    assert _differences(d / "clean_a", dest) == []


def test_two_runs_finding_a_dead_runs_lock_never_both_take_it(tmp_path):
    """A lock left by a killed run, found by several runs at the same moment (two recipes sharing a data-bin):
    exactly one takes it over, the others are refused, every time (taking over by removing the file and
    creating another let two runs hold it: the second removed the first's new lock)."""
    import threading

    from fairseq_syntax.errors import SyntaxDataError
    from fairseq_syntax.preparation import folder_lock

    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    for attempt in range(20):
        folder = tmp_path / f"bin{attempt}"
        folder.mkdir()
        (folder / folder_lock.LOCK_FILE).write_text(json.dumps(
            {"pid": dead.pid, "host": socket.gethostname(), "process_start": "1", "started": "earlier"}))
        barrier, got, refused = threading.Barrier(6), [], []

        def take():
            barrier.wait()
            try:
                got.append(folder_lock.acquire(str(folder), "test"))
            except SyntaxDataError as e:
                refused.append(str(e))

        threads = [threading.Thread(target=take) for _ in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert len(got) == 1 and len(refused) == 5, (attempt, got, refused)
        assert all("in use by another prepare" in r for r in refused)
        folder_lock.release(got[0])
        assert not (folder / folder_lock.LOCK_FILE).exists()
        again = folder_lock.acquire(str(folder), "test")  # released: free for the next run
        folder_lock.release(again)


def test_a_run_that_locks_a_released_lock_file_tries_again(tmp_path, monkeypatch):
    """Between a run's open of the lock file and its flock, the holder releases (removing the file) and a third
    run takes a new file: the run that then gets the flock of the removed file must see that the path is
    another file now, and be refused by the third run's lock, not hold a lock of its own."""
    from fairseq_syntax.errors import SyntaxDataError
    from fairseq_syntax.preparation import folder_lock

    holder = folder_lock.acquire(str(tmp_path), "holder")
    real_flock, third = folder_lock.fcntl.flock, []

    def flock(fd, op):
        if not third:  # the run under test, between its open and its flock
            third.append(None)
            folder_lock.release(holder)
            third[0] = folder_lock.acquire(str(tmp_path), "third")
        return real_flock(fd, op)

    monkeypatch.setattr(folder_lock.fcntl, "flock", flock)
    with pytest.raises(SyntaxDataError, match="in use by another prepare"):
        folder_lock.acquire(str(tmp_path), "under test")
    monkeypatch.setattr(folder_lock.fcntl, "flock", real_flock)
    folder_lock.release(third[0])
    assert not (tmp_path / folder_lock.LOCK_FILE).exists()


def test_a_forked_child_does_not_keep_the_lock_and_a_cut_short_file_is_taken_over(tmp_path):
    """The holder's forked children (fairseq-preprocess's workers) close their copy of the lock file: with the
    holder gone, the folder is free even while a child lives. A lock file cut short by a kill (no holder in
    it) is taken over."""
    from fairseq_syntax.preparation import folder_lock

    read, write = os.pipe()
    holder = os.fork()
    if holder == 0:  # the holder: takes the lock, forks a child that outlives it, and dies without releasing
        folder_lock.acquire(str(tmp_path), "holder")
        if os.fork() == 0:
            os.read(read, 1)  # lives until the test writes
            os._exit(0)
        os._exit(0)
    os.waitpid(holder, 0)
    try:
        path = folder_lock.acquire(str(tmp_path), "next")  # the holder's child still lives
        folder_lock.release(path)
    finally:
        os.write(write, b"x")
    (tmp_path / folder_lock.LOCK_FILE).write_text('{"pid": 12')
    folder_lock.release(folder_lock.acquire(str(tmp_path), "after a cut-short file"))


def test_parses_are_made_again_when_the_parser_model_at_the_same_path_changes(tiny, tmp_path):
    """A parser model replaced at the same path (a new UDPipe file, an upgraded spaCy package, stanza's models
    downloaded again) makes other trees: prepare --overwrite parses again and gives the clean run's data-bin of
    the new model (before: the parse chunks, keyed by the path alone, were reused: 'reused from finished
    chunks, 0 parsed now', the old trees under the new model's record, exit 0)."""
    pytest.importorskip("ufal.udpipe")
    from conftest import require_shared

    en = require_shared("models", "en_ewt_udpipe_small.udpipe")
    de = require_shared("models", "de_udpipe_small.udpipe")
    d, _ = tiny
    raw = tmp_path / "raw"  # the corpus's text without its gold parses: the source side is parsed
    raw.mkdir()
    for name in ("train.src", "train.tgt", "valid.src", "valid.tgt"):
        (raw / name).write_bytes((d / "c" / name).read_bytes())
    model = tmp_path / "model.udpipe"
    options = ["--bpe-merges", "60", "--syntax", "source", "--parser-source", "udpipe", "--parser-model-source",
               str(model)]
    dest = tmp_path / "bin"
    model.write_bytes(open(en, "rb").read())
    _ok(_args(raw, dest, options))
    english = (dest / "train.src-tgt.src.heads.bin").read_bytes()
    model.write_bytes(open(de, "rb").read())  # another model, the same path
    clean = tmp_path / "clean"
    _ok(_args(raw, clean, options))
    assert (clean / "train.src-tgt.src.heads.bin").read_bytes() != english  # the models do parse differently
    _ok(_args(raw, dest, options + ["--overwrite"]))
    assert _differences(clean, dest) == []


def test_text_only_parses_again_when_the_parser_model_at_the_same_path_changes(tiny, tmp_path):
    """The same for prepare --text-only (the recipes' WORK/text): its parse of a split is made again, not
    vouched for by the stamp of the old model's parse."""
    pytest.importorskip("ufal.udpipe")
    from conftest import require_shared

    en = require_shared("models", "en_ewt_udpipe_small.udpipe")
    de = require_shared("models", "de_udpipe_small.udpipe")
    d, _ = tiny
    raw = tmp_path / "raw"
    raw.mkdir()
    for name in ("train.src", "train.tgt", "valid.src", "valid.tgt"):
        (raw / name).write_bytes((d / "c" / name).read_bytes())
    model = tmp_path / "model.udpipe"
    argv = ["--text-only", "-s", "src", "-t", "tgt", "--trainpref", str(raw / "train"), "--validpref",
            str(raw / "valid"), "--workdir", str(tmp_path / "text"), "--syntax", "source", "--parser-source",
            "udpipe", "--parser-model-source", str(model), "--tokenizer-target", "given", "--no-progress"]
    model.write_bytes(open(en, "rb").read())
    _ok(argv)
    english = (tmp_path / "text" / "train.src.conllu").read_text(encoding="utf-8")
    model.write_bytes(open(de, "rb").read())
    _ok(argv)
    german = (tmp_path / "text" / "train.src.conllu").read_text(encoding="utf-8")
    assert german != english
    _ok([a if a != str(tmp_path / "text") else str(tmp_path / "clean") for a in argv])
    assert (tmp_path / "clean" / "train.src.conllu").read_text(encoding="utf-8") == german


def test_a_data_bin_rebuilt_for_another_language_pair_keeps_nothing_of_the_old_one(tiny, tmp_path):
    """--overwrite into a data-bin of another pair (src-tgt, then src-oth) leaves exactly the clean src-oth
    data-bin: no dict.tgt.txt or src-tgt datasets beside a src dictionary they no longer match (before: they
    stayed, and read with the new dict.src.txt decoded into other words); without --overwrite, a data-bin of
    another pair is refused as one of this pair is."""
    d, _ = tiny
    other = tmp_path / "other"
    other.mkdir()
    for split in ("train", "valid"):
        for ext in ("src", "src.conllu"):
            (other / f"{split}.{ext}").write_bytes((d / "c" / f"{split}.{ext}").read_bytes())
        for ext in ("", ".conllu"):  # the target side under another language code, in reverse line order
            lines = (d / "c" / f"{split}.tgt{ext}").read_text(encoding="utf-8")
            (other / f"{split}.oth{ext}").write_text(lines, encoding="utf-8")
    argv = ["-s", "src", "-t", "oth", "--trainpref", str(other / "train"), "--validpref", str(other / "valid"),
            "--no-progress", "--bpe-merges", "50"]
    _ok(argv + ["--destdir", str(tmp_path / "clean")])
    dest = tmp_path / "bin"
    _ok(_args(d / "c", dest, OPTIONS_A))
    from fairseq_syntax.cli.prepare import get_parser
    from fairseq_syntax.errors import OptionError
    from fairseq_syntax.preparation.prepare import prepare

    with pytest.raises(OptionError, match="already holds a data-bin"):
        prepare(get_parser().parse_args(argv + ["--destdir", str(dest)]))
    _ok(argv + ["--destdir", str(dest), "--overwrite"])
    assert _differences(tmp_path / "clean", dest) == []


@pytest.mark.parametrize("spelling", ["space", "equals"])
def test_overwrite_keeps_a_dictionary_given_to_the_run_in_either_spelling(tmp_path, spelling):
    """--overwrite removes every dictionary of the data-bin before, but one this run is given (--srcdict PATH or
    --srcdict=PATH in --preprocess-args): fairseq would then fail, and the user's file would be gone."""
    from fairseq_syntax.preparation.destdir import check_destdir
    from fairseq_syntax.preparation.options import PrepareOptions

    dest = tmp_path / "bin"
    dest.mkdir()
    for name in ("dict.joint.txt", "dict.de.txt", "train.en-de.en.bin", "train.en-de.en.idx"):
        (dest / name).write_text("x 1\n")
    given = f"--srcdict {dest / 'dict.joint.txt'}" if spelling == "space" else f"--srcdict={dest / 'dict.joint.txt'}"
    args = PrepareOptions(source_lang="en", target_lang="fr", trainpref=str(tmp_path / "train"),
                          preprocess_args=given, destdir=str(dest), overwrite=True)
    check_destdir(args, str(tmp_path / "work"))
    assert sorted(os.listdir(dest)) == ["dict.joint.txt"]


def test_temporary_names_differ_between_processes_of_the_same_pid_on_a_shared_folder(monkeypatch):
    """Two processes with one pid (on two hosts sharing a work folder, or in containers that number their
    processes alike) got the same temporary name for a file both write, and so wrote into one temporary file.
    The name now holds the host's name and random bits drawn once per process; within a process it is stable
    (a write names its temporary file again to rename it)."""
    from fairseq_syntax import durable_files

    monkeypatch.setattr(os, "getpid", lambda: 7)
    monkeypatch.setattr(socket, "gethostname", lambda: "node")
    monkeypatch.setattr(durable_files, "_process_tokens", {})
    first = durable_files.temporary_name("/shared/work/bpe.codes.joint")
    assert first == durable_files.temporary_name("/shared/work/bpe.codes.joint") and ".tmp.node.7." in first
    monkeypatch.setattr(durable_files, "_process_tokens", {})  # another process, the same pid and host name
    assert durable_files.temporary_name("/shared/work/bpe.codes.joint") != first
    monkeypatch.setattr(durable_files, "_process_tokens", {})
    monkeypatch.setattr(socket, "gethostname", lambda: "other")
    assert ".tmp.other.7." in durable_files.temporary_name("/shared/work/bpe.codes.joint")
