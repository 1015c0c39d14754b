"""examples/setup_env.sh, sourced by every script: two scripts started together (the two training queues, a
recipe beside the tests) build or reinstall the environment once, one after the other, never both at once into
the same folder."""
import hashlib
import os
import subprocess

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
