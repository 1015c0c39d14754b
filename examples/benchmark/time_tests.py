#!/usr/bin/env python3
"""Wall time of the test suite (``bash tests/run.sh``, either tier), recorded with the machine it ran on.

Runs the suite once from the checkout it belongs to and appends one record to ``--json`` (a list): the tier,
the wall seconds (``bash tests/run.sh`` from its start: with building ``.venv`` where ``venv_before`` is false,
as in a fresh clone's first run), pytest's own seconds (its summary line: the tests alone), pytest's counts
(passed, skipped, failed, ...), the CPU (model name, AVX-512 or not, cores),
the commit, the share of the CPU time a virtual machine's host took for others during the run (steal, from
/proc/stat), whether the shared data was there (``$FAIRSEQ_SYNTAX_SHARED``, else ``../shared``, as the tests read
it; the tests that need it skip without it), the load average before the run, and the processes stopped for it.
docs/results.md's and docs/development.md's suite times are records of this file
(``examples/benchmark/test_suite_times.json``).

    python examples/benchmark/time_tests.py --tier quick --json examples/benchmark/test_suite_times.json
    python examples/benchmark/time_tests.py --tier full --pause fairseq-syntax-train --json ...

``--pause PATTERN`` stops the processes whose command line matches PATTERN (``pgrep -f``) with SIGSTOP for the
duration of the run and resumes them after it, however it ends: the background trainings of a busy machine, so
that the time is the suite's own (this user's processes, never this one or its callers; a TERM or HUP still
resumes them, a SIGKILL cannot). Without it the record says what else was running (the load average). A run
that ends without pytest's summary (killed) writes no record.
"""
import argparse
import json
import os
import re
import signal
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TIERS = {"full": [], "quick": ["-m", "not slow"]}


def _summary(output: str) -> str:
    """pytest's final line ('692 passed, 3 skipped, 1508 warnings in 435.92s (0:07:15)'), or ''."""
    lines = [line for line in output.splitlines() if re.search(r"\b(passed|failed|error)s?\b.* in [\d.]+s", line)]
    return lines[-1] if lines else ""


def counts(output: str) -> dict:
    """pytest's final counts, e.g. '692 passed, 3 skipped, 1508 warnings in 435.92s' -> {'passed': 692, ...}."""
    found = re.findall(r"(\d+) (passed|failed|skipped|errors?|xfailed|xpassed|deselected)", _summary(output))
    return {("errors" if word.startswith("error") else word): int(n) for n, word in found}


def pytest_seconds(output: str):
    """pytest's own time from its final line ('... 1508 warnings in 435.92s (0:07:15)' -> 435.92), or None."""
    seconds = re.search(r" in ([\d.]+)s", _summary(output))
    return float(seconds.group(1)) if seconds else None


def slowest(output: str) -> list:
    """pytest's --durations lines ('39.31s call     tests/test_x.py::test_y') as [[seconds, phase, test], ...]."""
    header = re.search(r"^=+ slowest (\d+ )?durations =+$", output, flags=re.M)
    if not header:
        return []
    return [[float(s), phase, test.strip()] for s, phase, test in
            re.findall(r"^([\d.]+)s (call|setup|teardown)\s+(\S.*?)\s*$", output[header.end():], flags=re.M)]


def slowest_markdown(record: dict) -> str:
    """A record's slowest test phases as a Markdown table (printed after a run)."""
    lines = ["| test | phase | s |", "| --- | --- | --- |"]
    for seconds, phase, test in record["slowest"]:
        lines.append(f"| `{test.removeprefix('tests/')}` | {phase} | {seconds:.1f} |")
    return "\n".join(lines)


def commit():
    """The checkout's commit (results_table.commit)."""
    sys.path.insert(0, os.path.join(ROOT, "examples", "recipes"))
    from results_table import commit as checkout_commit

    return checkout_commit()


def cpu() -> dict:
    """The CPU as examples/recipes/results_table.py's machine() reads it, in this file's record keys."""
    sys.path.insert(0, os.path.join(ROOT, "examples", "recipes"))
    from results_table import machine

    m = machine()
    return {"cores": m["cores"], "model": m["cpu"], "avx512f": m["avx512"]}


