"""The multi-seed Tanaka tables (examples/recipes/multiseed_table.py): every run its JSON names is counted, each
run's corpus scores are its own JSON's, and docs/recipes.md shows the committed JSON (the bootstrap itself is
tested in test_replicates.py)."""
import json
import os
import sys

import pytest

from helpers import ROOT

sys.path.insert(0, os.path.join(ROOT, "examples", "recipes"))
import multiseed_table  # noqa: E402


@pytest.mark.parametrize("dataset", sorted(multiseed_table.DATASETS))
def test_the_multiseed_json_is_the_committed_runs_and_the_docs_show_it(dataset):
    path = os.path.join(ROOT, "examples", dataset, "results", "multiseed.json")
    result = json.load(open(path, encoding="utf-8"))
    for row in result["rows"]:
        runs = multiseed_table.runs(dataset, row["model"])
        assert [{"seed": s, "cpu": c} for s, c, _ in runs] == row["runs"], row["model"]
        for (seed, cpu, _), bleu, ribes in zip(runs, row["metrics"]["bleu"]["replicates"],
                                               row["metrics"]["ribes"]["replicates"]):
            name = row["model"] if seed == 1 else f"{row['model']}_seed{seed}"
            own = json.load(open(os.path.join(ROOT, "examples", dataset, "results", cpu, f"{name}.json")))
            assert bleu == pytest.approx(own["sets"]["test"]["bleu"], abs=1e-9), (name, cpu)
            assert ribes == pytest.approx(own["sets"]["test"]["ribes"], abs=1e-9), (name, cpu)
    docs = open(os.path.join(ROOT, "docs", "recipes.md"), encoding="utf-8").read()
    marker = multiseed_table.MARKER.format(dataset=dataset)
    assert marker + "\n" + multiseed_table.markdown(result) + "\n" in docs
