#!/usr/bin/env python
"""Collect a recipe's evaluation results into one JSON per model and a Markdown table.

Reads, for every model that ``evaluate.sh`` has scored, ``$WORK/eval/MODEL/[SET/]scores.json`` (sacreBLEU,
chrF, the paired bootstrap test against the model's baseline), ``$WORK/eval/MODEL/uas.txt`` (the parse heads'
UAS) and the training state of ``$WORK/checkpoints/MODEL/checkpoint_last.pt`` and ``checkpoint_best.pt``
(updates, training time, the epoch and validation NLL of the checkpoint scored), the CPU it runs on (run it
where the models trained), and the scores against the
paper's other baselines (``ALSO_AGAINST``: ``[SET/]vs_BASE/scores.json``, one more row each, under
``also_against`` in the JSON). Writes ``OUT/MODEL.json`` and the scored (detokenised) translations,
``OUT/translations/MODEL[.SET].txt``, so that a bootstrap test against any row can be run again without the
checkpoints (``fairseq-syntax-evaluate --hyp A --baseline B --ref REF``), and prints the table (Markdown).

    python examples/recipes/results_table.py --work /work/m30k --sets test2016 test2017 \\
        --models transformer transformer_seed2 rel ... --out examples/multi30k-en-de/results
"""
import argparse
import functools
import json
import os
import platform
import re
import shutil
import sys


def parse_uas(path):
    """{'encoder': 83.1, 'decoder': 61.2, 'decoder_preceding': 67.2} from fairseq-syntax-induce-parses' printed
    lines; ``decoder_preceding``: the decoder head's UAS on the words whose head precedes them (the only heads
    a decoder head can see)."""
    uas = {}
    if not os.path.exists(path):
        return uas
    for line in open(path, encoding="utf-8"):
        m = re.match(r"UAS (encoder|decoder)\b.*?: (\d+\.\d+) \((\d+)/(\d+) words\)", line)
        if m:
            uas[m.group(1)] = float(m.group(2))
            preceding = re.search(r"on words whose head precedes them: (\d+\.\d+) \(", line)
            if preceding:
                uas[f"{m.group(1)}_preceding"] = float(preceding.group(1))
    return uas


@functools.lru_cache(maxsize=2)
def load_checkpoint(path):
    """A checkpoint read once for training_state and trained_data, which read the scored one in turn (the last
    two kept: a row's last and best)."""
    import torch

    import fairseq_syntax.plugin  # noqa: F401  (allow-lists the globals fairseq checkpoints pickle)

    return torch.load(path, map_location="cpu")


def training_state(ckpt_dir):
    """Updates, cumulative training seconds, and the scored (best) checkpoint's epoch and validation NLL."""
    state = {}
    for name, key in (("checkpoint_last.pt", "last"), ("checkpoint_best.pt", "best")):
        path = os.path.join(ckpt_dir, name)
        if not os.path.exists(path):
            continue
        ck = load_checkpoint(os.path.realpath(path))
        extra = ck.get("extra_state") or {}
        itr = extra.get("train_iterator") or {}
        entry = {"epoch": itr.get("epoch"), "updates": (ck.get("optimizer_history") or [{}])[-1].get("num_updates"),
                 "train_seconds": round(float(extra.get("previous_training_time", 0.0)), 1)}
        if isinstance(extra.get("val_loss"), (int, float)):  # the --best-checkpoint-metric of this checkpoint
            entry["valid_metric"] = float(extra["val_loss"])
        state[key] = entry
    return state


