"""examples/setup_env.sh, sourced by every script: an active environment with fairseq and this checkout's plugin
is used as it is, and a build happens only where none is (a bare machine), announced in one line first; two
scripts started together (the two training queues, a recipe beside the tests) build or reinstall the
environment once, one after the other, never both at once into the same folder."""
import hashlib
import os
import subprocess
import sys

import pytest

from helpers import ROOT


def _fake_environment(tmp_path, stamp):
    """An environment whose python records each pip run (taking a second, so that two runs would overlap) and
    whose stamp says it was built from another setup.py."""
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "activate").write_text("")
    log = tmp_path / "pip.log"
    python = venv / "bin" / "python"
    python.write_text(f'#!/bin/sh\necho "start $$" >> "{log}"\nsleep 1\necho "end $$" >> "{log}"\n')
    python.chmod(0o755)
    (venv / ".fairseq_syntax_setup_v1").write_text(stamp + "\n")
    return venv, log


def test_two_scripts_reinstall_once_one_after_the_other(tmp_path):
    venv, log = _fake_environment(tmp_path, "0" * 16)
    env = dict(os.environ, FAIRSEQ_SYNTAX_VENV=str(venv))
    procs = [subprocess.Popen(["bash", "-c", f'source "{ROOT}/examples/setup_env.sh" && echo ready'], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)]
    outs = [p.communicate(timeout=60) for p in procs]
    assert all(p.returncode == 0 and out.strip() == "ready" for p, (out, _) in zip(procs, outs)), outs
    lines = log.read_text().split()
    assert lines[0::2] == ["start", "end"], lines  # one pip run, whole: the second script found it done
    with open(os.path.join(ROOT, "setup.py"), "rb") as f:
        want = hashlib.sha256(f.read()).hexdigest()[:16]
    assert (venv / ".fairseq_syntax_setup_v1").read_text().strip() == want
    assert sum("setup.py changed: reinstalling" in err for _, err in outs) == 1


def test_a_failed_reinstall_goes_on_with_the_environment_as_it_is(tmp_path):
    venv, log = _fake_environment(tmp_path, "0" * 16)
    (venv / "bin" / "python").write_text("#!/bin/sh\nexit 3\n")
    p = subprocess.run(["bash", "-c", f'source "{ROOT}/examples/setup_env.sh" && echo ready'], capture_output=True,
                       text=True, env=dict(os.environ, FAIRSEQ_SYNTAX_VENV=str(venv)))
    assert p.returncode == 0 and p.stdout.strip() == "ready" and "reinstalling failed" in p.stderr
    assert (venv / ".fairseq_syntax_setup_v1").read_text().strip() == "0" * 16  # tried again next time


def _checkout_and_environment(tmp_path, plugin_of):
    """A checkout (examples/setup_env.sh as it is, a build_env.sh that only records that it ran, a setup.py with
    two console scripts) and an active environment: ``python`` first on PATH, the base interpreter with a stub
    ``fairseq`` (unless ``plugin_of`` is "no-fairseq") and the ``fairseq_syntax`` of ``plugin_of`` ("checkout",
    "other": another checkout's) on its path, and one of the two console scripts."""
    import shutil

    repo = tmp_path / "repo"
    (repo / "examples").mkdir(parents=True)
    shutil.copy(os.path.join(ROOT, "examples", "setup_env.sh"), repo / "examples")
    (repo / "examples" / "build_env.sh").write_text(
        '#!/usr/bin/env bash\necho "build $1" >&2\nmkdir -p "$1/bin"\n: > "$1/bin/activate"\n')
    (repo / "setup.py").write_text('"fairseq-syntax-train=m:cli_main",\n"fairseq-syntax-generate=m:cli_main",\n')
    site = tmp_path / "site"
    site.mkdir()
    if plugin_of != "no-fairseq":
        (site / "fairseq").mkdir()
        (site / "fairseq" / "__init__.py").write_text("")
    other = tmp_path / "other"
    for folder in (repo, other):
        (folder / "fairseq_syntax").mkdir(parents=True)
        (folder / "fairseq_syntax" / "__init__.py").write_text("")
    path = [str(site)] + ([str(repo if plugin_of == "checkout" else other)] if plugin_of != "no-fairseq" else [])
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    base = getattr(sys, "_base_executable", sys.executable)  # the interpreter without this environment's packages
    (bin_dir / "python").write_text(f'#!/bin/sh\nexec "{base}" "$@"\n')
    (bin_dir / "fairseq-syntax-train").write_text("#!/bin/sh\n")
    for f in bin_dir.iterdir():
        f.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if k not in ("FAIRSEQ_SYNTAX_VENV", "VIRTUAL_ENV", "PYTHONHOME")}
    env.update(PATH=f"{bin_dir}:/usr/bin:/bin", PYTHONPATH=os.pathsep.join(path), PYTHONNOUSERSITE="1")
    p = subprocess.run(["bash", "-c", f'set -euo pipefail; source "{repo}/examples/setup_env.sh"; command -v python'],
                       capture_output=True, text=True, env=env, cwd=tmp_path)
    return repo, bin_dir, p


def test_an_active_environment_with_this_checkouts_plugin_is_used_as_it_is(tmp_path):
    """No second environment: nothing built, the active python stays first; a console script that setup.py
    lists and the environment lacks is named in one line, with the command that installs it."""
    repo, bin_dir, p = _checkout_and_environment(tmp_path, "checkout")
    assert p.returncode == 0 and p.stdout.strip() == str(bin_dir / "python"), p.stderr
    assert not (repo / ".venv").exists()
    assert p.stderr.splitlines() == [
        f"[setup] the active environment ({os.path.realpath(sys.base_prefix)}) lacks the console scripts "
        f"fairseq-syntax-generate (installed from an older setup.py): run pip install -e {repo} there"], p.stderr


@pytest.mark.parametrize("plugin_of,why", [
    ("other", "imports fairseq_syntax from {other}, not from this checkout"),
    ("no-fairseq", "has no fairseq"),  # a bare machine (CI's clean clone): the environment is built there
])
def test_without_a_usable_active_environment_the_build_is_announced_in_one_line(tmp_path, plugin_of, why):
    repo, bin_dir, p = _checkout_and_environment(tmp_path, plugin_of)
    venv = repo / ".venv"
    assert p.returncode == 0, p.stderr
    lines = p.stderr.splitlines()
    assert lines[1:] == [f"build {venv}"], p.stderr  # the announcement, then the build, nothing between
    announcement = lines[0]
    assert announcement.startswith(f"[setup] building a virtual environment in {venv} (") and "2 GB" in announcement
    assert why.format(other=tmp_path / "other") in announcement and f"({bin_dir / 'python'})" in announcement
    assert f"pip install -e {repo}" in announcement and "FAIRSEQ_SYNTAX_VENV=none" in announcement
    assert (venv / ".fairseq_syntax_setup_v1").exists()
