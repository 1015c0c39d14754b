"""Every expected failure is one line naming the file, a non-zero exit status and nothing half-written; every
rerun after a kill resumes (docs/design.md, "Errors"; docs/data.md, "Resuming").

One test (or one parameter) per case: a byte that is not UTF-8, a missing input or parser model, a --destdir
that is a file, prepare killed (its process group, at several steps; its pid alone), a data-bin that lacks
the syntax a model needs, a truncated index, an empty or truncated checkpoint, a BOM and CRLF line ends.
"""
import filecmp
import os
import shutil
import signal
import subprocess
import sys
import time

import pytest

from helpers import USER_DIR, env, generate_cmd, preprocess, run, tool, train_cmd

#: the runner that kills or stops a command at a chosen point
FAULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "faults.py")


def assert_one_line(p, *names, status=1):
    """Exit status, one ``error:`` line naming every one of names, no traceback."""
    assert p.returncode == status, (p.returncode, p.stderr[-3000:])
    errors = [line for line in p.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, p.stderr[-3000:]
    assert "Traceback" not in p.stderr, p.stderr[-3000:]
    for name in names:
        assert str(name) in errors[0], (name, errors[0])
    return errors[0]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """A small synthetic corpus with gold parses (text and CoNLL-U) and its BPE'd test source."""
    d = tmp_path_factory.mktemp("corpus")
    run(preprocess("synth") + ["-o", str(d), "--train", "200", "--valid", "20", "--test", "20", "--seed", "4"])
    return d


@pytest.fixture(scope="module")
def source_only_bin(corpus, tmp_path_factory):
    out = tmp_path_factory.mktemp("srconly") / "bin"
    run(preprocess("prepare") + ["-s", "src", "-t", "tgt", "--trainpref", str(corpus / "train"), "--validpref",
                                 str(corpus / "valid"), "--destdir", str(out), "--syntax", "source",
                                 "--bpe-merges", "100", "--no-progress"])
    return out


def latin1(path, line=b"caf\xe9 au lait\n", before=b""):
    path.write_bytes(before + line)
    return path


# --- text inputs: UTF-8, BOM, CRLF ----------------------------------------------------------------------
def test_not_utf8_prepare(corpus, tmp_path):
    raw = tmp_path / "train"
    (tmp_path / "train.tgt").write_text("a b\nc d\n", encoding="utf-8")
    latin1(tmp_path / "train.src", before=b"a b\n")
    p = run(preprocess("prepare") + ["-s", "src", "-t", "tgt", "--trainpref", str(raw), "--destdir",
                                     str(tmp_path / "bin"), "--syntax", "none", "--bpe-merges", "0",
                                     "--no-progress"], check=False)
    line = assert_one_line(p, f"{raw}.src:2", "not UTF-8", "column 4")
    assert "iconv" in line
    assert not (tmp_path / "bin" / "dict.src.txt").exists()


def test_not_utf8_parse(corpus, tmp_path):
    bad = latin1(tmp_path / "in.txt")
    out = tmp_path / "out.conllu"
    p = run([tool("fairseq-syntax-parse"), "-i", str(bad), "-o", str(out), "--backend", "conllu", "--model",
             str(corpus / "test.src.conllu"), "--pretokenized", "--no-progress"], check=False)
    assert_one_line(p, f"{bad}:1", "not UTF-8")
    assert not out.exists()


@pytest.mark.parametrize("which", ["conllu", "bpe"])
def test_not_utf8_align(corpus, tmp_path, which):
    conllu, bpe = tmp_path / "in.conllu", tmp_path / "in.bpe"
    shutil.copy(corpus / "test.src.conllu", conllu)
    shutil.copy(corpus / "test.src", bpe)
    bad = conllu if which == "conllu" else bpe
    data = bad.read_bytes().splitlines(keepends=True)
    bad.write_bytes(b"".join(data[:2]) + data[2].replace(b"e", b"\xe9", 1) + b"".join(data[3:]))
    p = run([tool("fairseq-syntax-align"), "--conllu", str(conllu), "--bpe", str(bpe), "-o", str(tmp_path / "al"),
             "--no-progress"], check=False)
    assert_one_line(p, f"{bad}:3", "not UTF-8")
    assert not [f for f in os.listdir(tmp_path) if f.startswith("al.")]


@pytest.mark.parametrize("which", ["hyp", "ref", "baseline"])
def test_not_utf8_evaluate(tmp_path, which):
    files = {k: tmp_path / k for k in ("hyp", "ref", "baseline")}
    for path in files.values():
        path.write_text("a cat sat\n", encoding="utf-8")
    latin1(files[which])
    p = run([tool("fairseq-syntax-evaluate"), "--hyp", str(files["hyp"]), "--ref", str(files["ref"]),
             "--baseline", str(files["baseline"]), "--json", str(tmp_path / "s.json")], check=False)
    assert_one_line(p, f"{files[which]}:1", "not UTF-8")
    assert not (tmp_path / "s.json").exists()


def test_a_carriage_return_inside_a_line_is_refused(corpus, tmp_path):
    bpe = tmp_path / "in.bpe"
    lines = (corpus / "test.src").read_text(encoding="utf-8").splitlines(keepends=True)
    bpe.write_text("".join(lines[:4]) + lines[4].replace(" ", "\r", 1) + "".join(lines[5:]), encoding="utf-8",
                   newline="")
    p = run([tool("fairseq-syntax-align"), "--conllu", str(corpus / "test.src.conllu"), "--bpe", str(bpe), "-o",
             str(tmp_path / "al"), "--no-progress"], check=False)
    assert_one_line(p, f"{bpe}:5", "carriage return")


def _bom_crlf(src, dst):
    dst.write_bytes(b"\xef\xbb\xbf" + src.read_bytes().replace(b"\n", b"\r\n"))
    return dst


def test_bom_and_crlf_are_accepted_by_align(corpus, tmp_path):
    """align reads a BOM and CRLF line ends in the BPE'd text and the CoNLL-U alike: the same output."""
    run([tool("fairseq-syntax-align"), "--conllu", str(corpus / "test.src.conllu"), "--bpe",
         str(corpus / "test.src"), "-o", str(tmp_path / "plain"), "--no-progress"])
    conllu = _bom_crlf(corpus / "test.src.conllu", tmp_path / "w.conllu")
    bpe = _bom_crlf(corpus / "test.src", tmp_path / "w.bpe")
    run([tool("fairseq-syntax-align"), "--conllu", str(conllu), "--bpe", str(bpe), "-o", str(tmp_path / "win"),
         "--no-progress"])
    for f in ("words", "heads", "labels"):
        assert (tmp_path / f"plain.{f}").read_bytes() == (tmp_path / f"win.{f}").read_bytes()


def test_bom_and_crlf_are_accepted_by_prepare_and_evaluate(corpus, tmp_path):
    win = tmp_path / "win"
    win.mkdir()
    for split in ("train", "valid"):
        for lang in ("src", "tgt"):
            _bom_crlf(corpus / f"{split}.{lang}", win / f"{split}.{lang}")
            _bom_crlf(corpus / f"{split}.{lang}.conllu", win / f"{split}.{lang}.conllu")
    outs = {}
    for name, d in (("plain", corpus), ("win", win)):
        outs[name] = tmp_path / f"bin-{name}"
        run(preprocess("prepare") + ["-s", "src", "-t", "tgt", "--trainpref", str(d / "train"), "--validpref",
                                     str(d / "valid"), "--destdir", str(outs[name]), "--bpe-merges", "100",
                                     "--no-progress"])
    assert _differences(outs["plain"], outs["win"]) == []
    ref = _bom_crlf(corpus / "valid.tgt", tmp_path / "ref.txt")
    plain = run([tool("fairseq-syntax-evaluate"), "--hyp", str(corpus / "valid.tgt"), "--ref",
                 str(corpus / "valid.tgt")]).stdout
    assert run([tool("fairseq-syntax-evaluate"), "--hyp", str(corpus / "valid.tgt"), "--ref", str(ref)]).stdout == plain


# --- missing files and models ---------------------------------------------------------------------------
@pytest.mark.parametrize("which", ["input", "model"])
def test_missing_parse_input_or_model(corpus, tmp_path, which):
    text = tmp_path / "in.txt"
    text.write_text((corpus / "test.src").read_text(encoding="utf-8"), encoding="utf-8")
    missing = tmp_path / ("nope.txt" if which == "input" else "nope.conllu")
    inp, model = (missing, corpus / "test.src.conllu") if which == "input" else (text, missing)
    p = run([tool("fairseq-syntax-parse"), "-i", str(inp), "-o", str(tmp_path / "o.conllu"), "--backend", "conllu",
             "--model", str(model), "--pretokenized", "--no-progress"], check=False)
    assert_one_line(p, missing, "no such file")
    assert not os.path.exists(tmp_path / "o.conllu.chunks")


def test_missing_udpipe_model_is_named_before_parsing(tmp_path):
    pytest.importorskip("ufal.udpipe")
    text = tmp_path / "in.txt"
    text.write_text("A sentence .\n", encoding="utf-8")
    p = run([tool("fairseq-syntax-parse"), "-i", str(text), "-o", str(tmp_path / "o.conllu"), "--backend", "udpipe",
             "--model", str(tmp_path / "en.udpipe"), "--no-progress"], check=False)
    assert_one_line(p, "en.udpipe", "no UDPipe model file")
    assert not os.path.exists(tmp_path / "o.conllu.chunks")


@pytest.mark.parametrize("which", ["conllu", "bpe"])
def test_missing_align_input(corpus, tmp_path, which):
    missing = tmp_path / "nope"
    conllu, bpe = (missing, corpus / "test.src") if which == "conllu" else (corpus / "test.src.conllu", missing)
    p = run([tool("fairseq-syntax-align"), "--conllu", str(conllu), "--bpe", str(bpe), "-o", str(tmp_path / "al"),
             "--no-progress"], check=False)
    assert_one_line(p, missing, "no such file")


@pytest.mark.parametrize("which", ["hyp", "ref", "baseline", "source"])
def test_missing_evaluate_input(tmp_path, which):
    files = {k: tmp_path / k for k in ("hyp", "ref", "baseline", "source")}
    for k, path in files.items():
        if k != which:
            path.write_text("a cat sat\n", encoding="utf-8")
    p = run([tool("fairseq-syntax-evaluate"), *[x for k, v in files.items() for x in (f"--{k}", str(v))]],
            check=False)
    assert_one_line(p, files[which], "no such file")


# --- prepare's folders, kills and resumes ---------------------------------------------------------------
def _prepare(corpus, dest, *extra):
    return preprocess("prepare") + ["-s", "src", "-t", "tgt", "--trainpref", str(corpus / "train"),
                                    "--validpref", str(corpus / "valid"), "--testpref", str(corpus / "test"),
                                    "--destdir", str(dest), "--bpe-merges", "200", "--no-progress", *extra]


@pytest.mark.parametrize("where", ["destdir", "workdir"])
def test_prepare_destdir_or_its_work_folder_is_a_file(corpus, tmp_path, where):
    dest = tmp_path / "bin"
    if where == "destdir":
        dest.write_text("")
        in_the_way = dest
    else:
        dest.mkdir()
        in_the_way = dest / "work"
        in_the_way.write_text("")
    p = run(_prepare(corpus, dest), check=False)
    assert_one_line(p, in_the_way, f"--{where} names a file, not a folder")
    assert in_the_way.read_text() == ""  # left as it was, nothing made beside it
    if where == "workdir":
        assert os.listdir(dest) == ["work"]


def test_prepare_names_a_missing_split_before_any_work(corpus, tmp_path):
    dest = tmp_path / "bin"
    p = run(preprocess("prepare") + ["-s", "src", "-t", "tgt", "--trainpref", str(corpus / "train"), "--validpref",
                                     str(tmp_path / "valid"), "--destdir", str(dest), "--no-progress"], check=False)
    assert_one_line(p, tmp_path / "valid.src", "valid split")
    assert not dest.exists()


def _differences(a, b):
    """Files of data-bin a and b that differ (the work folder and fairseq-preprocess's log left out)."""
    skip = {"work", "preprocess.log"}
    fa, fb = sorted(set(os.listdir(a)) - skip), sorted(set(os.listdir(b)) - skip)
    if fa != fb:
        return sorted(set(fa) ^ set(fb))
    return [f for f in fa if not filecmp.cmp(os.path.join(a, f), os.path.join(b, f), shallow=False)]


@pytest.fixture(scope="module")
def uninterrupted(corpus, tmp_path_factory):
    dest = tmp_path_factory.mktemp("ref") / "bin"
    run(_prepare(corpus, dest))
    return dest


def _state(pid):
    try:
        return open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return None


#: where prepare's process group is killed: while fairseq-preprocess binarizes (its dictionaries written: the
#: log line it writes then; no write boundary of ours), and stopped (tests/faults.py) as the second side's
#: alignment begins, the first side's trees binarized. Every write boundary is killed at, in a forked run, in
#: test_prepare_resume.py
KILL_AT = ["log:[src] Dictionary",
           "stop:fairseq_syntax.preparation.prepare:2:aligning the trees to the subwords and binarizing them"]


@pytest.mark.slow  # a killed prepare and its rerun: 7 s each
@pytest.mark.parametrize("where", KILL_AT)
def test_prepare_killed_then_the_same_command_resumes(corpus, uninterrupted, tmp_path, where):
    """SIGKILL of prepare's process group at a step; the data-bin is marked unfinished (training refuses it),
    and the same command again (no --overwrite) finishes it byte for byte as the uninterrupted run."""
    kind, step = where.split(":", 1)
    dest = tmp_path / "bin"
    cmd = _prepare(corpus, dest)
    faulty = [sys.executable, FAULTS, f"stop-at-log={step}", "--", *cmd[1:]] if kind == "stop" else cmd
    p = subprocess.Popen(faulty, stderr=subprocess.PIPE, text=True, env=env(), start_new_session=True)
    if kind == "log":
        for line in p.stderr:
            if step in line:
                os.killpg(p.pid, signal.SIGKILL)
                break
    else:
        end = time.time() + 120
        while _state(p.pid) not in ("T", None) and time.time() < end:
            time.sleep(0.02)
        os.killpg(p.pid, signal.SIGKILL)
    p.wait()
    p.stderr.close()
    assert p.returncode == -signal.SIGKILL
    assert (dest / ".prepare-unfinished").exists()
    refused = run(train_cmd(str(dest), str(tmp_path / "ck")), check=False)
    assert_one_line(refused, dest / ".prepare-unfinished", "interrupted prepare")
    again = run(cmd, process=True, check=False)
    assert again.returncode == 0, again.stderr[-3000:]
    assert "resuming" in again.stderr
    assert _differences(uninterrupted, dest) == []
    assert not (dest / ".prepare-unfinished").exists()


def test_an_unfinished_data_bin_of_other_options_needs_overwrite(corpus, uninterrupted, tmp_path):
    """The marker holds the killed run's options: a command with others is refused (its usage error), with
    --overwrite it builds its own data-bin, and the syntax datasets of a side it does not prepare are gone."""
    dest = tmp_path / "bin"
    shutil.copytree(uninterrupted, dest)
    (dest / ".prepare-unfinished").write_text('{"options": {}}\n')
    p = run(_prepare(corpus, dest, "--syntax", "source"), check=False)
    assert p.returncode == 2 and "left unfinished by a prepare with other options" in p.stderr
    run(_prepare(corpus, dest, "--syntax", "source", "--overwrite"))
    names = os.listdir(dest)
    assert any(".src.heads." in n for n in names) and not any(".tgt.heads." in n for n in names), names
    assert not (dest / ".prepare-unfinished").exists()


def test_a_rebuild_leaves_no_split_of_the_data_bin_before(corpus, uninterrupted, tmp_path):
    """--overwrite without --testpref: the data-bin before had a test split, and its token datasets, binarized
    with the old dictionary, must not stay beside the new one (a model would decode them into other words)."""
    dest = tmp_path / "bin"
    shutil.copytree(uninterrupted, dest)
    cmd = _prepare(corpus, dest, "--overwrite", "--bpe-merges", "150")
    i = cmd.index("--testpref")
    run(cmd[:i] + cmd[i + 2:])
    names = os.listdir(dest)
    assert any(n.startswith("valid.src-tgt.") for n in names)
    assert not [n for n in names if n.startswith("test.")], names
    # the same with both dictionaries given (--srcdict / --tgtdict, separate BPE: no dictionary of ours to find
    # in DESTDIR), from a data-bin with a test split
    dest2, dicts = tmp_path / "bin2", tmp_path / "dicts"
    run(_prepare(corpus, dest2, "--separate-bpe"))
    dicts.mkdir()
    for side in ("src", "tgt"):
        shutil.copy(dest2 / f"dict.{side}.txt", dicts / f"dict.{side}.txt")
    given = ["--separate-bpe", "--preprocess-args",
             f"--srcdict {dicts / 'dict.src.txt'} --tgtdict {dicts / 'dict.tgt.txt'}"]
    cmd = _prepare(corpus, dest2, *given)
    p = run(cmd[:i] + cmd[i + 2:], check=False)
    assert p.returncode == 2 and "already holds a data-bin" in p.stderr, p.stderr[-2000:]
    run(cmd[:i] + cmd[i + 2:] + ["--overwrite"])
    assert not [n for n in os.listdir(dest2) if n.startswith("test.")], os.listdir(dest2)


def test_a_finished_data_bin_still_needs_overwrite(corpus, uninterrupted, tmp_path):
    dest = tmp_path / "bin"
    shutil.copytree(uninterrupted, dest)
    p = run(_prepare(corpus, dest), check=False)
    assert p.returncode == 2 and "Traceback" not in p.stderr  # a usage error: argparse's usage line, then one line
    assert "error: --destdir" in p.stderr and "already holds a data-bin" in p.stderr and "--overwrite" in p.stderr
    assert _differences(uninterrupted, dest) == []


def _session(sid):
    """Live processes of session sid."""
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[3]) == sid and fields[0] not in ("Z", "X"):
            found.append(int(pid))
    return found


