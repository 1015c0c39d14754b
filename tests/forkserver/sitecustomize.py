"""Test-suite start-up saver, client side: hands a fairseq command to the suite's fork server.

Only active where the tests put this directory on PYTHONPATH and set FAIRSEQ_SYNTAX_FORKSERVER to the
server's socket (tests/helpers.py does, unless FAIRSEQ_SYNTAX_TEST_FORKSERVER=0). A Python process whose
command line runs a fairseq or plugin program (``fairseq-train ...``, ``python -m fairseq_cli.preprocess
...``, ``python preprocess/prepare.py ...``) sends its arguments, environment, working directory and standard streams to the server, which forks
a child of an interpreter that has already imported torch and fairseq and runs the same console-script
entry point there; this process waits, forwards SIGINT/SIGTERM/SIGHUP to the child and exits with its
status. Every other process, and every process when the server is not up, runs as usual.

It saves the ~5 s import of torch + fairseq per command (several hundred commands in the suite); what the
commands do, print and return is unchanged (tests/test_forkserver.py compares both ways).
"""
import os
import sys

#: what is handed over: fairseq's and this plugin's console scripts (``fairseq-*``, resolved by the server
#: from the installed entry points), their modules run with ``python -m``, and preprocess/*.py
SCRIPT_PREFIX = "fairseq-"
MODULE_PREFIXES = ("fairseq_cli.", "fairseq_syntax.cli.")
#: the checkout's preprocess/*.py entry points (python preprocess/prepare.py ...) run as scripts
PREPROCESS_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                              "preprocess")
SOCKET_VARIABLE = "FAIRSEQ_SYNTAX_FORKSERVER"
ALSO_VARIABLE = "FAIRSEQ_SYNTAX_FORKSERVER_MODULES"  # more modules to hand over (the server's own tests)


def routed_target(argv):
    """('script', path, args) / ('module', name, args) / ('path', path, args) for a routed command line,
    else None."""
    if len(argv) < 2:
        return None
    rest = list(argv[1:])
    while rest and rest[0] == "-u":  # torchrun starts its workers unbuffered
        rest.pop(0)
    also = set(filter(None, os.environ.get(ALSO_VARIABLE, "").split(",")))  # tests/test_forkserver.py
    if len(rest) >= 2 and rest[0] == "-m" and (rest[1].startswith(MODULE_PREFIXES) or rest[1] in also):
        return "module", rest[1], rest[2:]
    if rest and os.path.basename(rest[0]).startswith(SCRIPT_PREFIX) and os.path.isfile(rest[0]):
        return "script", rest[0], rest[1:]
    if rest and rest[0].endswith(".py") and os.path.dirname(os.path.abspath(rest[0])) == PREPROCESS_DIR:
        return "path", os.path.abspath(rest[0]), rest[1:]
    return None


def _hand_over(path, target):
    import signal
    import socket
    import struct

    from fsx_wire import send_request

    kind, what, args = target
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.connect(path)
    except OSError:
        s.close()
        return None  # no server (yet): run here as usual
    send_request(s, {"kind": kind, "what": what, "args": args, "env": dict(os.environ), "cwd": os.getcwd(),
                     "unbuffered": "-u" in sys.orig_argv[1:3]}, [0, 1, 2])
    f = s.makefile("rb")
    head = f.read(8)
    if len(head) < 8:
        return None if not head else 1
    child = struct.unpack("!q", head)[0]

    def forward(signum, _frame):
        try:
            os.kill(child, signum)
        except ProcessLookupError:
            pass

    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, forward)
    status = f.read(8)
    if len(status) < 8:
        return 1
    code = struct.unpack("!q", status)[0]
    if code < 0:  # the child died of a signal: so does this process
        signal.signal(-code, signal.SIG_DFL)
        sys.stdout.flush()
        os.kill(os.getpid(), -code)
        return 128 - code
    return code


def _main():
    path = os.environ.get(SOCKET_VARIABLE)
    target = routed_target(getattr(sys, "orig_argv", [])) if path else None
    if target is None:
        return
    code = _hand_over(path, target)
    if code is not None:
        os._exit(code)


_main()
