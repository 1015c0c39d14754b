"""examples/recipes/compare_results.py: two folders of results JSON, model by model."""
import json
import os
import sys

import pytest

from helpers import ROOT

sys.path.insert(0, os.path.join(ROOT, "examples", "recipes"))
import compare_results  # noqa: E402


def write(folder, model, bleu16, bleu17, nll):
    os.makedirs(folder, exist_ok=True)
    result = {"model": model, "baseline": None, "sets": {"test2016": {"bleu": bleu16, "chrf": 50.0},
                                                         "test2017": {"bleu": bleu17, "chrf": 40.0}},
              "training": {"best": {"valid_metric": nll}}}
    with open(os.path.join(folder, f"{model}.json"), "w") as f:
        json.dump(result, f)


def test_compare_results(tmp_path, capsys):
    a, b = str(tmp_path / "a"), str(tmp_path / "b")
    write(a, "transformer", 34.60, 26.84, 2.897)
    write(b, "transformer", 34.82, 26.74, 2.894)
    write(a, "rel", 36.0, 27.0, 2.8)  # in A only: not compared
    write(b, "dep", 35.0, 26.0, 2.8)
    with open(os.path.join(b, "notes.json"), "w") as f:  # a JSON that is not a result is skipped
        json.dump({"what": "else"}, f)
    compare_results.main([a, b])
    out = capsys.readouterr().out
    rows = [line for line in out.splitlines() if line.startswith("| transformer")]
    assert rows == ["| transformer | 34.60 | 34.82 | +0.22 | +0.0 | 26.84 | 26.74 | -0.10 | +0.0 | 2.897 | 2.894 |"]
    assert "| rel" not in out and "| dep" not in out
    assert "1 models, 2 test sets: mean |B - A| 0.16 BLEU, largest +0.22" in out
    with pytest.raises(SystemExit, match="no model"):
        compare_results.main([a, str(tmp_path / "empty")])