def trained_data(checkpoint):
    """What a checkpoint recorded of the text it was trained on, when it was trained (the task state's digests,
    fairseq_syntax.tasks.syntax_translation): {"variant": its data-bin's folder (the recipes'
    WORK/VARIANT/data-bin, from cfg.task.data), "dictionaries": {dict.LANG.txt: digest of its symbols},
    "tree_control": its data-bin's tree control (tree_control) where it has one,
    "bpe_codes": {LANG: SHA-256 of the codes}, "files": {data-bin file: SHA-256} (the recipe's trained_on.txt
    beside it, written at the training's first start, for any task)}; the parses' label dictionaries are left
    out. {} without a checkpoint or for one that records none of these."""
    if not checkpoint or not os.path.exists(checkpoint):
        return {}
    return dict(_trained_data(os.path.realpath(checkpoint)))


@functools.lru_cache(maxsize=None)
def _trained_data(checkpoint):
    from fairseq_syntax.preparation.trained_on import SAVED_TREE_CONTROL
    from fairseq_syntax.tasks.syntax_translation import SAVED_BPE_CODES, SAVED_DICTIONARIES

    ck = load_checkpoint(checkpoint)
    state = ck.get("task_state") or {}
    dictionaries = {k: v for k, v in (state.get(SAVED_DICTIONARIES) or {}).items() if not k.endswith(".labels.txt")}
    codes = dict(state.get(SAVED_BPE_CODES) or {})
    files = {}  # the recipe's record at the training's first start (runner/train_step.py): any task
    record = os.path.join(os.path.dirname(checkpoint), "trained_on.txt")
    if os.path.exists(record):
        for line in open(record, encoding="utf-8"):
            digest, _, name = line.strip().partition("  ")
            if name:
                files[name] = digest
    if not dictionaries and not codes and not files:
        return ()
    data = str(((ck.get("cfg") or {}).get("task") or {}).get("data") or "").split(":")[0]
    out = {"variant": os.path.basename(os.path.dirname(os.path.normpath(data))) if data else None}
    for key, value in (("dictionaries", dictionaries), ("bpe_codes", codes), ("files", files),
                       ("tree_control", tree_control(data, state.get(SAVED_TREE_CONTROL)))):
        if value:
            out[key] = value
    return tuple(out.items())


def tree_control(data_bin, saved):
    """The tree control a checkpoint was trained with (``saved``, its task state's "KIND, seed N"), as its
    data-bin's preparation.json gives it: kind, seed and each split's UAS against the parser's trees
    (docs/data.md#tree-controls); None for a model of the parser's trees. A data-bin prepared again with another
    control since is an error."""
    if not saved or saved == "none":
        return None
    path = os.path.join(data_bin, "preparation.json")
    entry = json.load(open(path, encoding="utf-8")).get("tree_control") if os.path.exists(path) else None
    if not entry or f"{entry['kind']}, seed {entry['seed']}" != saved:
        raise SystemExit(f"error: {path}: the checkpoint was trained on --tree-control {saved}, the data-bin "
                         f"holds {entry and entry['kind'] or 'the parser trees'}: prepared again since")
    return entry


def scored_checkpoint(work, model):
    """The checkpoint evaluate.sh decoded for ``model`` (its eval/MODEL/checkpoint.txt: a model may decode
    another's, CHECKPOINT_OF), else the model's own best, else last, checkpoint; None if none is found."""
    record = os.path.join(work, "eval", model, "checkpoint.txt")
    if os.path.exists(record):
        path = open(record, encoding="utf-8").read().strip()
        if path and os.path.exists(path):  # else moved or pruned: the model's own folder, if any
            return path
    for name in ("checkpoint_best.pt", "checkpoint_last.pt"):
        path = os.path.join(work, "checkpoints", model, name)
        if os.path.exists(path):
            return path
    return None


def text_difference(data, other):
    """How two runs' records of their text (trained_data) differ: "dictionary dict.en.txt (a1b2c3..., d4e5f6...)"
    or "BPE codes ja (...)"; None when they agree or cannot be compared: one record missing (a run collected
    before it), or two variants of the data-bin, which read other text by design (C&H's multi-task corpus)."""
    data, other = data or {}, other or {}
    if not data or not other or data.get("variant") != other.get("variant"):
        return None
    for key, what in (("dictionaries", "dictionary"), ("bpe_codes", "BPE codes"), ("files", "file")):
        mine, theirs = data.get(key) or {}, other.get(key) or {}
        for k in sorted(k for k in mine if k in theirs and mine[k] != theirs[k]):
            return f"{what} {k} ({mine[k][:12]}, {theirs[k][:12]})"
    return None


