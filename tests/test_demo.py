"""examples/demo/run.sh (over examples/demo/demo.py), the README's first command: it runs to its end at tiny sizes
and writes its record (examples/demo/record.py); the figures docs/results.md prints from a demo run are a committed
record's."""
import json
import os
import sys

import pytest

import forkserver
from helpers import ROOT, run

sys.path.insert(0, os.path.join(ROOT, "examples", "demo"))
import record  # noqa: E402

RECORDS = os.path.join(ROOT, "examples", "demo", "records.json")


def test_uas_lines_are_read_as_induce_parses_prints_them(tmp_path):
    log = tmp_path / "induce.log"
    log.write_text("2026-11-27 10:00:00 | INFO | x | loaded\n"
                   "UAS encoder parse head, split test: 93.50 (5450/5829 words)\n"
                   "UAS decoder (teacher forcing) parse head, split test: 24.21 (1610/6651 words); on words whose "
                   "head precedes them: 75.98 (1610/2119)\n")
    uas = record.read_uas(str(log))
    assert {k: v for k, v in uas["encoder"].items() if k != "line"} == {"uas": 93.5, "correct": 5450, "words": 5829}
    assert uas["decoder"]["preceding"] == {"uas": 75.98, "correct": 1610, "words": 2119}
    assert uas["decoder"]["line"].startswith("UAS decoder (teacher forcing)") and uas["decoder"]["words"] == 6651
    log.write_text("Traceback (most recent call last):\n")
    with pytest.raises(SystemExit, match="no 'UAS encoder' line"):
        record.read_uas(str(log))


def test_step_seconds_run_from_the_mark_before(tmp_path):
    times = tmp_path / "times.tsv"
    times.write_text("start 100.0\nenvironment 156.0\ncorpus 158.5\nprepare 190.0\ntrain 400.0\n")
    assert record.step_seconds(str(times)) == {"environment": 56.0, "corpus": 2.5, "prepare": 31.5, "train": 210.0,
                                               "total": 300.0, "demo": 244.0}
    times.write_text("corpus 158.5\n")
    with pytest.raises(SystemExit, match="first mark"):
        record.step_seconds(str(times))


@pytest.mark.slow
def test_demo_runs_to_its_end_and_writes_its_record(tmp_path):
    """Tiny sizes (200 pairs, 3 updates, 10 test sentences): every step runs, the printed lines are the record's,
    and DEMO_RECORD gets it appended (twice: a list)."""
    folder, records = tmp_path / "demo", tmp_path / "records.json"
    env = {**forkserver.environment(), "DEMO_DIR": str(folder), "DEMO_TRAIN": "200", "DEMO_UPDATES": "3",
           "DEMO_TEST": "10", "DEMO_RECORD": str(records)}
    p = run(["env", *[f"{k}={v}" for k, v in env.items()], "bash", os.path.join(ROOT, "examples", "demo", "run.sh")])
    rec = json.load(open(folder / "demo.json"))
    assert rec["settings"] == {"seed": 1, "updates": 3, "train": 200, "test": 10}
    assert set(rec["bleu"]) == {"transformer", "dep_rel", "dbsa"} and len(rec["commit"] or "") in (0, 40)
    assert f"transformer{' ' * 51} sacreBLEU {rec['bleu']['transformer']:6.2f}\n" in p.stdout
    assert "dbsa: " + rec["uas"]["encoder"]["line"] in p.stdout and rec["uas"]["encoder"]["words"] > 0
    assert "10 test sentences" in p.stdout
    assert f"   {'transformer':<12} {3:>4}/3   {'dep_rel':<12} {3:>4}/3   {'dbsa':<12} {3:>4}/3   \n" in p.stdout
    assert f"   dbsa: done training in {rec['train_seconds']['dbsa']} seconds\n" in p.stdout
    steps = rec["seconds"]
    assert list(steps)[:6] == list(record.STEPS) and all(steps[s] >= 0 for s in record.STEPS)
    assert steps["total"] >= steps["train"] > 0 and all(s > 0 for s in rec["train_seconds"].values())
    assert rec["machine"]["cores"] >= 1 and rec["new_sentence"]["ref"]
    assert p.stdout.rstrip().endswith(f"{steps['demo']:.0f} s of it the demo")
    assert json.load(open(records)) == [rec]


def _minutes(seconds):
    m, s = divmod(round(seconds), 60)
    return f"{m} min {s} s"


def test_the_results_page_prints_the_figures_of_the_demo_records_it_names():
    """Where docs/results.md names a record's commit, the lines it shows from that run are the record's: each model's
    sacreBLEU with its difference, the parse heads' UAS lines, and the wall time."""
    records = json.load(open(RECORDS, encoding="utf-8"))
    readme = open(os.path.join(ROOT, "docs", "results.md"), encoding="utf-8").read()
    named = [r for r in records if r["commit"] and r["commit"][:7] in readme]
    assert named, "docs/results.md names no demo record's commit"
    for r in named:
        assert r["changed_files"] == 0, r["commit"]  # the run was of the commit it names
        if r["settings"]["seed"] == 1:  # the printed block
            base = r["bleu"]["transformer"]
            assert f"transformer{' ' * 51} sacreBLEU {base:6.2f}" in readme
            for m in ("dep_rel", "dbsa"):
                assert f"{record.WHAT[m]:<62} sacreBLEU {r['bleu'][m]:6.2f}  ({r['bleu'][m] - base:+.2f})" in readme
            for side in r["uas"].values():
                assert "dbsa: " + side["line"] in readme
            for name, said in (("ref", "reference  "), ("transformer", "transformer"), ("dep_rel", "dep_rel    ")):
                assert f"{said} {r['new_sentence'][name]}\n" in readme
        else:  # a sentence: transformer X, dep_rel Y (+D), UAS Z
            d = r["bleu"]["dep_rel"] - r["bleu"]["transformer"]
            assert (f"transformer {r['bleu']['transformer']:.2f}, dep_rel {r['bleu']['dep_rel']:.2f} ({d:+.2f}), "
                    f"UAS {r['uas']['encoder']['uas']:.2f}") in readme.replace("\n", " ")
        if r["seconds"]["environment"] > 30:  # a fresh clone's first run: the wall-time table's row
            s = r["seconds"]
            assert f"{_minutes(s['total'])} (fresh clone of {r['commit'][:7]}" in readme
            assert f"{s['environment']:.0f} s to build `.venv`" in readme and f"{s['demo']:.0f} s of demo" in readme