def _gone(sid, timeout=10.0):
    end = time.time() + timeout
    while _session(sid) and time.time() < end:
        time.sleep(0.05)
    return _session(sid)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
@pytest.mark.parametrize("context", ["fork", "spawn"])
def test_children_end_with_their_killed_parent(tmp_path, context):
    """A forked child of a process that called end_children_with_this_process, and a worker of the plugin's
    pool (spawned), are killed with their parent's SIGKILL; a forked child of a process that did not call it
    outlives its parent (the check can fail)."""
    code = """
import multiprocessing, os, sys, time
from fairseq_syntax.preparation.chunked import worker_pool
from fairseq_syntax.process_tree import end_children_with_this_process
if sys.argv[1] == "fork":
    if sys.argv[2] == "yes":
        end_children_with_this_process()
    if os.fork() == 0:
        time.sleep(60)
        os._exit(0)
else:
    pool_context = worker_pool(1, None, ())
    pool = pool_context.__enter__()
    pool.submit(time.sleep, 60)
time.sleep(1.5)
print("ready", flush=True)
time.sleep(60)
"""
    cases = [("yes", True), ("no", False)] if context == "fork" else [("yes", True)]
    for switch, dies in cases:
        p = subprocess.Popen([sys.executable, "-c", code, context, switch], stdout=subprocess.PIPE, text=True,
                             env=env(), start_new_session=True, cwd=os.path.dirname(USER_DIR))
        assert p.stdout.readline().strip() == "ready"
        assert len(_session(p.pid)) >= 2
        os.kill(p.pid, signal.SIGKILL)
        p.wait()
        p.stdout.close()
        left = _gone(p.pid, timeout=5.0 if dies else 1.0)
        try:
            assert (left == []) == dies, (switch, left)
        finally:
            for pid in left:
                os.kill(pid, signal.SIGKILL)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_parse_killed_by_its_pid_leaves_no_worker(corpus, tmp_path):
    """fairseq-syntax-parse --workers 2 killed by its own pid (SIGKILL, tests/faults.py: after its first
    committed chunk, its workers busy with the next): no process of its session is left."""
    lines = (corpus / "train.src").read_text(encoding="utf-8").splitlines() * 10
    text = tmp_path / "in.txt"
    text.write_text("\n".join(lines) + "\n", encoding="utf-8")
    p = subprocess.Popen([sys.executable, FAULTS, "kill-after-chunks=1", "--", tool("fairseq-syntax-parse"), "-i",
                          str(text), "-o", str(tmp_path / "o.conllu"),
                          "--backend", "conllu", "--model", str(corpus / "train.src.conllu"), "--pretokenized",
                          "--workers", "2", "--chunk-size", "256", "--batch-size", "256", "--no-progress"],
                         stderr=subprocess.DEVNULL, env=env(),
                         start_new_session=True)
    p.wait()
    assert p.returncode == -signal.SIGKILL
    left = _gone(p.pid)
    for pid in left:
        os.kill(pid, signal.SIGKILL)
    assert left == []