def check_same_data(model, data, base, base_data, where):
    """Refuse a row whose model trained on other text than its baseline on the same variant's data-bin (one
    prepared again otherwise: another parser version's tokens, other BPE codes)."""
    differ = text_difference(data, base_data)
    if differ:
        raise SystemExit(f"error: {model} trained on other text than its baseline {base} ({where}): {differ} "
                         f"differ; a data-bin prepared again otherwise: train both on one data-bin")


def commit():
    """The commit of the checkout this script is in: git's answer, else FAIRSEQ_SYNTAX_COMMIT (a copied tree
    without .git, as on the GPU machine), else None. The benchmark and device scripts record it with machine()."""
    import subprocess

    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    try:
        p = subprocess.run(["git", "-C", root, "rev-parse", "HEAD"], capture_output=True, text=True, timeout=20)
        if p.returncode == 0:
            return p.stdout.strip()
    except (OSError, subprocess.SubprocessError):
        pass
    return os.environ.get("FAIRSEQ_SYNTAX_COMMIT") or None


def machine():
    """The CPU this script runs on (/proc/cpuinfo's model name, its cores and whether it has AVX-512) and the
    GPU, if any: run it where the models trained. The same seed gives other figures on another CPU (on Tanaka
    0.80 to 1.66 BLEU apart: docs/recipes.md, "What the Tanaka rows say")."""
    name, cores, flags = None, 0, ""
    if os.path.exists("/proc/cpuinfo"):
        for line in open("/proc/cpuinfo", encoding="utf-8", errors="replace"):
            key, _, value = line.partition(":")
            key = key.strip()
            if key == "model name":
                name = name or value.strip()
                cores += 1
            elif key == "flags" and not flags:
                flags = value
    out = {"cpu": name or platform.processor() or platform.machine(), "cores": cores or os.cpu_count(),
           "avx512": " avx512f" in f" {flags}"}
    gpu = _gpu()
    if gpu:
        out["gpu"] = gpu
    return out


def _gpu():
    """The GPU's name when torch sees one (the models trained on it: run this where they trained), else None."""
    try:
        import torch
    except ImportError:
        return None
    return torch.cuda.get_device_name(0) if torch.cuda.is_available() else None


def fmt(x, digits=1):
    return "-" if x is None else f"{x:.{digits}f}"


def set_scores(path, ribes=False):
    """One test set's scores.json and its table cells: BLEU, chrF, the bootstrap p-value (BLEU), and with
    ``ribes`` RIBES and its p-value."""
    sc = json.load(open(path, encoding="utf-8"))
    boot = sc.get("bootstrap") or {}
    pval = boot.get("bleu", {}).get("system", {}).get("p_value")
    cells = [fmt(sc["bleu"], 2), fmt(sc["chrf"], 1), fmt(pval, 3)]
    if ribes:
        cells += [fmt(sc.get("ribes"), 2), fmt(boot.get("ribes", {}).get("system", {}).get("p_value"), 3)]
    return sc, cells


def tested_against(sc, work):
    """The model whose translations a scores.json's bootstrap tests were against: the folder under WORK/eval of
    the baseline file fairseq-syntax-evaluate recorded (WORK/eval/BASE/[SET/]hyp.txt), or None where none is
    recorded (scores made before the record) or the file is not under WORK/eval. The first folder below
    WORK/eval, not the last folder named eval (a model or a test set may be named eval)."""
    path = sc.get("baseline_file")
    if not path:
        return None
    for resolve in (os.path.abspath, os.path.realpath):  # as recorded, then through symbolic links
        rel = os.path.relpath(resolve(path), resolve(os.path.join(work, "eval")))
        parts = rel.split(os.sep)
        if len(parts) >= 2 and parts[0] not in (os.pardir, os.curdir):
            return parts[0]
    return None


