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
    means = {row["model"]: row["metrics"] for row in result["rows"]}
    for row in result["rows"]:
        for metric in multiseed_table.METRICS:
            m = row["metrics"][metric]
            assert len(m["replicates"]) == len(row["runs"]), (row["model"], metric)
            if row["baseline"] is not None:
                both = [r for r in row["runs"] if r in row["baseline_runs"]]  # same seed and CPU
                assert (row["matched"] or {}).get("pairs", []) == both, row["model"]
                assert len(row["baseline_runs"]) == len(multiseed_table.runs(dataset, row["baseline"]))
                assert m["baseline_mean"] == pytest.approx(means[row["baseline"]][metric]["mean"], abs=1e-9)
                assert m["difference"] == pytest.approx(m["mean"] - m["baseline_mean"], abs=1e-9)
    docs = open(os.path.join(ROOT, "docs", "recipes.md"), encoding="utf-8").read()
    marker = multiseed_table.MARKER.format(dataset=dataset)
    assert marker + "\n" + multiseed_table.markdown(multiseed_table.dataset_table(result)) + "\n" in docs
    pages = docs + open(os.path.join(ROOT, "docs", "results.md"), encoding="utf-8").read()
    for name, (of, rows) in multiseed_table.VIEWS.items():  # each view's rows, in the view's order, on its page
        if of == dataset:
            shown = multiseed_table.view(name, [result])
            assert [(r["model"], r["baseline"]) for r in shown["rows"]] == [r for r in rows if r in {
                (x["model"], x["baseline"]) for x in result["rows"]}]
            assert multiseed_table.MARKER.format(dataset=name) + "\n" + multiseed_table.markdown(shown) + "\n" in pages


@pytest.mark.slow  # one row's bootstrap on 500 sentences: a few seconds
def test_a_row_of_the_committed_json_is_what_the_bootstrap_gives_today():
    """Recomputed from the committed translations and the corpus's references, a compared row of the committed
    JSON is unchanged, p-values included: a JSON left behind by a change to the test fails here."""
    from conftest import require_shared

    corpus = require_shared("data", "small_parallel_enja")
    dataset = "tanaka-ja-en"
    result = json.load(open(os.path.join(ROOT, "examples", dataset, "results", "multiseed.json"), encoding="utf-8"))
    row = next(r for r in result["rows"] if r["model"] == "dep_rel" and r["baseline"] == "rel")
    from fairseq_syntax.evaluation.replicates import compare

    got = compare([h for *_, h in multiseed_table.runs(dataset, "dep_rel")],
                  [h for *_, h in multiseed_table.runs(dataset, "rel")],
                  multiseed_table.references(dataset, corpus), result["tokenize"], ("bleu", "ribes"),
                  result["resamples"])
    for metric in ("bleu", "ribes"):
        assert got[metric]["p_value"] == row["metrics"][metric]["p_value"], metric
        assert got[metric]["p_sacrebleu"] == row["metrics"][metric]["p_sacrebleu"], metric
        assert got[metric]["difference"] == pytest.approx(row["metrics"][metric]["difference"], abs=1e-9)


def test_the_readings_quote_p_values_and_spreads_the_multiseed_json_gives():
    """Every p and every ± of docs/results.md's "What it says" bullets and of the README's advice is one of the
    committed multi-seed JSON's (pooled or same-seed-and-CPU p, a run pool's sd), so the prose cannot drift from
    the table when a seed lands."""
    import re

    ps, sds = set(), set()
    for dataset in multiseed_table.DATASETS:
        result = json.load(open(os.path.join(ROOT, "examples", dataset, "results", "multiseed.json")))
        for row in result["rows"]:
            if row.get("matched"):
                ps.add(f"{row['matched']['p_value']:.3f}")
            for m in row["metrics"].values():
                if "p_value" in m:
                    ps.add(f"{m['p_value']:.3f}")
                sds.update(f"{m[k]:.2f}" for k in ("sd", "baseline_sd") if m.get(k) is not None)
    results = open(os.path.join(ROOT, "docs", "results.md"), encoding="utf-8").read()
    section = results[results.index("What it says"):results.index("The full tables")]
    readme = open(os.path.join(ROOT, "README.md"), encoding="utf-8").read()
    advice = readme[readme.index("Which model first"):readme.index("## Quickstart")]
    quoted_p, quoted_sd = re.findall(r"\bp (0\.\d{3})", section), re.findall(r"± (\d+\.\d\d)", section)
    assert len(quoted_p) >= 10 and len(quoted_sd) >= 4 and re.findall(r"\bp (0\.\d{3})", advice)
    quoted_p += re.findall(r"\bp (0\.\d{3})", advice)
    assert [p for p in quoted_p if p not in ps] == [] and [s for s in quoted_sd if s not in sds] == []


