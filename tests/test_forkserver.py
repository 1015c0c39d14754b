"""The suite's fork server (tests/forkserver): a command handed to it prints, reads and returns what the
same command does in a fresh interpreter, in a process of its own, and it stops when its caller is stopped."""
import importlib.util
import os
import select
import signal
import socket
import subprocess
import sys
import time

import pytest

from helpers import FORKSERVER_DIR, ROOT, USER_DIR, env, forkserver_socket, run, tool

pytestmark = pytest.mark.skipif(os.environ.get("FAIRSEQ_SYNTAX_TEST_FORKSERVER", "1") == "0",
                                reason="fork server switched off (FAIRSEQ_SYNTAX_TEST_FORKSERVER=0)")

BLOCKER = """import os, sys
print(os.getpid(), "ready", flush=True)
text = sys.stdin.read()
print(len(text), "characters", sys.argv[1:])
sys.exit(3)
"""


def send_request(sock, request, fds):
    """The fork server's own client call (tests/forkserver/fsx_wire.py, loaded by path: that folder is not
    put on this process's sys.path, it holds a sitecustomize)."""
    spec = importlib.util.spec_from_file_location("fsx_wire", os.path.join(FORKSERVER_DIR, "fsx_wire.py"))
    wire = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(wire)
    wire.send_request(sock, request, fds)


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


def test_a_caller_gone_before_its_pid_comes_back_stops_its_command(tmp_path):
    """The race seen under load: the caller is killed after its command started but before the server's
    handler reports the command's pid, so that report fails; the command must die all the same (its
    standard output then reaches end of file: no process holds it any more)."""
    wait_for_server()
    (tmp_path / "fsx_blocker.py").write_text(BLOCKER)
    token = f"gone-{tmp_path.name}"
    stdin_r, stdin_w = os.pipe()
    stdout_r, stdout_w = os.pipe()
    caller = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)  # what sitecustomize.py sends, then gone
    caller.connect(forkserver_socket())
    send_request(caller, {"kind": "module", "what": "fsx_blocker", "args": [token], "env": env(),
                          "cwd": str(tmp_path), "unbuffered": False}, [stdin_r, stdout_w, stdout_w])
    caller.close()
    os.close(stdin_r)
    os.close(stdout_w)
    deadline = time.monotonic() + 30
    ended = False
    try:
        while time.monotonic() < deadline:
            readable, _, _ = select.select([stdout_r], [], [], max(0.0, deadline - time.monotonic()))
            if readable and not os.read(stdout_r, 4096):
                ended = True
                break
    finally:
        os.close(stdout_r)
        os.close(stdin_w)  # end of input: a command that outlived its caller still ends
    assert f"module fsx_blocker {token}" in server_log(), "the server never started the command"
    assert ended, "the command outlived its caller"
