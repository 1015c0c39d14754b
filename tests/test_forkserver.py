"""The recipe tests' fork server (tests/forkserver.py) runs a command as its own process would: the same
checkpoint, translations, scores, output lines, standard input and exit status, run through a stand-in on PATH
and as the installed command."""
import os
import re
import signal
import subprocess
import sys
import time

import pytest
import torch

import forkserver
from helpers import BIN, USER_DIR, env, generate_cmd, train_cmd

pytestmark = pytest.mark.slow  # what it checks serves the slow tests (the recipes, the GPU dry runs, torchrun)


def _forked(cmd, input=None, cwd=None):
    """``cmd`` (an installed command's argument list) run through its stand-in."""
    forked_env = {**env(), **forkserver.environment()}
    assert forked_env.get("FAIRSEQ_SYNTAX_TEST_FORKSERVER_FAIRSEQ"), "FAIRSEQ_SYNTAX_TEST_FORK=0 leaves nothing to test"
    return subprocess.run([os.path.basename(cmd[0]), *cmd[1:]], env=forked_env, capture_output=True, text=True,
                          input=input, cwd=cwd)


def _both(cmd, input=None, cwd=None):
    """(forked, process): ``cmd`` run through its stand-in, and run as the installed command itself."""
    return (_forked(cmd, input, cwd),
            subprocess.run(cmd, env=env(), capture_output=True, text=True, input=input, cwd=cwd))


def _log_lines(text):
    """A fairseq log without what differs between two runs of one command (times, speeds, memory)."""
    out = []
    for line in text.splitlines():
        line = re.sub(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(,\d+)? \| ", "", line)
        line = re.sub(r"\b(wps|ups|wall|train_wall|gb_free)([ =])[\d.]+", r"\1\2_", line)
        line = re.sub(r"[\d.,]+ (seconds|sentences/s|tokens/s)|\d+\.\d+s|in \d+\.\d+", "_", line)
        out.append(line)
    return out


def test_train_generate_interactive_evaluate_are_the_same_forked(data_bin, tmp_path):
    ck = {}
    for way in ("forked", "process"):
        os.makedirs(tmp_path / way)
    cmd = [os.path.join(BIN, "fairseq-syntax-train"), *train_cmd(data_bin, "SAVE", updates=2)[1:]]
    outs = {}
    for way in ("forked", "process"):
        c = [str(tmp_path / way) if x == "SAVE" else x for x in cmd]
        p = _forked(c) if way == "forked" else subprocess.run(c, env=env(), capture_output=True, text=True)
        assert p.returncode == 0, p.stderr[-3000:]
        outs[way] = _log_lines(p.stdout + p.stderr)
        ck[way] = os.path.join(tmp_path, way, "checkpoint_last.pt")
    assert [x for x in outs["forked"] if "save_dir" not in x and "checkpoint" not in x] == \
        [x for x in outs["process"] if "save_dir" not in x and "checkpoint" not in x]
    states = [torch.load(ck[way], map_location="cpu", weights_only=False)["model"] for way in ("forked", "process")]
    assert states[0].keys() == states[1].keys()
    assert all(torch.equal(states[0][k], states[1][k]) for k in states[0])

    forked, process = _both(generate_cmd(data_bin, ck["process"]))
    assert forked.returncode == process.returncode == 0
    assert [x for x in forked.stdout.splitlines() if x[:2] in ("S-", "T-", "H-", "D-", "P-")] == \
        [x for x in process.stdout.splitlines() if x[:2] in ("S-", "T-", "H-", "D-", "P-")] != []
    assert _log_lines(forked.stderr) == _log_lines(process.stderr)

    src = open(os.path.join(data_bin, "work", "test.tok.src")).read().splitlines()[:3]
    forked, process = _both([os.path.join(BIN, "fairseq-interactive"), data_bin, "--user-dir", USER_DIR, "--task",
                             "syntax_translation", "--path", ck["process"], "--beam", "4", "--cpu", "-s", "src", "-t",
                             "tgt"], input="\n".join(src) + "\n")  # standard input reaches the forked command
    hyps = [re.findall(r"^H-\d+\t.*$", p.stdout, flags=re.M) for p in (forked, process)]
    assert hyps[0] == hyps[1] and len(hyps[0]) == 3

    hyp = tmp_path / "hyp.txt"
    hyp.write_text("\n".join(src[::-1]) + "\n")
    ref = os.path.join(data_bin, "work", "test.tok.tgt")
    (tmp_path / "ref.txt").write_text("\n".join(open(ref).read().splitlines()[:3]) + "\n")
    forked, process = _both([os.path.join(BIN, "fairseq-syntax-evaluate"), "--hyp", str(hyp), "--ref",
                             str(tmp_path / "ref.txt"), "--tokenize", "none", "--ribes", "--json", "scores.json"],
                            cwd=str(tmp_path))
    assert forked.returncode == process.returncode == 0 and forked.stdout == process.stdout != ""


def test_exit_status_and_error_as_the_command_s(tmp_path):
    for cmd in ([os.path.join(BIN, "fairseq-syntax-evaluate"), "--no-such-option"],
                [os.path.join(BIN, "fairseq-syntax-train"), str(tmp_path / "missing"), "--user-dir", USER_DIR,
                 "--task", "syntax_translation", "--arch", "transformer"]):
        forked, process = _both(cmd, cwd=str(tmp_path))  # fairseq-train makes ./checkpoints before it reads data
        assert forked.returncode == process.returncode != 0
        assert forked.stderr.strip().splitlines()[-1] == process.stderr.strip().splitlines()[-1]


def test_a_signal_to_the_stand_in_reaches_the_command(tmp_path):
    """SIGTERM to the stand-in ends the forked command, and the stand-in ends as the command did."""
    forked_env = {**env(), **forkserver.environment()}
    ref = tmp_path / "ref.txt"
    ref.write_text("a b c\n")
    p = subprocess.Popen(["fairseq-syntax-evaluate", "--hyp", "/dev/stdin", "--ref", str(ref)], env=forked_env,
                         stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(3)  # the command waits for its standard input
    assert p.poll() is None
    p.send_signal(signal.SIGTERM)
    assert p.wait(timeout=30) == -signal.SIGTERM


def test_the_servers_end_with_their_test_worker():
    """A test worker killed without running its exit handlers leaves no server behind (a CI run would wait on
    their inherited descriptors), nor their folder."""
    code = ("import sys; sys.path.insert(0, sys.argv[1]); import forkserver, time; "
            "print(forkserver.environment()['FAIRSEQ_SYNTAX_TEST_FORKSERVER_FAIRSEQ'], flush=True); time.sleep(600)")
    worker = subprocess.Popen([sys.executable, "-c", code, os.path.dirname(os.path.abspath(__file__))], env=env(),
                              stdout=subprocess.PIPE, text=True)
    address = worker.stdout.readline().strip()
    servers = subprocess.run(["pgrep", "-f", os.path.dirname(address)], capture_output=True, text=True).stdout.split()
    assert len(servers) == 2
    worker.kill()
    worker.wait()
    deadline = time.time() + 30
    while time.time() < deadline and subprocess.run(["pgrep", "-f", os.path.dirname(address)]).returncode == 0:
        time.sleep(0.5)
    assert subprocess.run(["pgrep", "-f", os.path.dirname(address)]).returncode == 1
    assert not os.path.exists(os.path.dirname(address))  # nor their folder
