"""The suite's fork server (tests/forkserver): a command handed to it prints, reads and returns what the
same command does in a fresh interpreter, in a process of its own, and it stops when its caller is stopped."""
import os
import select
import signal
import subprocess
import sys
import time

import pytest

from helpers import ROOT, USER_DIR, env, forkserver_socket, run, tool

pytestmark = pytest.mark.skipif(os.environ.get("FAIRSEQ_SYNTAX_TEST_FORKSERVER", "1") == "0",
                                reason="fork server switched off (FAIRSEQ_SYNTAX_TEST_FORKSERVER=0)")

BLOCKER = """import os, sys
print(os.getpid(), "ready", flush=True)
text = sys.stdin.read()
print(len(text), "characters", sys.argv[1:])
sys.exit(3)
"""


def server_log():
    return open(os.path.join(os.path.dirname(forkserver_socket()), "server.log")).read()


def wait_for_server():
    path = forkserver_socket()
    deadline = time.monotonic() + 300
    while not os.path.exists(path):
        assert time.monotonic() < deadline, server_log()
        time.sleep(0.2)
    time.sleep(0.5)  # bound, then listening


@pytest.mark.parametrize("cmd,logged", [
    ([tool("fairseq-train"), "--user-dir", USER_DIR, "--task", "syntax_translation", "--help"],
     "script fairseq-train"),
    ([tool("fairseq-train"), "/no/such/data-bin", "--user-dir", USER_DIR, "--arch", "transformer"],  # fails
     "script fairseq-train /no/such/data-bin"),
    ([sys.executable, "-m", "fairseq_cli.preprocess", "--no-such-option"],  # fails in argparse
     "module fairseq_cli.preprocess --no-such-option"),
    ([sys.executable, os.path.join(ROOT, "preprocess", "synth.py"), "--help"], "path synth.py --help"),
], ids=["help", "error", "python-m", "preprocess-script"])
def test_handed_over_command_behaves_as_in_a_fresh_interpreter(cmd, logged):
    wait_for_server()
    handed = run(cmd, check=False)
    assert logged in server_log()
    fresh = run(cmd, check=False, forkserver=False)
    assert handed.returncode == fresh.returncode
    assert handed.stdout == fresh.stdout
    assert handed.stderr.splitlines()[-1:] == fresh.stderr.splitlines()[-1:]


def blocker(tmp_path):
    (tmp_path / "fsx_blocker.py").write_text(BLOCKER)
    e = dict(env(), FAIRSEQ_SYNTAX_FORKSERVER_MODULES="fsx_blocker")
    return subprocess.Popen([sys.executable, "-m", "fsx_blocker", "x", "y"], cwd=tmp_path, env=e, text=True,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def test_streams_arguments_and_status_reach_the_forked_command(tmp_path):
    wait_for_server()
    p = blocker(tmp_path)
    pid = int(p.stdout.readline().split()[0])
    assert pid != p.pid  # it runs in the server's child
    out, err = p.communicate("abcd", timeout=60)
    assert p.returncode == 3 and out == "4 characters ['x', 'y']\n", err


def test_a_stopped_caller_stops_its_command(tmp_path):
    wait_for_server()
    p = blocker(tmp_path)
    pid = int(p.stdout.readline().split()[0])
    p.terminate()  # forwarded: the command dies of SIGTERM, and so does the caller
    assert p.wait(timeout=60) == -signal.SIGTERM
    p = blocker(tmp_path)
    pid = int(p.stdout.readline().split()[0])
    # a pidfd names this process and no later one with its pid (the suite starts many processes), and it
    # becomes readable when the process exits, whether or not its parent has reaped it yet
    command = os.pidfd_open(pid)
    try:
        p.kill()  # cannot be forwarded: the server sees the caller go and kills the command
        p.wait(timeout=60)
        exited, _, _ = select.select([command], [], [], 30)
    finally:
        os.close(command)
    assert exited, "the command outlived its killed caller"
