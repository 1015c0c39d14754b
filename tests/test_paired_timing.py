"""examples/gpu/paired_timing.py on the CPU: the runner of the GPU's paired timings, end to end on tiny presets
and tiny synthetic batches (its statistics: test_timing_analysis.py; its memory: test_peak_memory.py)."""
import json
import os
import sys

import numpy as np

from helpers import ROOT

sys.path.insert(0, os.path.join(ROOT, "examples", "gpu"))
import paired_timing  # noqa: E402
import synthetic_bin  # noqa: E402


def test_synthetic_trees_are_valid():
    rng = np.random.default_rng(3)
    for n in (1, 2, 9, 60):
        words, heads = synthetic_bin.random_side(rng, n)
        w = int(words[-1])
        assert len(words) == len(heads) == n and words[0] == 1 and np.all(np.diff(words) >= 0)
        assert set(words.tolist()) == set(range(1, w + 1))
        head_of = {int(a): int(h) for a, h in zip(words, heads)}
        assert sum(h == 0 for h in head_of.values()) == 1  # one root
        for word in head_of:  # every word reaches the root: no cycle
            seen = set()
            while word:
                assert word not in seen
                seen.add(word)
                word = head_of[word]


def test_runner_smoke_on_tiny_presets(tmp_path):
    names = ["transformer", "transformer_dep_rel"]
    report = paired_timing.run(str(tmp_path), device="cpu", dtypes=("fp32",), models=names, blocks="wmt:256,wmt:512",
                               batches=2, rounds=2, warmup=1, profile_steps=1, tiny=True, vocab=200, budget=300)
    on_disk = json.load(open(tmp_path / "paired_timing.json"))
    assert on_disk["verdicts"] == json.loads(json.dumps(report["verdicts"])) and len(os.listdir(tmp_path)) == 1
    for key in ("wmt:256", "wmt:512"):
        block = on_disk["blocks"]["fp32"][key]
        assert list(block["times"]) == names
        for n in names:
            assert len(block["times"][n]) == 2 and all(len(r) == 2 for r in block["times"][n])
            assert all(t > 0 for r in block["times"][n] for t in r) and block["skipped_updates"][n] == 0
            assert block["kernel_ms"][n] > 0 and block["memory"][n]["peak_mib"] > 0
        a = block["analysis"]
        assert a["models"]["transformer_dep_rel"]["pairs"] == 4 and a["drift"] is not None
        assert block["memory"]["transformer"]["ratio"] == 1.0
        assert block["memory"]["transformer_dep_rel"]["ratio"] > 1  # its relative-position embeddings
        # batches of at most the block's tokens (sentences of 20 to 100 subwords and EOS)
        for bsz, width in zip(block["batch_sentences"], block["batch_source_width"]):
            assert bsz * 20 <= int(key.split(":")[1]) and bsz >= 1 and 21 <= width <= 101
    v = on_disk["verdicts"]["fp32"]
    assert set(v["models"]) == set(names[1:]) and v["regime"] in ("launch-bound", "compute-bound")
    assert v["models"]["transformer_dep_rel"]["step_goal"] == 1.10
    table = paired_timing.timing_analysis.markdown(on_disk)
    assert "| fp32 | wmt | 512 | transformer_dep_rel |" in table


def test_runner_out_of_time_records_every_block_as_skipped(tmp_path):
    report = paired_timing.run(str(tmp_path), device="cpu", dtypes=("fp32", "bf16"), models=["transformer"],
                               blocks="wmt:256,tanaka:256", tiny=True, vocab=200, budget=0)
    assert {d: {k: b["status"] for k, b in blocks.items()} for d, blocks in report["blocks"].items()} == {
        d: {"wmt:256": "skipped (time)", "tanaka:256": "skipped (time)"} for d in ("fp32", "bf16")}


def test_busy_time_counts_overlapping_intervals_once():
    assert paired_timing.busy_ns([(20, 25), (0, 10), (5, 15), (2, 3)]) == 20
    assert paired_timing.busy_ns([]) == 0


def test_an_update_fairseq_skipped_is_not_timed():
    """fairseq counts an update only when it was applied (not after an fp16 overflow): the timer reads that."""
    class Trainer:
        updates = 0

        def get_num_updates(self):
            return self.updates

        def train_step(self, samples):
            self.updates += samples[0] != "overflow"

    timer, trainer = paired_timing.StepTimer("cpu"), Trainer()
    assert timer(trainer, "batch")[2] is False and timer(trainer, "overflow")[2] is True
