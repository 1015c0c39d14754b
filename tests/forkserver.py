"""Commands that start without paying their imports, for the tests that run the recipes' shell scripts.

A recipe test runs bash scripts that start ten to twenty fairseq commands, each of which spends about 5 s of
CPU importing torch, fairseq and torch's compiler (which the first optimizer step imports) for 2 updates of
work. The tests that run such scripts put a folder of stand-ins first on ``PATH`` (:func:`stand_ins`): a
stand-in for a command that imports fairseq anyway asks the server of this module, started once per test worker
with those imports done, to fork a child that runs the command (its console-script entry point, or the Python
script of :data:`FORKED_SCRIPTS`) with the stand-in's argument list, working folder, environment and standard
streams (the descriptors themselves, passed over a Unix socket); the stand-in ends with the child's exit status and
passes SIGINT / SIGTERM / SIGHUP on to it. Every other command the stand-in executes as it is.

The child runs the command's own code from its first line on. What differs from a fresh process: the server's
modules are imported already (torch and fairseq, which each of its commands imports; a few fairseq modules not
each one uses, e.g. the trainer in fairseq-generate; NLTK and matplotlib, which fairseq-syntax-evaluate imports
with ``--ribes`` and ``--plot``); importing fairseq configures the root logger, so the child
configures it where the real process's import would (:func:`_fairseq_import_configures_logging`); the
interpreter's start-up flags and ``PYTHONUNBUFFERED`` are the server's. What only a real process checks (the
console script's start-up, ``--user-dir`` on a cold interpreter) is tested by tests/test_cli_startup.py;
``test_forkserver.py`` checks that a training, a decoding, interactive, evaluate, errors and signals come out
the same both ways.

    python tests/forkserver.py SOCKET SERVER PARENT   # a server (:func:`environment` starts them): SERVER of
                                                      # SERVERS, PARENT the test worker's pid
"""
import atexit
import json
import logging
import os
import shutil
import signal
import socket
import struct
import sys

#: the two servers (one per set of imports, so that a command finds imported only what it imports itself first):
#: name -> the modules the server imports before it forks
SERVERS = {
    # the commands that import fairseq (and so torch) before they do anything
    "fairseq": ("torch", "torch._dynamo", "fairseq", "fairseq.trainer", "fairseq.sequence_generator",
                "fairseq.checkpoint_utils", "fairseq.tasks.translation", "fairseq.data.indexed_dataset"),
    # the scorer: sacreBLEU, NLTK's RIBES (NLTK imports SciPy) and the plot (matplotlib), 3 s of imports
    "scoring": ("numpy", "sacrebleu", "nltk", "matplotlib.pyplot"),
}
#: which server runs a console script where it is not the fairseq server: the scorer's, or None for the
#: plugin's commands that import no fairseq (they start fast as they are)
SERVER_OF = {
    "fairseq-syntax-evaluate": "scoring",
    **dict.fromkeys(("fairseq-syntax-parse", "fairseq-syntax-align", "fairseq-syntax-synth",
                     "fairseq-syntax-multitask", "fairseq-syntax-options", "fairseq-syntax-detokenize",
                     "fairseq-syntax-plot", "fairseq-syntax-settings"), None),
}
#: the Python scripts a server runs (``python SCRIPT ...``), by their path in the repository: the
#: ``preprocess/`` scripts (they run as fairseq-syntax-NAME), and the GPU run's two scripts that import torch
#: and fairseq themselves (examples/gpu/run.sh's dry run on the CPU, tests/test_gpu_scripts.py)
FORKED_SCRIPTS = {"preprocess/prepare.py": "fairseq", "preprocess/binarize.py": "fairseq",
                  "examples/gpu/device_check.py": "fairseq", "examples/gpu/paired_timing.py": "fairseq"}
_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def forked_scripts():
    """console script -> its server, for every console script the tests run in-process (tests/helpers.py
    CONSOLE_SCRIPTS: fairseq's and the plugin's installed entry points) or as a process of its own
    (helpers.OWN_PROCESS: fairseq-hydra-train) that a server runs."""
    from helpers import CONSOLE_SCRIPTS, OWN_PROCESS

    return {name: SERVER_OF.get(name, "fairseq") for name in (*CONSOLE_SCRIPTS, *OWN_PROCESS)
            if SERVER_OF.get(name, "fairseq")}


SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
_HEADER = struct.Struct("!I")

STAND_IN = """#!{python} -IS
# fairseq-syntax's test stand-in for {name} (tests/forkserver.py)
import sys
sys.path.insert(0, {tests!r})
from forkserver import client
client({name!r}, {real!r}, {server!r})
"""


