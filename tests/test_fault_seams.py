"""Faults are injected from the tests (tests/faults.py) through seams the package has for it (the observers of
its write boundaries, its modules' loggers), never through an environment variable that the package reads only
for tests: the variables it reads are a user's."""
import os
import re

from helpers import ROOT

#: every environment variable the package reads, and why a user sets it
USERS_VARIABLES = {
    "FAIRSEQ_SYNTAX_DEBUG": "tracebacks instead of one-line errors (docs/design.md)",
    "STANZA_RESOURCES_DIR": "stanza's own model folder",
    "SACREBLEU_SEED": "sacreBLEU's paired-bootstrap seed, read as sacreBLEU reads it",
}


def _read_variables(text):
    constants = dict(re.findall(r'^(\w+_ENV) = "([A-Z0-9_]+)"', text, re.M))
    names = set(re.findall(r'environ(?:\.get\(|\[)\s*"([A-Z0-9_]+)"', text))
    names |= set(constants.values())  # a variable named by a constant counts whether read here or elsewhere
    return names


def test_the_package_reads_only_a_users_environment_variables():
    read = {}
    for folder, _, files in os.walk(os.path.join(ROOT, "fairseq_syntax")):
        for name in files:
            if name.endswith(".py"):
                path = os.path.join(folder, name)
                for var in _read_variables(open(path, encoding="utf-8").read()):
                    read.setdefault(var, []).append(os.path.relpath(path, ROOT))
    assert set(read) <= set(USERS_VARIABLES), {v: f for v, f in read.items() if v not in USERS_VARIABLES}
    assert "FAIRSEQ_SYNTAX_DEBUG" in read  # the scan sees constants


def test_the_write_boundaries_are_told_to_their_observers(tmp_path):
    from fairseq_syntax import durable_files

    seen = []
    durable_files.boundary_observers.append(seen.append)
    try:
        durable_files.atomic_write(str(tmp_path / "a"), b"x")
        durable_files.stamp_for(str(tmp_path / "a"), {"input": 1})
    finally:
        durable_files.boundary_observers.remove(seen.append)
    assert seen[0] == str(tmp_path / "a") and len(seen) == 2, seen