def test_prepare_ends_its_children_with_it(corpus, tmp_path):
    """prepare asks for its forked children (fairseq-preprocess's binarizer workers) to be killed with it
    (the mechanism: test_children_end_with_their_killed_parent)."""
    code = ("import sys, fairseq_syntax.process_tree as t; from fairseq_syntax.cli.prepare import main; "
            "main(sys.argv[1:]); print('registered', t._registered)")
    p = subprocess.run([sys.executable, "-c", code, *_prepare(corpus, tmp_path / "bin")[2:]], capture_output=True,
                       text=True, env=env(), cwd=os.path.dirname(USER_DIR))
    assert p.returncode == 0 and "registered True" in p.stdout, p.stderr[-2000:]


# --- training and decoding on a data-bin that cannot serve the model ------------------------------------
def _saved(save_dir):
    return sorted(os.listdir(save_dir)) if os.path.isdir(save_dir) else []


def test_a_model_on_a_data_bin_without_its_syntax(data_bin, tmp_path):
    """dep_rel reads the source depths: their files deleted, training stops with one line naming them, before a
    checkpoint is written."""
    dest = tmp_path / "bin"
    shutil.copytree(data_bin, dest)
    for f in os.listdir(dest):
        if f.startswith("train.") and ".src.heads." in f:
            os.remove(dest / f)
    save = tmp_path / "ck"
    p = run(train_cmd(str(dest), str(save), arch=["--arch", "transformer_dep_rel_tiny"]), check=False)
    assert_one_line(p, "train.src-tgt.src.heads", "transformer_dep_rel_tiny", "--syntax source")
    assert _saved(save) == []