def test_runs_trained_on_other_text_are_not_pooled_or_compared(tmp_path, monkeypatch):
    """A data-bin prepared again otherwise (another parser version's tokens, other BPE codes) gives the runs
    trained on it other text: the table refuses to average them with, or test them against, runs whose JSON
    records other dictionaries or codes; runs that record none (collected before the record) are not held to
    it, and another variant of the data-bin (C&H's multi-task corpus) is other text by design."""
    results = tmp_path / "examples" / "tanaka-ja-en" / "results"

    def data(variant, codes):
        return {"variant": variant, "dictionaries": {"dict.ja.txt": "d"}, "bpe_codes": {"ja": codes}}

    for cpu, name, record in (("amd-epyc", "rel", data("main", "a")), ("amd-epyc", "rel_seed2", data("main", "a")),
                              ("intel-xeon", "rel_seed3", {}), ("amd-epyc", "ch", data("ch", "d")),
                              ("amd-epyc", "transformer", data("main", "b"))):
        (results / cpu).mkdir(parents=True, exist_ok=True)
        (results / cpu / f"{name}.json").write_text(json.dumps({"data": record}))
    monkeypatch.setattr(multiseed_table, "ROOT", str(tmp_path))
    multiseed_table.check_one_text("tanaka-ja-en", ["rel"])  # two equal records and one unknown
    multiseed_table.check_one_text("tanaka-ja-en", ["ch", "rel"])  # another variant: other text by design
    with pytest.raises(SystemExit, match=r"rel and transformer trained on other text: BPE codes ja \(b, a\)"):
        multiseed_table.check_one_text("tanaka-ja-en", ["rel", "transformer"])
    (results / "amd-epyc" / "rel_seed4.json").write_text(json.dumps({"data": data("main", "c")}))
    with pytest.raises(SystemExit, match="runs of rel trained on other text"):
        multiseed_table.check_one_text("tanaka-ja-en", ["rel"])


def test_the_tree_control_curve_is_what_the_committed_results_give(tmp_path, monkeypatch):
    """examples/recipes/tree_control_curve.py: the committed curve JSON is today's reading of multiseed.json and
    of the control runs' tree records (each point's UAS is its runs' data.tree_control); runs of one model on
    two sets of trees are refused."""
    import shutil

    import tree_control_curve

    dataset = "tanaka-ja-en"
    path = os.path.join(ROOT, "examples", dataset, "results", "controls", "tree_controls.json")
    result = tree_control_curve.curve(dataset)
    assert json.load(open(path, encoding="utf-8")) == result
    kinds = {p["kind"]: p for p in result["points"]}
    assert kinds["parser"]["uas"] == 100.0 and {"random", "right-chain", "noise:0.3"} <= set(kinds)
    assert [p["uas"] for p in result["points"]] == sorted(p["uas"] for p in result["points"])
    results = tmp_path / "examples" / dataset / "results"
    for cpu in ("a", "b"):
        (results / cpu).mkdir(parents=True)
    src = os.path.join(ROOT, "examples", dataset, "results", "intel-xeon", "dep_rel_random.json")
    shutil.copy(src, results / "a" / "dep_rel_random.json")
    other = json.load(open(src, encoding="utf-8"))
    other["data"]["tree_control"]["seed"] = 2
    (results / "b" / "dep_rel_random_seed2.json").write_text(json.dumps(other))
    monkeypatch.setattr(tree_control_curve, "ROOT", str(tmp_path))
    with pytest.raises(SystemExit, match="one control, one set of trees"):
        tree_control_curve.control_uas(dataset, "dep_rel_random")


def test_the_tree_control_reading_quotes_the_committed_rows():
    """Every signed BLEU difference and every p of the results page's tree-control section (and of the README's
    sentence on it) is one of the view's rows in the committed multi-seed JSON, or the curve's UAS a point's."""
    import re

    result = json.load(open(os.path.join(ROOT, "examples", "tanaka-ja-en", "results", "multiseed.json")))
    _, rows = multiseed_table.VIEWS["tanaka-ja-en tree controls"]
    shown = [r for r in result["rows"] if (r["model"], r["baseline"]) in rows]
    diffs = {f"{m['difference']:+.2f}" for r in shown for m in r["metrics"].values()}
    ps = {f"{m['p_value']:.3f}" for r in shown for m in r["metrics"].values()}
    means = {f"{m['mean']:.2f}" for r in shown for m in r["metrics"].values()}
    diffs |= {f"{r['matched']['difference']:+.2f}" for r in shown if r.get("matched")}  # same seed and CPU
    ps |= {f"{r['matched']['p_value']:.3f}" for r in shown if r.get("matched")}
    curve = json.load(open(os.path.join(ROOT, "examples", "tanaka-ja-en", "results", "controls", "tree_controls.json")))
    uas = {f"{p['uas']:.1f}" for p in curve["points"]} | {f"{p['uas']:.2f}" for p in curve["points"]}
    page = open(os.path.join(ROOT, "docs", "results.md"), encoding="utf-8").read()
    section = page[page.index("## Is it the tree?"):]
    section = re.sub(r"```.*?```", "", section[:section.index("Parser-free decoding")], flags=re.S)
    prose = "\n".join(line for line in section.splitlines() if not line.startswith(("|", "<!--")))
    readme = open(os.path.join(ROOT, "README.md"), encoding="utf-8").read()
    prose += "\n" + next(par for par in readme.split("\n\n") if "Is it the tree?" in par)
    quoted = re.findall(r"[+-]\d+\.\d\d\b", prose)
    assert quoted and [d for d in quoted if d not in diffs] == []
    assert [p for p in re.findall(r"\bp (0\.\d{3})", prose) if p not in ps] == []
    assert [u for u in re.findall(r"UAS (\d+\.\d+)", prose) if u not in uas] == []
    assert [b for b in re.findall(r"(?<![+\-.\d])(\d\d\.\d\d) BLEU", prose) if b not in means] == []