def check_baseline(work, model, base, set_name, sc, out=None):
    """Refuse a row whose named baseline is not the one evaluate.sh tested it against (a wrong or missing
    --baselines entry would otherwise label the row with the wrong baseline): by the baseline file its scores
    record, else by the baseline BLEU they record, which must be that model's own: from its scores.json in
    WORK, else from its committed OUT/BASE.json (a baseline whose translations stand in for its evaluation);
    a row that none of these can check is refused too."""
    if "baseline_bleu" not in sc:
        return
    named = tested_against(sc, work)
    if named is not None:
        if named != base:
            raise SystemExit(f"error: {model} was tested against {named} ({sc['baseline_file']}), not {base}: name its "
                             f"baseline with --baselines {model}={named}")
        return
    path = os.path.join(work, "eval", base, set_name, "scores.json")
    committed = os.path.join(out, f"{base}.json") if out else None
    if os.path.exists(path):
        own = json.load(open(path, encoding="utf-8"))["bleu"]
    elif committed and os.path.exists(committed):
        sets = json.load(open(committed, encoding="utf-8")).get("sets", {})
        if (set_name or "test") not in sets:
            raise SystemExit(f"error: {model}: cannot check that its baseline is {base}: {committed} has no test set "
                             f"{set_name or 'test'}; evaluate {base} first")
        path, own = committed, sets[set_name or "test"]["bleu"]
    else:
        raise SystemExit(f"error: {model}: cannot check that its baseline is {base}: neither {path} nor "
                         f"{committed or 'a committed OUT/' + base + '.json (--out)'} exists; evaluate {base} first")
    if abs(own - sc["baseline_bleu"]) > 1e-9:
        raise SystemExit(f"error: {model} was tested against a baseline of {sc['baseline_bleu']:.2f} BLEU, but "
                         f"{base} scores {own:.2f} ({path}): name its baseline with --baselines {model}=MODEL, or run "
                         f"evaluate.sh {model} again if {base} was evaluated again after it")


def check_also_against(work, model, other, set_name, main_scores, sc, out=None):
    """Refuse a row against another baseline (``vs_OTHER``) left from an earlier evaluation: it must score the
    model's translations of this evaluation, against ``other``'s translations of its last one."""
    if abs(sc["bleu"] - main_scores["bleu"]) > 1e-9:
        where = os.path.join(work, "eval", model, set_name, f"vs_{other}")
        raise SystemExit(f"error: {where} scored other translations of {model} ({sc['bleu']:.2f} BLEU, not "
                         f"{main_scores['bleu']:.2f}): run evaluate.sh {model} again")
    check_baseline(work, model, other, set_name, sc, out)


def also_against(ev, set_name):
    """The other baselines a model was scored against (evaluate.sh's ALSO_AGAINST: [SET/]vs_BASE/scores.json)."""
    return sorted(d[3:] for d in os.listdir(os.path.join(ev, set_name)) if d.startswith("vs_")
                  and os.path.exists(os.path.join(ev, set_name, d, "scores.json")))