def stand_ins(folder, bin_dir):
    """Write the stand-ins (every forked console script, and ``python``) into ``folder``; return it."""
    os.makedirs(folder, exist_ok=True)
    for name, server in (*forked_scripts().items(), ("python", None)):
        path = os.path.join(folder, name)
        with open(path, "w") as f:
            f.write(STAND_IN.format(python=sys.executable, name=name, real=os.path.join(bin_dir, name),
                                    server=server, tests=os.path.dirname(os.path.abspath(__file__))))
        os.chmod(path, 0o755)
    return folder


def _is_forked(name, argv, server):
    """(server, kind, target) of a command a server runs, or None: ``argv`` without the program, ``server``
    the console script's (None for ``python``)."""
    if "--text-only" in argv:  # prepare's text stage imports no fairseq
        return None
    if name == "python":
        script = os.path.relpath(os.path.abspath(argv[0]), _ROOT) if argv else None
        return (FORKED_SCRIPTS[script], "script", os.path.abspath(argv[0])) if script in FORKED_SCRIPTS else None
    return (server, "console", name) if server else None


# ---------------------------------------------------------------- the tests' side
_server = {}


def environment():
    """The variables that send the commands of a script a test runs through this test worker's server (started
    on the first call, ended with the worker): the stand-ins first on PATH, the environment's own commands
    after them (``FAIRSEQ_SYNTAX_VENV=none``: the scripts' examples/setup_env.sh leaves PATH as it is). With
    ``FAIRSEQ_SYNTAX_TEST_FORK=0`` set, none: every command is a process of its own."""
    if os.environ.get("FAIRSEQ_SYNTAX_TEST_FORK", "1") == "0":
        return {}
    if not _server:
        import subprocess
        import tempfile

        folder = tempfile.mkdtemp(prefix="fairseq-syntax-fork-")
        bin_dir = os.path.dirname(sys.executable)
        from helpers import env as test_env  # the environment of the tests' processes: one thread, no warnings

        env = test_env()
        started = {}
        for server in SERVERS:  # both import at once
            address = os.path.join(folder, f"{server}.socket")
            with open(os.path.join(folder, f"{server}.log"), "wb") as log:  # the server's own errors
                started[server] = address, subprocess.Popen(
                    [sys.executable, os.path.abspath(__file__), address, server, str(os.getpid())],
                    stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=log, env=env, start_new_session=True)
            atexit.register(_stop, started[server][1])
        atexit.register(shutil.rmtree, folder, True)
        for server, (address, process) in started.items():
            if process.stdout.readline() != b"ready\n":
                with open(os.path.join(folder, f"{server}.log")) as log:
                    raise RuntimeError(f"the test fork server {server} did not start (exit status {process.wait()}):\n"
                                       f"{log.read()[-3000:]}")
            _server[f"FAIRSEQ_SYNTAX_TEST_FORKSERVER_{server.upper()}"] = address
        _server.update({"PATH": stand_ins(os.path.join(folder, "bin"), bin_dir) + os.pathsep + bin_dir + os.pathsep
                        + os.environ.get("PATH", ""), "FAIRSEQ_SYNTAX_VENV": "none",
                        "VIRTUAL_ENV": os.path.dirname(bin_dir)})
    return dict(_server)


def command(name):
    """The path of the stand-in for the installed command ``name`` (the command itself with
    ``FAIRSEQ_SYNTAX_TEST_FORK=0``), for a launcher that takes a script's path (torchrun)."""
    path = environment().get("PATH", os.path.dirname(sys.executable)).split(os.pathsep)[0]
    return os.path.join(path, name)


def _stop(process):
    try:
        os.killpg(process.pid, signal.SIGKILL)  # the server, and any command still running
    except ProcessLookupError:
        pass
    process.wait()


# ---------------------------------------------------------------- the stand-in's side
def client(name, real, server=None):
    """The stand-in: run ``name`` through its ``server`` when the server answers; else execute ``real`` (the
    installed command) in this process."""
    argv = sys.argv[1:]
    forked = _is_forked(name, argv, server)
    address = forked and os.environ.get(f"FAIRSEQ_SYNTAX_TEST_FORKSERVER_{forked[0].upper()}")
    if not address:
        os.execv(real, [real, *argv])
    try:
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        conn.connect(address)
    except OSError:  # no server (any more): the real command
        os.execv(real, [real, *argv])
    _, kind, target = forked
    request = json.dumps({"kind": kind, "target": target, "argv": [real, *argv] if kind == "console" else argv,
                          "cwd": os.getcwd(),
                          "env": dict(os.environ)}).encode("utf-8")
    socket.send_fds(conn, [_HEADER.pack(len(request)) + request], [0, 1, 2])
    pid = _HEADER.unpack(_read(conn, _HEADER.size))[0]
    for sig in SIGNALS:
        signal.signal(sig, lambda s, frame: os.kill(pid, s))
    status = struct.unpack("!i", _read(conn, 4))[0]
    if status < 0:  # killed by a signal: so is the stand-in
        for sig in SIGNALS:
            signal.signal(sig, signal.SIG_DFL)
        os.kill(os.getpid(), -status)
    sys.exit(status)


