"""The demo's figures as a record (examples/demo/run.sh calls it), so that what docs/results.md prints from a
demo run is a committed JSON's, not a transcript's:

    python examples/demo/record.py score DIR    # step 4: sacreBLEU of each model and the parse heads' UAS,
                                                # printed as the demo's lines and kept in DIR/scores.json
    python examples/demo/record.py finish DIR   # at the end: DIR/demo.json, the whole record (scores, the wall
                                                # seconds of each step, the new sentence's translations, the
                                                # CPU, the commit, the versions); --append FILE adds it to
                                                # the list in FILE (examples/demo/records.json is the committed one)

docs/results.md's demo figures and its wall time are those of the record whose commit it names
(tests/test_demo.py). sacreBLEU is the recipes' (tokenize 13a, as ``sacrebleu REF -i HYP -m bleu``); the UAS
lines are fairseq-syntax-induce-parses' own.
"""
import argparse
import datetime
import json
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
MODELS = ("transformer", "dep_rel", "dbsa")
WHAT = {"transformer": "transformer",
        "dep_rel": "dep_rel: + source-tree depths and relative positions (Omote)",
        "dbsa": "dbsa: + parse heads that learn to parse (Deguchi 2019)"}
# fairseq-syntax-induce-parses' lines: "UAS encoder parse head, split test: 93.50 (5450/5829 words)" and the
# decoder's, which adds "; on words whose head precedes them: 75.98 (1610/2119)"
UAS_LINE = re.compile(r"^UAS (encoder|decoder)\b.*?: ([0-9.]+) \(([0-9]+)/([0-9]+) words\)"
                      r"(?:; on words whose head precedes them: ([0-9.]+) \(([0-9]+)/([0-9]+)\))?")
# the steps run.sh marks in DIR/times.tsv, in order; each one's seconds run from the mark before it
STEPS = ("environment", "corpus", "prepare", "train", "generate", "interactive")


def bleu(ref_path, hyp_path):
    import sacrebleu

    refs = open(ref_path, encoding="utf-8").read().splitlines()
    hyps = open(hyp_path, encoding="utf-8").read().splitlines()
    if len(refs) != len(hyps):
        raise SystemExit(f"{hyp_path}: {len(hyps)} lines against {len(refs)} in {ref_path}")
    return round(sacrebleu.corpus_bleu(hyps, [refs]).score, 2)


def read_uas(log_path):
    """{"encoder": {"uas", "correct", "words", "line"}, "decoder": {..., "preceding": {...}}} from the induce log
    ("line": the log's own line, which the demo prints)."""
    out = {}
    for line in open(log_path, encoding="utf-8"):
        m = UAS_LINE.match(line.strip())
        if not m:
            continue
        side, uas, correct, words = m.group(1), float(m.group(2)), int(m.group(3)), int(m.group(4))
        out[side] = {"uas": uas, "correct": correct, "words": words, "line": line.strip()}
        if m.group(5):
            out[side]["preceding"] = {"uas": float(m.group(5)), "correct": int(m.group(6)), "words": int(m.group(7))}
    if "encoder" not in out:
        raise SystemExit(f"{log_path}: no 'UAS encoder' line (fairseq-syntax-induce-parses failed?)")
    return out


def score(folder):
    """Score the three translations and the parse heads; print the demo's lines; keep them in scores.json."""
    scores = {"bleu": {m: bleu(os.path.join(folder, "gen", m, "ref.tok"), os.path.join(folder, "gen", m, "hyp.tok"))
                       for m in MODELS},
              "uas": read_uas(os.path.join(folder, "induce.log"))}
    base = scores["bleu"]["transformer"]
    for m in MODELS:
        diff = "" if m == "transformer" else f"  ({scores['bleu'][m] - base:+.2f})"
        print(f"{WHAT[m]:<62} sacreBLEU {scores['bleu'][m]:6.2f}{diff}")
    for side in ("encoder", "decoder"):
        if side in scores["uas"]:
            print("dbsa: " + scores["uas"][side]["line"])
    with open(os.path.join(folder, "scores.json"), "w", encoding="utf-8") as f:
        json.dump(scores, f, indent=1)
    return scores


def step_seconds(times_path):
    """Seconds of each step from run.sh's marks ("start" first, then one line per finished step)."""
    marks = [line.split() for line in open(times_path, encoding="utf-8") if line.strip()]
    if not marks or marks[0][0] != "start":
        raise SystemExit(f"{times_path}: the first mark is not 'start'")
    out, last = {}, float(marks[0][1])
    for name, t in marks[1:]:
        out[name] = round(float(t) - last, 1)
        last = float(t)
    out["total"] = round(last - float(marks[0][1]), 1)
    out["demo"] = round(out["total"] - out.get("environment", 0.0), 1)  # the demo once its environment is there
    return out


def train_seconds(log_path):
    """fairseq's own figure: "done training in 203.4 seconds"."""
    found = re.findall(r"done training in ([0-9.]+) seconds", open(log_path, encoding="utf-8").read())
    return float(found[-1]) if found else None


def git(*args):
    try:
        return subprocess.run(["git", "-C", ROOT, *args], capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None


def settings(folder):
    keep = json.load(open(os.path.join(folder, "settings.json"), encoding="utf-8"))
    return {k: int(keep[k]) for k in ("seed", "updates", "train", "test")}


def finish(folder, append=None):
    sys.path.insert(0, os.path.join(ROOT, "examples", "recipes"))
    from results_table import machine

    import fairseq
    import torch

    scores = json.load(open(os.path.join(folder, "scores.json"), encoding="utf-8"))
    status = git("status", "--porcelain", "--untracked-files=no")
    record = {
        "commit": git("rev-parse", "HEAD"),
        "changed_files": None if status is None else len(status.splitlines()),
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": machine(),
        "versions": {"python": sys.version.split()[0], "torch": torch.__version__, "fairseq": fairseq.__version__},
        "settings": settings(folder),
        **scores,
        "seconds": step_seconds(os.path.join(folder, "times.tsv")),
        "train_seconds": {m: train_seconds(os.path.join(folder, f"train.{m}.log")) for m in MODELS},
        "new_sentence": {k: open(os.path.join(folder, f"new.{k}" if k == "ref" else f"new.{k}.txt"),
                                 encoding="utf-8").read().strip() for k in ("ref", "transformer", "dep_rel")},
    }
    with open(os.path.join(folder, "demo.json"), "w", encoding="utf-8") as f:
        json.dump(record, f, indent=1)
    if append:
        records = json.load(open(append, encoding="utf-8")) if os.path.exists(append) else []
        records.append(record)
        with open(append, "w", encoding="utf-8") as f:
            json.dump(records, f, indent=1)
            f.write("\n")
    return record


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("step", choices=("score", "finish"), help="score: step 4's figures; finish: DIR/demo.json")
    parser.add_argument("folder", help="the demo's DEMO_DIR")
    parser.add_argument("--append", metavar="FILE", help="finish: add the record to the list in FILE (created when "
                        "absent), e.g. examples/demo/records.json")
    args = parser.parse_args(argv)
    if args.step == "score":
        score(args.folder)
    else:
        record = finish(args.folder, args.append)
        s, added = record["seconds"], f" (added to {args.append})" if args.append else ""
        print(f"record: {os.path.join(args.folder, 'demo.json')}{added}; wall time {s['total']:.0f} s, "
              f"{s['demo']:.0f} s of it the demo")


if __name__ == "__main__":
    main()