def baseline_data(work, base, out=None):
    """(what a baseline's checkpoint recorded of its text, where that was read): from its checkpoint in WORK,
    else from its committed OUT/BASE.json (a baseline whose translations stand in for its evaluation); ({},
    None) if neither says."""
    checkpoint = scored_checkpoint(work, base)
    data = trained_data(checkpoint)
    if data:
        return data, checkpoint
    committed = os.path.join(out, f"{base}.json") if out else None
    if committed and os.path.exists(committed):
        return json.load(open(committed, encoding="utf-8")).get("data") or {}, committed
    return {}, None


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__.split("\n\n", 1)[1])
    p.add_argument("--work", required=True, help="the recipe's WORK folder (eval/ and checkpoints/ under it)")
    p.add_argument("--models", nargs="+", required=True, help="models in table order")
    p.add_argument("--sets", nargs="*", default=[], help="test sets scored one by one (eval/MODEL/SET/); "
                   "none: eval/MODEL/scores.json")
    p.add_argument("--baselines", default="", help="MODEL=BASELINE,... (default baseline: transformer)")
    p.add_argument("--ribes", action="store_true", help="RIBES and its bootstrap p-value columns")
    p.add_argument("--out", default=None, help="write OUT/MODEL.json and OUT/translations/MODEL[.SET].txt "
                   "(default: do not write)")
    args = p.parse_args(argv)
    baselines = dict(kv.split("=") for kv in args.baselines.split(",") if kv)
    sets = args.sets or [""]
    cpu = machine()  # read once: every row of this run was collected here
    head = ["model", "baseline"]
    ribes = args.ribes
    for s in sets:
        name = s or "test"
        head += [f"{name} BLEU", "chrF", "p (BLEU)"] + (["RIBES", "p (RIBES)"] if ribes else [])
    head += ["UAS enc", "UAS dec", "updates", "train h"]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for m in args.models:
        ev = os.path.join(args.work, "eval", m)
        if not all(os.path.exists(os.path.join(ev, s, "scores.json")) for s in sets):
            print(f"{m}: not evaluated yet ({ev})", file=sys.stderr)
            continue
        base = baselines.get(m, "transformer")
        result = {"model": m, "baseline": None if base == m else base, "sets": {}, "machine": cpu}
        row = [m, "-" if base == m else base]
        for s in sets:
            result["sets"][s or "test"], cells = set_scores(os.path.join(ev, s, "scores.json"), ribes)
            if base != m:
                check_baseline(args.work, m, base, s, result["sets"][s or "test"], args.out)
            result["sets"][s or "test"].pop("baseline_file", None)  # this machine's path: checked, not kept
            row += cells
        result["uas"] = parse_uas(os.path.join(ev, "uas.txt"))
        result["training"] = training_state(os.path.join(args.work, "checkpoints", m))
        result["data"] = trained_data(scored_checkpoint(args.work, m))
        for other in [base] * (base != m) + also_against(ev, sets[0]):
            check_same_data(m, result["data"], other, *baseline_data(args.work, other, args.out))
        last = result["training"].get("last", {})
        row += [fmt(result["uas"].get("encoder")), fmt(result["uas"].get("decoder")), str(last.get("updates", "-")),
                fmt(last["train_seconds"] / 3600, 2) if "train_seconds" in last else "-"]
        print("| " + " | ".join(row) + " |")
        for other in also_against(ev, sets[0]):  # ALSO_AGAINST: the same translations against another baseline
            result.setdefault("also_against", {})[other] = {}
            row = [m, other]
            for s in sets:
                result["also_against"][other][s or "test"], cells = set_scores(
                    os.path.join(ev, s, f"vs_{other}", "scores.json"), ribes)
                check_also_against(args.work, m, other, s, result["sets"][s or "test"],
                                   result["also_against"][other][s or "test"], args.out)
                result["also_against"][other][s or "test"].pop("baseline_file", None)
                row += cells
            print("| " + " | ".join(row + ["", "", "", ""]) + " |")
        if args.out:
            os.makedirs(os.path.join(args.out, "translations"), exist_ok=True)
            for s in sets:
                name = f"{m}.{s}.txt" if s else f"{m}.txt"
                shutil.copyfile(os.path.join(ev, s, "hyp.txt"), os.path.join(args.out, "translations", name))
            with open(os.path.join(args.out, f"{m}.json"), "w", encoding="utf-8") as f:
                json.dump(result, f, indent=1, sort_keys=True)
                f.write("\n")


if __name__ == "__main__":
    main()
