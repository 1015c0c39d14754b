"""Fault injection for the tests: a run of the package killed or stopped at a chosen point, through the seams it
has for it (fairseq_syntax.durable_files.boundary_observers, a module's logger), never through anything the
package reads. In this process (a forked child of the tests) call the functions; for a command, run it under

    python tests/faults.py FAULT [FAULT ...] -- SCRIPT ARGS...      (a Python file: preprocess/x.py, a console
    python tests/faults.py FAULT [FAULT ...] -- -c CODE ARGS...      script of the venv's bin, or code)

with FAULT one of ``kill-after-chunks=N`` (SIGKILL once a chunked step has committed its N-th chunk),
``stop-at-log=MODULE:N:TEXT`` (SIGSTOP at the N-th record of MODULE's logger whose message holds TEXT, before it
is written) and ``log-boundaries=FILE``.
"""
import os
import re
import runpy
import signal
import sys

#: a chunk's manifest (fairseq_syntax/preparation/chunked.py, ChunkStore.manifest_path): its chunk committed
_MANIFEST = re.compile(r"\.chunks[/\\]\d{8}\.json$")


def _observe(fn):
    from fairseq_syntax import durable_files

    durable_files.boundary_observers.append(fn)
    return fn


def log_boundaries(path):
    """Append every write boundary's number and path (tab-separated) to the file ``path``."""
    seen = [0]

    def log(written):
        seen[0] += 1
        with open(path, "a", encoding="utf-8") as f:
            f.write(f"{seen[0]}\t{written}\n")
    return _observe(log)


def kill_at_boundary(n):
    """SIGKILL right after this process's n-th write boundary."""
    seen = [0]

    def kill(_):
        seen[0] += 1
        if seen[0] == n:
            os.kill(os.getpid(), signal.SIGKILL)
    return _observe(kill)


def kill_after_chunks(n):
    """SIGKILL once n chunks of a chunked step are committed in this process (their output and manifest)."""
    seen = [0]

    def kill(written):
        if _MANIFEST.search(written):
            seen[0] += 1
            if seen[0] == n:
                os.kill(os.getpid(), signal.SIGKILL)
    return _observe(kill)


def stop_at_boundary(suffix):
    """SIGSTOP right after the first write boundary whose path ends with ``suffix`` (a test then kills it)."""
    def stop(written):
        if written.endswith(suffix):
            os.kill(os.getpid(), signal.SIGSTOP)
    return _observe(stop)


def stop_at_log(module, n, text):
    """SIGSTOP at the n-th ``info`` record of ``module``'s logger whose message holds ``text``, before it is
    written: the point the message announces, nothing of it done."""
    import importlib

    logger = importlib.import_module(module).logger
    info, seen = logger.info, [0]

    def stopping_info(msg, *args, **kwargs):
        if text in (msg % args if args else msg):
            seen[0] += 1
            if seen[0] == n:
                os.kill(os.getpid(), signal.SIGSTOP)
        info(msg, *args, **kwargs)
    logger.info = stopping_info


def install(spec):
    """One FAULT of the command line."""
    name, _, value = spec.partition("=")
    if name == "kill-after-chunks":
        kill_after_chunks(int(value))
    elif name == "log-boundaries":
        log_boundaries(value)
    elif name == "stop-at-log":
        module, n, text = value.split(":", 2)
        stop_at_log(module, int(n), text)
    else:
        raise SystemExit(f"faults.py: unknown fault {spec!r}")


def main(argv):
    cut = argv.index("--")
    program = argv[cut + 1:]
    sys.path[0] = "" if program[0] == "-c" else os.path.dirname(os.path.abspath(program[0]))  # as python would
    for spec in argv[:cut]:
        install(spec)
    if program[0] == "-c":
        sys.argv = ["-c", *program[2:]]
        exec(compile(program[1], "<string>", "exec"), {"__name__": "__main__"})
    else:
        sys.argv = program
        runpy.run_path(program[0], run_name="__main__")


if __name__ == "__main__":
    main(sys.argv[1:])
