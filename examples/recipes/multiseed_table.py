#!/usr/bin/env python
"""The Tanaka tables over seeds: per model and metric (BLEU, chrF, RIBES) the mean and standard deviation over
its runs (sample sd), the difference of means to its baseline and the two-sided p-value of a paired bootstrap
over test sentences that averages over the runs (fairseq_syntax/evaluation/replicates.py; Clark et al. 2011),
from the committed translations alone. The JSON keeps sacreBLEU's paired-bootstrap p of the same resamples
beside it (p_sacrebleu), which is smaller.

A model's runs are every JSON of it (``MODEL.json`` is seed 1, ``MODEL_seedN.json`` seed N) in the dataset's
results folders, one folder per CPU: the same seed trained on two CPUs counts twice, the CPU being part of
the run-to-run variance (the same seed lands about one BLEU apart on two CPUs here). The pools need not
match: the transformer has a run on each CPU for seed 1, most models one. So each compared row also gives
the BLEU difference and p over the runs that have a partner of the same seed and CPU on the other side
(``matched``; the recipes' own per-seed test pairs runs that way), which moves with fewer runs but compares
like with like. The references come from
the corpus, scored as the recipes score them (Ja->En on the corpus's English tokens; En->Ja detokenised
against the raw Japanese with sacreBLEU's ja-mecab tokenizer).

    python examples/recipes/multiseed_table.py --json                # write each dataset's results/multiseed.json
    python examples/recipes/multiseed_table.py --write docs/recipes.md docs/results.md   # and the tables after
                                                                         # the markers (VIEWS: some rows apart)
"""
import argparse
import glob
import json
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "examples", "recipes"))  # results_table

#: dataset -> (models in table order with their baselines, the metrics' tokenisation)
DATASETS = {
    "tanaka-ja-en": ([("transformer", None), ("rel", "transformer"), ("dep_rel", "transformer"),
                      ("dep_rel", "rel"), ("pascal", "transformer"), ("sh", "transformer"),
                      ("dbsa_enc", "transformer"), ("dbsa_sync", "transformer"), ("syncattn", "transformer"),
                      ("syncattn", "dbsa_sync"), ("lstm_luong_lr001", None),
                      ("cky_lstm_lr001", "lstm_luong_lr001"), ("transformer_spm", None),
                      ("dep_rel_spm", "transformer_spm"), ("transformer_spm", "transformer"),
                      ("dep_rel_spm", "dep_rel"), ("transformer_ft", None), ("dep_rel_ft", "transformer_ft"),
                      ("dep_rel_u3000", "transformer_ft"), ("dep_rel_u3000", "dep_rel_ft")], "none"),
    "tanaka-en-ja": ([("transformer", None), ("rel", "transformer"), ("dep_rel", "transformer"),
                      ("dep_rel", "rel"), ("pascal_wat", "transformer"), ("sh", "transformer")], "ja-mecab"),
}
METRICS = ("bleu", "chrf", "ribes")
MARKER = "<!-- multi-seed table {dataset} (examples/recipes/multiseed_table.py) -->"
#: the Tanaka recipe's tree-control variants trained (dep_rel_CONTROL; docs/data.md#tree-controls)
TREE_CONTROLS = ("random", "right_chain", "noise05", "noise03", "noise015")
#: a table of some rows of a dataset's, for a page of its own: name -> (dataset, its (model, baseline) rows)
VIEWS = {
    "tanaka-ja-en sentencepiece": ("tanaka-ja-en", [("transformer", None), ("dep_rel", "transformer"),
                                                    ("transformer_spm", None), ("dep_rel_spm", "transformer_spm"),
                                                    ("transformer_spm", "transformer"), ("dep_rel_spm", "dep_rel")]),
    "tanaka-ja-en fine-tuning": ("tanaka-ja-en", [("transformer_ft", None), ("dep_rel_ft", "transformer_ft"),
                                                  ("dep_rel_u3000", "transformer_ft"), ("dep_rel_u3000", "dep_rel_ft")]),
    "tanaka-ja-en tree controls": ("tanaka-ja-en", [("dep_rel", "rel")] + [
        (f"dep_rel_{control}", "dep_rel") for control in TREE_CONTROLS]),
}
#: rows of a dataset's JSON that no table shows (tree_control_curve.py reads them)
JSON_ROWS = {"tanaka-ja-en": [(f"dep_rel_{control}", "rel") for control in TREE_CONTROLS]}