def test_a_dbsa_model_on_a_source_only_data_bin(source_only_bin, tmp_path):
    """A decoder parse head needs the target trees: refused when the model is built, no crash.pt."""
    save = tmp_path / "ck"
    p = run(train_cmd(str(source_only_bin), str(save), arch=["--arch", "transformer_dbsa_tiny"],
                      extra=["--criterion", "label_smoothed_cross_entropy_with_dependency"]), check=False)
    assert_one_line(p, "train.src-tgt.tgt.{words,heads}", "transformer_dbsa_tiny", "--syntax source,target")
    assert _saved(save) == []


@pytest.mark.parametrize("process", [False, True], ids=["in-process", "console-script"])
def test_options_that_do_not_go_together_in_fairseq_train(data_bin, tmp_path, process):
    """A parse-head layer the model does not have: fairseq-train ends with one line naming the option and exit
    status 2 (argparse's usage status), before a checkpoint is written; the console script checks that CPython
    takes the exit status from the plugin's exception hook."""
    save = tmp_path / "ck"
    p = run(train_cmd(str(data_bin), str(save), arch=["--arch", "transformer_dbsa_tiny"],
                      extra=["--criterion", "label_smoothed_cross_entropy_with_dependency",
                             "--dbsa-encoder-layer", "7"]), check=False, process=process)
    assert_one_line(p, "--dbsa-encoder-layer 7", "the encoder has 2 layers", status=2)
    assert _saved(save) == []