def _read(conn, n):
    data = b""
    while len(data) < n:
        chunk = conn.recv(n - len(data))
        if not chunk:
            raise SystemExit(f"fairseq-syntax test fork server: the connection closed ({len(data)} of {n} bytes)")
        data += chunk
    return data


# ---------------------------------------------------------------- the server's side
def serve(address, server, parent):
    import importlib

    for module in SERVERS[server]:
        importlib.import_module(module)
    # the root logger as a fresh interpreter has it (fairseq's import configured it: see below)
    logging.root.handlers.clear()
    logging.root.setLevel(logging.WARNING)
    from importlib.metadata import entry_points

    scripts = [name for name, s in forked_scripts().items() if s == server]
    entries = {e.name: e for e in entry_points(group="console_scripts") if e.name in scripts}
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(address)
    listener.listen(16)
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # the handlers below are reaped by the kernel
    listener.settimeout(2.0)
    try:
        print("ready", flush=True)
    except OSError:  # the test worker is gone while we imported
        _orphaned(address)
    while True:
        try:
            conn, _ = listener.accept()
        except socket.timeout:
            if os.getppid() != int(parent):  # the test worker is gone without ending us
                _orphaned(address)
            continue
        conn.settimeout(None)
        sys.stdout.flush()
        sys.stderr.flush()
        if os.fork() == 0:  # the handler of one command: forks it, waits, reports its status
            listener.close()
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            try:
                _handle(conn, entries)
            finally:
                os._exit(0)
        conn.close()


def _orphaned(address):
    """End this server and the commands it runs, removing its folder (what the test worker's exit would do)."""
    shutil.rmtree(os.path.dirname(address), ignore_errors=True)
    os.killpg(0, signal.SIGKILL)


def _handle(conn, entries):
    size = _HEADER.size
    msg, fds, _, _ = socket.recv_fds(conn, size, 3)
    while len(msg) < size:
        msg += _read(conn, size - len(msg))
    length = _HEADER.unpack(msg)[0]
    request = json.loads(_read(conn, length).decode("utf-8"))
    pid = os.fork()
    if pid == 0:
        conn.close()
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
            os.close(fd)
        os._exit(_run(request, entries))
    for fd in fds:
        os.close(fd)
    conn.sendall(_HEADER.pack(pid))
    _, status = os.waitpid(pid, 0)
    code = -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)
    conn.sendall(struct.pack("!i", code))


def _run(request, entries):
    """Run the command in this (forked) process as its own interpreter would; return its exit status."""
    import runpy

    from helpers import run_entry_point

    os.environ.clear()
    os.environ.update(request["env"])
    if "torch" in sys.modules and os.environ.get("OMP_NUM_THREADS", "").isdigit():  # read at the server's import
        sys.modules["torch"].set_num_threads(int(os.environ["OMP_NUM_THREADS"]))
    for sig in SIGNALS:
        signal.signal(sig, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    _fairseq_import_configures_logging()
    if request["kind"] == "script":
        sys.path[0] = os.path.dirname(request["target"])

        def main():
            runpy.run_path(request["target"], run_name="__main__")
    else:
        sys.path[0] = os.path.dirname(request["argv"][0])
        main = entries[request["target"]].load()
    code = run_entry_point(main, request["argv"], cwd=request["cwd"])[0]
    try:
        atexit._run_exitfuncs()
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass
    return code


def _fairseq_import_configures_logging():
    """Importing fairseq runs ``logging.basicConfig(level=DEBUG)`` (in one of its models): a command's root
    logger depends on whether the command configures it first (fairseq-train, fairseq-syntax-train) or imports
    fairseq first (fairseq-generate). The forked command imports nothing, so its first import statement that
    names fairseq does that basicConfig, where the real process's import would."""
    import builtins

    real_import = builtins.__import__

    def first_import(name, *args, **kwargs):
        if name == "fairseq" or name.startswith("fairseq."):
            builtins.__import__ = real_import
            logging.basicConfig(level=logging.DEBUG)
        return real_import(name, *args, **kwargs)

    builtins.__import__ = first_import


if __name__ == "__main__":
    serve(*sys.argv[1:4])