def runs(dataset, model):
    """[(seed, cpu folder, translation lines)] of every committed run of ``model``."""
    out = []
    for path in sorted(glob.glob(os.path.join(ROOT, "examples", dataset, "results", "*", "*.json"))):
        name = os.path.basename(path)[:-5]
        m = re.fullmatch(rf"{re.escape(model)}(?:_seed(\d+))?", name)
        if not m:
            continue
        if m.group(1) is not None and int(m.group(1)) < 2:  # seed 1 is MODEL.json: this would count it twice
            raise SystemExit(f"{path}: seed {m.group(1)} as _seedN (seed 1 is {model}.json, seeds 2.. _seedN)")
        cpu = os.path.basename(os.path.dirname(path))
        with open(os.path.join(os.path.dirname(path), "translations", f"{name}.txt"), encoding="utf-8") as f:
            out.append((int(m.group(1) or 1), cpu, [line.rstrip("\n") for line in f]))
    return sorted(out, key=lambda r: (r[0], r[1]))


def check_one_text(dataset, models):
    """Refuse to pool or compare runs that trained on other text: what their JSON records of it
    (results_table.py's "data", absent from runs collected before it) must agree over ``models``' runs of one
    data-bin variant (results_table.text_difference)."""
    from results_table import text_difference

    seen = []
    for model in models:
        for path in sorted(glob.glob(os.path.join(ROOT, "examples", dataset, "results", "*", "*.json"))):
            if re.fullmatch(rf"{re.escape(model)}(?:_seed\d+)?", os.path.basename(path)[:-5]):
                data = json.load(open(path, encoding="utf-8")).get("data") or {}
                for other, other_path in seen:
                    differ = text_difference(data, other)
                    if differ:
                        raise SystemExit(f"{dataset}: runs of {' and '.join(models)} trained on other text: {differ} "
                                         f"differ between {path} and {other_path}; a data-bin prepared again "
                                         "otherwise: train them on one data-bin")
                seen.append((data, path))


def references(dataset, corpus):
    lang = dataset.rsplit("-", 1)[1]
    with open(os.path.join(corpus, f"test.{lang}"), encoding="utf-8") as f:
        lines = [line.rstrip("\n") for line in f]
    return [line.replace(" ", "") for line in lines] if lang == "ja" else lines  # ja: the raw reference


def table(dataset, corpus, n_samples=1000):
    from fairseq_syntax.evaluation.replicates import compare, summarize

    rows_spec, tokenize = DATASETS[dataset]
    extra = [row for d, rows in VIEWS.values() if d == dataset for row in rows] + JSON_ROWS.get(dataset, [])
    rows_spec = rows_spec + [row for row in dict.fromkeys(extra) if row not in rows_spec]
    refs = references(dataset, corpus)
    rows = []
    for model, base in rows_spec:
        mine = runs(dataset, model)
        if not mine:
            continue
        check_one_text(dataset, [model] + [base] * (base is not None))
        row = {"model": model, "baseline": base, "runs": [{"seed": s, "cpu": c} for s, c, _ in mine]}
        if base is None:
            row["metrics"] = summarize([h for _, _, h in mine], refs, tokenize, METRICS)
        else:
            theirs = runs(dataset, base)
            row["baseline_runs"] = [{"seed": s, "cpu": c} for s, c, _ in theirs]
            res = compare([h for _, _, h in mine], [h for _, _, h in theirs], refs, tokenize, METRICS, n_samples)
            row["metrics"] = {k: {"mean": v["system"]["mean"], "sd": v["system"]["sd"],
                                  "replicates": v["system"]["replicates"], "baseline_mean": v["baseline"]["mean"],
                                  "baseline_sd": v["baseline"]["sd"], "difference": v["difference"],
                                  "p_value": v["p_value"], "p_sacrebleu": v["p_sacrebleu"]}
                              for k, v in res.items()}
            row["matched"] = matched(mine, theirs, refs, tokenize, n_samples)
        rows.append(row)
    return {"dataset": dataset, "tokenize": tokenize, "resamples": n_samples,
            "test": "paired bootstrap over test sentences averaging over runs (Clark et al. 2011); p_value: two-sided, "
                    "the resampled differences shifted to mean zero against the observed one; p_sacrebleu: "
                    "sacreBLEU's --paired-bs statistic on the same resamples", "rows": rows}