@pytest.fixture(scope="module")
def checkpoint(data_bin, tmp_path_factory):
    save = tmp_path_factory.mktemp("ck")
    run(train_cmd(data_bin, str(save), updates=2))
    return save / "checkpoint_last.pt"


@pytest.mark.parametrize("what", ["idx", "heads.idx", "bin"])
def test_a_truncated_dataset_file(data_bin, checkpoint, tmp_path, what):
    """20 bytes cut off a token index, a syntax index or a token .bin: training and decoding name the file."""
    dest = tmp_path / "bin"
    shutil.copytree(data_bin, dest)
    cut = dest / f"valid.src-tgt.src.{what}"
    cut.write_bytes(cut.read_bytes()[:-20])
    save = tmp_path / "ck"
    p = run(train_cmd(str(dest), str(save)), check=False)
    assert_one_line(p, cut, "truncated or corrupt", "prepare the data-bin again")
    assert _saved(save) == []
    g = run(generate_cmd(str(dest), str(checkpoint), ["--gen-subset", "valid"]), check=False)
    assert_one_line(g, cut, "truncated or corrupt")


def test_a_syntax_model_on_fairseqs_translation_task_is_refused_when_built(data_bin, tmp_path):
    """dep_rel reads the source depths, which --task translation never collates: one line naming both, exit 2,
    before a trainer exists (before: the first step failed after fairseq's trainer had saved crash.pt)."""
    save = tmp_path / "ck"
    p = run(train_cmd(data_bin, str(save), arch=["--arch", "transformer_dep_rel_tiny"],
                      extra=["--task", "translation"]), check=False)
    assert_one_line(p, "--arch transformer_dep_rel_tiny", "--rel-dep-l", "--task translation",
                    "--task syntax_translation", status=2)
    assert _saved(save) == []


