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


def test_speed_benchmark_gives_each_model_its_syntax_inputs_and_writes_its_rows(data_bin, tmp_path, monkeypatch):
    """examples/benchmark/speed.py (the benchmark table's script) on a tiny data-bin: every model trains and decodes
    on the same batches, which carry every syntax input; each model's forward gets the ones it declares."""
    import json

    import speed

    monkeypatch.setattr(speed.torch.cuda, "is_available", lambda: False)  # the CPU's rows (operators) on any host

    task = speed.load_task(data_bin)
    (batch,) = speed.batches(task, "train", 1, 256, speed.torch.device("cpu"))
    assert set(speed.INPUTS) <= set(batch["net_input"])
    model = speed.build("transformer_dep_rel", task, "small", speed.torch.device("cpu"))[0]
    assert "src_depths" in model.benchmark_inputs
    assert set(speed.for_model(model, batch)["net_input"]) & set(speed.INPUTS) == set(model.benchmark_inputs)
    out = tmp_path / "speed.json"
    speed.main([data_bin, "--models", "transformer,transformer_dep_rel", "--train-batches", "1", "--decode-batches",
                "1", "--repeats", "1", "--max-tokens", "256", "--json", str(out)])
    rows = json.load(open(out))["rows"]
    assert [r["model"] for r in rows] == ["transformer", "transformer_dep_rel"] and rows[0]["train_ratio"] == 1.0
    assert all(r["train_step_ms"] > 0 and r["decode_ms"] > 0 and r["peak_mem_mib"] > 0 for r in rows)
    # the operators: the relative terms add kernels to every layer, training and decoding
    assert all(0 < r["train_nonview_ops"] < r["train_ops"] and 0 < r["decode_nonview_ops"] < r["decode_ops"] for r in rows)
    assert rows[1]["train_nonview_ops_ratio"] > 1.05 and rows[1]["decode_nonview_ops_ratio"] > 1.05


def test_an_operator_count_is_what_torch_dispatches_and_its_views():
    import speed
    import torch

    assert speed.count_ops(lambda: (torch.ones(3, 4).t().contiguous() * 2).sum()) == (5, 4)  # t is the view
    x = torch.ones(3, requires_grad=True)
    forward = speed.count_ops(lambda: x.sin().sum())
    both = speed.count_ops(lambda: x.sin().sum().backward())  # the backward pass is counted too
    assert both[1] > forward[1] + 1


def test_the_operator_table_of_the_benchmarks_is_the_committed_counts():
    import json

    import speed

    rows = json.load(open(os.path.join(ROOT, "examples", "benchmark", "ops_base.json")))["rows"]
    assert speed.ops_markdown(rows) in open(os.path.join(ROOT, "docs", "benchmarks.md"), encoding="utf-8").read()
    assert {r["model"] for r in rows} == set(speed.MODELS)


def test_the_suite_timer_reads_pytests_counts_and_its_own_ancestry():
    import time_tests

    out = ("1.50s call captured output that looks like a duration\n"
           "===== slowest 2 durations =====\n39.31s call     tests/test_a.py::test_x[b c]\n"
           "3.30s setup    tests/test_b.py::test_y\n692 passed, 3 skipped, 1508 warnings in 435.92s (0:07:15)\n")
    assert time_tests.counts(out) == {"passed": 692, "skipped": 3} and time_tests.pytest_seconds(out) == 435.92
    assert time_tests.slowest(out) == [[39.31, "call", "tests/test_a.py::test_x[b c]"],
                                       [3.3, "setup", "tests/test_b.py::test_y"]]
    assert time_tests.slowest("39.31s call     tests/test_a.py::test_x\n") == []  # no durations section
    assert time_tests.slowest_markdown({"slowest": [[39.31, "call", "tests/test_a.py::test_x"]]}).splitlines()[-1] \
        == "| `test_a.py::test_x` | call | 39.3 |"
    assert time_tests.counts("1 error, 2 passed in 3.1s") == {"errors": 1, "passed": 2}
    assert time_tests.counts("1 failed, 18 passed, 34 warnings in 92.26s (0:01:32)") == {"failed": 1,
                                                                                            "passed": 18}
    assert time_tests.counts("no summary") == {} and time_tests.pytest_seconds("no summary") is None
    assert {os.getpid(), os.getppid()} <= time_tests.ancestors()
    assert time_tests.cpu()["avx512f"] in (True, False)
    assert time_tests.steal_percent([10, 0, 5, 80, 0, 0, 0, 5], [20, 0, 10, 155, 0, 0, 0, 15]) == 10.0
    assert time_tests.steal_percent(None, [1] * 8) is None


def test_the_suite_times_in_prose_are_the_records_of_the_commits_they_name():
    """Where docs/results.md or docs/development.md names a record's commit, its time and test count are there."""
    import json

    records = json.load(open(os.path.join(ROOT, "examples", "benchmark", "test_suite_times.json")))
    for page in (os.path.join("docs", "results.md"), os.path.join("docs", "development.md")):
        text = open(os.path.join(ROOT, page), encoding="utf-8").read()
        named = [r for r in records if r["commit"][:7] in text]
        for r in named:
            minutes, seconds = divmod(round(r["wall_seconds"]), 60)
            assert f"{r['wall_seconds']} s" in text or f"{minutes} min {seconds} s" in text, (page, r["commit"])
            assert str(r["counts"]["passed"]) in text, (page, r["commit"])


def test_align_binarize_reports_each_paths_fastest_run(tmp_path):
    """--repeat N alternates the paths and keeps each figure's fastest run: times the least, rates the most."""
    import json

    import align_binarize

    runs = [{"input": "x", "in_memory_align_s": 2.0, "in_memory_sent_per_s": 50, "streaming_s": 1.0},
            {"input": "x", "in_memory_align_s": 1.5, "in_memory_sent_per_s": 40, "streaming_s": 3.0}]
    assert align_binarize.fastest(runs) == {"input": "x", "in_memory_align_s": 1.5, "in_memory_sent_per_s": 50,
                                            "streaming_s": 1.0}
    out = tmp_path / "r.json"
    align_binarize.main(["--sentences", "300", "--repeat", "2", "--json", str(out)])
    res = json.loads(out.read_text())
    assert res["repeats"] == 2 and res["sentences"] == 300 and res["streaming_sent_per_s"] > 0


def test_the_sentencepiece_throughput_in_the_docs_is_the_jsons():
    import json

    record = json.load(open(os.path.join(ROOT, "examples", "benchmark", "align_binarize_sentencepiece_cpu.json")))
    text = " ".join(open(os.path.join(ROOT, "docs", "benchmarks.md"), encoding="utf-8").read().split())
    for r in record["treebanks"].values():
        s = r["sentencepiece"]
        for bpe, piece, ratio in (("in_memory_sent_per_s", "in_memory_sent_per_s", "in_memory_vs_bpe_in_memory"),
                                  ("streaming_sent_per_s", "streaming_sent_per_s", "streaming_vs_bpe_streaming")):
            assert f"{r[bpe]:,} against {s[piece]:,} ({s[ratio]}x)" in text