def cpu_times():
    """The machine's CPU time counters (/proc/stat's first line: user, nice, system, idle, iowait, irq, softirq,
    steal, ...), or None where there is none."""
    try:
        with open("/proc/stat", encoding="ascii") as f:
            return [int(x) for x in f.readline().split()[1:9]]
    except (OSError, ValueError):
        return None


def steal_percent(before, after):
    """The share of the CPU time between two :func:`cpu_times` readings that the host gave to others (a virtual
    machine's steal time, in %; the same suite takes longer the more is stolen), or None."""
    if not before or not after:
        return None
    spent = [b - a for a, b in zip(before, after)]
    return round(100.0 * spent[7] / sum(spent), 1) if sum(spent) > 0 else None


def ancestors() -> set:
    """This process and its parents (a shell whose command line names the pattern is not to be stopped)."""
    pids, pid = set(), os.getpid()
    while pid > 1 and pid not in pids:
        pids.add(pid)
        try:
            with open(f"/proc/{pid}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            break
        pid = int(stat.rsplit(b")", 1)[1].split()[1])
    return pids


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog=__doc__.split("\n\n", 1)[1])
    p.add_argument("--tier", choices=sorted(TIERS), default="quick",
                   help="full: every test; quick: -m 'not slow' (default quick)")
    p.add_argument("--pause", default=None, metavar="PATTERN",
                   help="SIGSTOP the processes matching PATTERN (pgrep -f) for the run, SIGCONT after it")
    p.add_argument("--durations", type=int, default=15, help="record the N slowest test phases (pytest "
                   "--durations; default 15)")
    p.add_argument("--json", required=True, help="the list of records to append to (created if missing)")
    args = p.parse_args(argv)
    paused = []
    if args.pause:  # this user's processes only, never this one or its callers
        found = subprocess.run(["pgrep", "-u", str(os.getuid()), "-f", args.pause], capture_output=True,
                               text=True).stdout.split()
        mine = ancestors()
        paused = [int(x) for x in found if int(x) not in mine]
    record = {"tier": args.tier, "commit": commit(), "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
              "cpu": cpu(), "shared_data": os.path.isdir(os.environ.get("FAIRSEQ_SYNTAX_SHARED")
                                           or os.path.join(os.path.dirname(ROOT), "shared")),
              "load_average_before": round(os.getloadavg()[0], 2), "venv_before": os.path.isdir(
                  os.path.join(ROOT, ".venv")), "paused": {"pattern": args.pause,
                                                                            "processes": len(paused)}}
    stopped = []

    def end(signum, frame):  # a TERM or HUP still resumes the paused processes (SIGKILL cannot: say so)
        sys.exit(128 + signum)

    for signum in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, end)
    try:
        for pid in paused:
            try:
                os.kill(pid, signal.SIGSTOP)
                stopped.append(pid)
            except (ProcessLookupError, PermissionError):
                pass
        record["paused"]["processes"] = len(stopped)
        start, counters = time.time(), cpu_times()
        run = subprocess.run(["bash", os.path.join(ROOT, "tests", "run.sh"), *TIERS[args.tier],
                              f"--durations={args.durations}"], cwd=ROOT,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        record["wall_seconds"] = round(time.time() - start, 1)
        record["steal_percent"] = steal_percent(counters, cpu_times())
    finally:
        for pid in stopped:
            try:
                os.kill(pid, signal.SIGCONT)
            except ProcessLookupError:
                pass
    record.update(exit=run.returncode, pytest_seconds=pytest_seconds(run.stdout), counts=counts(run.stdout),
                  slowest=slowest(run.stdout),
                  failed_tests=re.findall(r"^(?:FAILED|ERROR) (\S+)", run.stdout, flags=re.M))
    sys.stdout.write(run.stdout[-2000:])
    if run.returncode < 0 or not record["counts"]:
        print(f"error: the suite ended without pytest's summary (exit {run.returncode}): no record written",
              file=sys.stderr)
        return 1
    records = json.load(open(args.json, encoding="utf-8")) if os.path.exists(args.json) else []
    records.append(record)
    with open(args.json + ".tmp", "w", encoding="utf-8") as f:
        json.dump(records, f, indent=1)
        f.write("\n")
    os.replace(args.json + ".tmp", args.json)
    print(f"{args.tier}: {record['wall_seconds']} s, {record['counts']}, exit {run.returncode} -> {args.json}")
    if record.get("slowest"):
        print(slowest_markdown(record))
    return run.returncode


if __name__ == "__main__":
    sys.exit(main())