def test_the_plugins_decoding_commands_run_from_any_folder(data_bin, checkpoint, tmp_path):
    """fairseq-syntax-generate from a folder that is not the checkout's root: without --user-dir, and with the
    README's relative --user-dir fairseq_syntax (fairseq alone would look for ./fairseq_syntax and fail)."""
    decode = generate_cmd(data_bin, str(checkpoint), ["--gen-subset", "valid", "--beam", "1"])
    decode[0] = tool("fairseq-syntax-generate")
    at = decode.index("--user-dir")
    for user_dir in ([], ["--user-dir", "fairseq_syntax"]):
        p = run(decode[:at] + user_dir + decode[at + 2:], cwd=str(tmp_path))
        assert sum(line.startswith("H-") for line in p.stdout.splitlines()) == 30, p.stdout[-2000:]
    p = run(decode[:at] + ["--user-dir", "elsewhere/plugin"] + decode[at + 2:], cwd=str(tmp_path), check=False)
    assert_one_line(p, "--user-dir elsewhere/plugin: no such folder", status=2)


@pytest.mark.parametrize("command", ["parse", "prepare", "interactive"])
def test_a_parser_without_its_model_names_the_option_that_gives_it(corpus, data_bin, checkpoint, tmp_path, command):
    """UDPipe needs a model file: each command names its own option for it (fairseq-syntax-parse's --model,
    prepare's --parser-model-SIDE, decoding's --inference-parser-model), before anything is parsed."""
    for lang in ("src", "tgt"):  # raw text only: prepare parses it
        shutil.copy(corpus / f"train.{lang}", tmp_path / f"train.{lang}")
    if command == "parse":
        cmd, option = [tool("fairseq-syntax-parse"), "-i", str(tmp_path / "train.src"), "-o",
                       str(tmp_path / "o.conllu"), "--backend", "udpipe", "--no-progress"], "--model"
    elif command == "prepare":
        cmd, option = [tool("fairseq-syntax-prepare"), "-s", "src", "-t", "tgt", "--trainpref", str(tmp_path / "train"),
                       "--destdir", str(tmp_path / "bin"), "--parser", "udpipe", "--parser-model-target",
                       str(tmp_path / "en.udpipe"), "--no-progress"], "--parser-model-source"
    else:
        cmd, option = [tool("fairseq-interactive"), data_bin, "--user-dir", USER_DIR, "--task", "syntax_translation",
                       "--path", str(checkpoint), "--cpu", "--inference-parser", "udpipe"], "--inference-parser-model"
    p = run(cmd, check=False, input="a b\n")
    assert p.returncode == 2 and "Traceback" not in p.stderr, p.stderr[-3000:]
    assert p.stderr.rstrip().splitlines()[-1].endswith(f"the udpipe parser needs a .udpipe model file: give {option} "
                                                      "PATH"), p.stderr[-3000:]
    assert not os.path.exists(tmp_path / "o.conllu.chunks") and not os.path.exists(tmp_path / "bin")


