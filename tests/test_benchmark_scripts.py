"""The benchmark scripts that the README's figures come from still run (on a tiny data-bin, few batches)."""
import os
import sys

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
