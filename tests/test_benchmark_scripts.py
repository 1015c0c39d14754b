"""The benchmark scripts that the README's figures come from still run (on a tiny data-bin, few batches)."""
import os
import sys

import pytest
from helpers import ROOT

sys.path.insert(0, os.path.join(ROOT, "examples", "benchmark"))


def test_collation_benchmark_times_every_column(data_bin):
    import collation

    rows = collation.measure(data_bin, "tiny", repeats=1, max_batches=3)
    assert [r["batches"] for r in rows] == [s[0] for s in collation.SETTINGS]
    for r in rows:
        assert r["n_batches"] == 3 and sorted(r["ms_per_batch"]) == sorted(collation.COLUMNS)
        assert all(ms > 0 for ms in r["ms_per_batch"].values())
    table = collation.format_rows(rows)
    assert all(c in table.splitlines()[0] for c in collation.COLUMNS)


@pytest.mark.slow  # two CKY trainings: 12 s
def test_cky_subnormal_benchmark_trains_twice_and_records_every_update(data_bin, tmp_path):
    """Both runs train the same updates from the same seed; the JSON holds a record per update of each."""
    import json
    import subprocess

    out = tmp_path / "subnormal.json"
    train = [data_bin, "--user-dir", os.path.join(ROOT, "fairseq_syntax"), "--task", "translation",
             "--arch", "cky_lstm_tiny", "--optimizer", "adam", "--lr", "0.01", "--criterion", "cross_entropy",
             "--batch-size", "16", "--seed", "1", "--num-workers", "0"]
    result = subprocess.run([sys.executable, os.path.join(ROOT, "examples", "benchmark", "cky_subnormal.py"),
                             "--updates", "3", "--json", str(out), "--", *train],
                            capture_output=True, text=True, env={**os.environ, "OMP_NUM_THREADS": "1"}, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    record = json.loads(out.read_text())
    assert record["loss_and_gnorm_identical"] is True
    for name in ("passed_through", "dropped"):
        updates = record["per_update"][name]
        assert [u["update"] for u in updates] == [1, 2, 3]
        assert all(u["table_backward_s"] > 0 and 0 <= u["share_subnormal"] <= 1 for u in updates)
        assert "update_s" not in updates[0] and all(u["update_s"] > 0 for u in updates[1:])