@pytest.mark.parametrize("state", ["empty", "truncated"])
def test_an_unreadable_checkpoint(data_bin, checkpoint, tmp_path, state):
    """fairseq-generate's --path and fairseq-train's resume from checkpoint_last.pt: one line naming the file."""
    data = checkpoint.read_bytes()
    bad = tmp_path / "checkpoint_last.pt"
    bad.write_bytes(b"" if state == "empty" else data[: len(data) // 2])
    g = run(generate_cmd(data_bin, str(bad), ["--gen-subset", "valid"]), check=False)
    assert_one_line(g, bad, "cannot be read", "empty" if state == "empty" else "central directory")
    t = run(train_cmd(data_bin, str(tmp_path), updates=4), check=False)
    line = assert_one_line(t, bad, "cannot be read", "--restore-file")
    assert "checkpoint_best.pt" in line
    assert bad.stat().st_size == (0 if state == "empty" else len(data) // 2)  # left as it was


def test_debug_shows_the_traceback(tmp_path):
    p = subprocess.run([tool("fairseq-syntax-evaluate"), "--hyp", str(tmp_path / "nope"), "--ref",
                        str(tmp_path / "nope")], capture_output=True, text=True,
                       env={**env(), "FAIRSEQ_SYNTAX_DEBUG": "1"})
    assert p.returncode == 1 and "Traceback" in p.stderr and "no such file" in p.stderr


def test_a_missing_checkpoint_or_split(data_bin, checkpoint, tmp_path):
    """fairseq's own errors for a --path or a --gen-subset that is not there, shown as one line."""
    g = run(generate_cmd(data_bin, str(tmp_path / "nope.pt")), check=False)
    assert_one_line(g, "Model file not found", tmp_path / "nope.pt")
    g = run(generate_cmd(data_bin, str(checkpoint), ["--gen-subset", "test7"]), check=False)
    assert_one_line(g, "Dataset not found: test7")


@pytest.mark.parametrize("impl,vocab", [("mmap", 100), ("mmap", 70000), ("mmap", None), ("lazy", 100)])
def test_the_index_check_accepts_every_fairseq_dataset(tmp_path, impl, vocab):
    """Every dtype fairseq's mmap builder picks (uint16 for small vocabularies, uint32 from 65,500 symbols or
    without a size) is checked; an index of fairseq's other formats is left to fairseq."""
    import numpy as np
    import torch
    from fairseq.data import indexed_dataset

    from fairseq_syntax.data.alignment.mmap_check import ITEM_BYTES, check_mmap_dataset

    assert {c: np.dtype(t).itemsize for c, t in indexed_dataset._code_to_dtype.items()} == ITEM_BYTES
    prefix = str(tmp_path / "x")
    builder = indexed_dataset.make_builder(prefix + ".bin", impl=impl, vocab_size=vocab)
    for n in (3, 5, 0, 2):
        builder.add_item(torch.arange(n))
    builder.finalize(prefix + ".idx")
    assert check_mmap_dataset(prefix) == (4 if impl == "mmap" else -1)


def test_a_script_importing_the_plugin_keeps_its_tracebacks(tmp_path):
    """The one-line display is for fairseq's commands: a user's script that imports the plugin and fails on its
    own file gets Python's traceback."""
    script = tmp_path / "mine.py"
    script.write_text("import fairseq_syntax.plugin\nopen('my_missing_config.yaml')\n", encoding="utf-8")
    p = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env(),
                       cwd=str(tmp_path))
    assert p.returncode == 1 and "Traceback" in p.stderr and "FileNotFoundError" in p.stderr


def _worker_failing(rank, kind):
    """A worker of torch.multiprocessing.spawn failing as a fairseq worker would (spawn imports this module)."""
    from fairseq_syntax.errors import InputLineError, OptionError, SyntaxDataError

    if kind == "data":
        raise SyntaxDataError("data-bin/train.src.parents", "12 sentences but train.src has 13")
    if kind == "option":
        raise OptionError("--dbsa-encoder-layer 7: the encoder has 3 layers")
    if kind == "subclass":
        raise InputLineError(3, "the parser failed on it")
    if kind == "during":
        try:
            raise SyntaxDataError("data-bin/x", "first")
        except SyntaxDataError:
            raise RuntimeError("while handling it")
    raise RuntimeError("a bug")


@pytest.mark.parametrize("kind,expected,status", [
    ("data", "data-bin/train.src.parents: 12 sentences but train.src has 13", 1),
    ("option", "--dbsa-encoder-layer 7: the encoder has 3 layers", 2),
    ("subclass", "input line 3: the parser failed on it", 1),
    ("during", None, 1),  # the plugin's error did not end the worker: keep the traceback
    ("bug", None, 1),
])
def test_a_spawned_workers_plugin_error_is_one_line(kind, expected, status):
    """Multi-GPU fairseq-train spawns one worker per GPU; a worker's SyntaxDataError / OptionError (or a subclass)
    reaches the parent as torch's ProcessRaisedException with the worker's traceback as text, and is shown as its
    line, with its exit status."""
    import torch.multiprocessing as mp

    from fairseq_syntax.patches.error_display import exit_status, one_line

    with pytest.raises(mp.ProcessRaisedException) as raised:
        mp.spawn(_worker_failing, args=(kind,), nprocs=1)
    assert one_line(raised.value) == expected
    assert exit_status(raised.value) == status


@pytest.mark.parametrize("distributed", [False, True], ids=["alone", "under-torch-distributed"])
def test_the_hook_inside_torch_distributeds_hook(tmp_path, distributed):
    """torch.distributed wraps sys.excepthook in every rank (it prefixes the lines with the rank after the
    wrapped hook returns): the plugin's line must still reach stderr; alone, the hook sets status 2."""
    script = tmp_path / "fairseq-probe"  # a fairseq program, by its name
    script.write_text(
        "import sys\n"
        "import torch.distributed as dist\n"
        "from fairseq_syntax.patches.error_display import install_excepthook\n"
        "from fairseq_syntax.errors import OptionError\n"
        "install_excepthook()\n"
        f"if {distributed}:\n"
        f"    dist.init_process_group('gloo', init_method='file://{tmp_path}/pg', rank=0, world_size=1)\n"
        "raise OptionError('--pascal-heads 5: parent-scaled heads, but the layer has 4 heads')\n",
        encoding="utf-8")
    p = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env(), cwd=str(tmp_path))
    line = "error: --pascal-heads 5: parent-scaled heads, but the layer has 4 heads"
    assert "Traceback" not in p.stderr, p.stderr
    if distributed:
        assert p.returncode == 1 and f"[rank0]: {line}" in p.stderr, p.stderr
    else:
        assert p.returncode == 2 and line in p.stderr.splitlines(), p.stderr