def matched(mine, theirs, refs, tokenize, n_samples):
    """BLEU over the runs with a partner of the same seed and CPU on the other side: {"pairs", "difference",
    "p_value"}, or None when no run has one."""
    from fairseq_syntax.evaluation.replicates import compare

    theirs_by = {(s, c): h for s, c, h in theirs}
    pairs = [(s, c, h, theirs_by[s, c]) for s, c, h in mine if (s, c) in theirs_by]
    if not pairs:
        return None
    res = compare([p[2] for p in pairs], [p[3] for p in pairs], refs, tokenize, ("bleu",), n_samples)["bleu"]
    return {"pairs": [{"seed": s, "cpu": c} for s, c, _, _ in pairs], "difference": res["difference"],
            "p_value": res["p_value"]}


def markdown(result):
    lines = ["| model (runs) | baseline (runs) | BLEU mean ± sd | Δ BLEU (p) | chrF mean ± sd | Δ chrF (p) | RIBES mean ± "
             "sd | Δ RIBES (p) | Δ BLEU same seed and CPU (p; pairs) |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in result["rows"]:
        cells = [f"{r['model']} ({len(r['runs'])})",
                 "-" if r["baseline"] is None else f"{r['baseline']} ({len(r['baseline_runs'])})"]
        for k in METRICS:
            m = r["metrics"][k]
            cells.append(f"{m['mean']:.2f} ± {m['sd']:.2f}" if len(r["runs"]) > 1 else f"{m['mean']:.2f}")
            cells.append("" if r["baseline"] is None else f"{m['difference']:+.2f} ({m['p_value']:.3f})")
        same = r.get("matched")
        cells.append(f"{same['difference']:+.2f} ({same['p_value']:.3f}; {len(same['pairs'])})" if same else
                     "" if r["baseline"] is None else "none")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def view(name, results):
    """The rows of view ``name`` (:data:`VIEWS`) out of its dataset's result, in the view's order."""
    dataset, rows = VIEWS[name]
    result = next(r for r in results if r["dataset"] == dataset)
    by = {(r["model"], r["baseline"]): r for r in result["rows"]}
    return {**result, "rows": [by[key] for key in rows if key in by]}


def dataset_table(result):
    """A dataset's result with its :data:`DATASETS` rows alone (a row only a view names is in the JSON and in
    its view)."""
    rows = DATASETS[result["dataset"]][0]
    return {**result, "rows": [r for r in result["rows"] if (r["model"], r["baseline"]) in rows]}


def tables(results):
    """(marker, Markdown) of every dataset's table and of every view of them."""
    out = [(MARKER.format(dataset=r["dataset"]), markdown(dataset_table(r))) for r in results]
    have = {r["dataset"] for r in results}
    return out + [(MARKER.format(dataset=name), markdown(view(name, results))) for name, (dataset, _) in
                  VIEWS.items() if dataset in have]


def write_markdown(path, results):
    """Every table whose marker ``path`` holds (a file with none of them is an error)."""
    text = open(path, encoding="utf-8").read()
    found = [(marker, table) for marker, table in tables(results) if marker in text]
    if not found:
        raise SystemExit(f"{path}: no table marker ({MARKER.format(dataset='NAME')}) to write a table after")
    for marker, table in found:
        block = marker + "\n" + table + "\n"
        start = text.index(marker)
        end = text.find("\n\n", start)
        end = len(text) if end < 0 else end + 1
        text = text[:start] + block + text[end:]
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__.split("\n\n", 1)[1])
    p.add_argument("--corpus", default=os.path.join(os.environ.get("FAIRSEQ_SYNTAX_SHARED",
                                                                   os.path.join(os.path.dirname(ROOT), "shared")),
                                                    "data", "small_parallel_enja"),
                   help="small_parallel_enja's folder (its test.en / test.ja)")
    p.add_argument("--datasets", nargs="+", default=list(DATASETS))
    p.add_argument("--samples", type=int, default=1000, help="bootstrap resamples (default 1000)")
    p.add_argument("--json", action="store_true", help="write examples/DATASET/results/multiseed.json")
    p.add_argument("--write", nargs="+", default=(), metavar="FILE",
                   help="Markdown files whose table markers to rewrite (docs/recipes.md, docs/results.md)")
    args = p.parse_args(argv)
    results = []
    for dataset in args.datasets:
        result = table(dataset, args.corpus, args.samples)
        results.append(result)
        print(f"### {dataset}\n\n{markdown(result)}\n")
        if args.json:
            with open(os.path.join(ROOT, "examples", dataset, "results", "multiseed.json"), "w", encoding="utf-8") as f:
                json.dump(result, f, indent=1, sort_keys=True)
                f.write("\n")
    for path in args.write:
        write_markdown(path, results)


if __name__ == "__main__":
    main()
