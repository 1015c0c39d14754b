#!/usr/bin/env python3
"""The Tanaka Ja->En table at Transformer base on one GPU: the recipe's models (examples/tanaka-ja-en,
``SIZE=base``) trained side by side, a process each, in fp16, every model the same number of updates; then
each decoded and scored by the recipe's evaluate.sh (BLEU, chrF, RIBES, paired bootstrap against the
transformer) and collected by examples/recipes/results_table.py into one JSON per model with its translations.

The number of updates fits the time given (``--budget``): from the pace of an earlier run of this script (its
tanaka_base.json in ``--speed``; by default the committed run of 1,100 updates on an H100, 202 ms an update
for six models side by side), or from the speed phase of device_check.py (its JSON: the models' fp16 training
step at 8,192 tokens, added up, times 1.4: an estimate, 2.6 times faster than the committed run), or, with neither,
``--updates``. ``--precision`` trains in fp16 (the default), amp or fp32. Warm-up is a quarter of the updates (the recipe's base setting warms up over
4,000 of 20,000). Each model is validated and saved once, at the end (its last checkpoint is the one scored).

    python3 examples/gpu/tanaka_base.py --data .carry/tanaka --out gpu-out --budget 400

The budget is a deadline, not an estimate: each training also stops at fairseq's ``--stop-time-hours`` (the
seconds left for training; it validates and saves as at its last update) and is killed past it; each
evaluation is killed at the time left before collecting. Decoding caps its length (``--max-len-a 1.5
--max-len-b 10``: an undertrained model would loop to 200 tokens at beam 4). RESULTS/tanaka_base.json is written
after every phase (the setting, the machine and commit, each model's updates, times and exit), the logs go
to WORK/logs and each scored model's JSON and translations to WORK/results, and RESULTS/tanaka_base.tar.gz packs
both after each phase, so that a job killed at its time limit still leaves what it did.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tarfile
import time
from concurrent.futures import ThreadPoolExecutor

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MODELS = ("transformer", "rel", "dep_rel", "pascal", "dbsa_enc", "syncattn")
#: seconds kept for decoding, scoring and collecting after training, and for the processes' start
AFTER_TRAINING = 150
START = 40
#: seconds kept after the evaluations for the results table and the archive
COLLECT = 20
#: the GPU's time per update when the processes share it: the sum of their step times, times this (the
#: processes' CPU work, validation and the final save)
SHARING_OVERHEAD = 1.4


def log(msg):
    print(f"[tanaka-base {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def _fit(train_seconds, per_update):
    """The updates that fit the training seconds at this pace, in fifties (50 at least)."""
    return max(50, int(train_seconds / per_update) // 50 * 50)


def _reached(report, folder):
    """Whether every model of an earlier run trained all its updates (its results JSON beside the run's says
    so): a training stopped by --stop-time-hours exits 0 too, having trained fewer."""
    for m in report.get("models", []):
        path = os.path.join(folder, "results", f"{m}.json")
        if not os.path.exists(path):
            return False
        last = (json.load(open(path, encoding="utf-8")).get("training") or {}).get("last") or {}
        if last.get("updates") != report["updates"]:
            return False
    return True


def updates_for(models, speed_json, train_seconds, fallback, precision="fp16", size="base"):
    """(updates, how they were chosen): from an earlier table run's measured pace when ``speed_json`` is its
    tanaka_base.json, it trained every model asked for, all of its updates, in this precision at this size (the
    longest training's seconds per update, the processes' start included: fewer models side by side only go
    faster); else, in fp16 at base size, from device_check.py's speed rows at 8,192 tokens when every model has
    one; else ``fallback``."""
    if speed_json and os.path.exists(speed_json):
        report = json.load(open(speed_json, encoding="utf-8"))
        trained = report.get("train", {})
        run_precision = report.get("precision") or ("fp16" if "--fp16" in report.get("extra_train_args", "") else None)
        if (report.get("updates") and all(trained.get(m, {}).get("exit") == 0 for m in models)
                and run_precision == precision and report.get("size") == size
                and _reached(report, os.path.dirname(os.path.abspath(speed_json)))):
            per_update = max(trained[m]["seconds"] for m in report["models"] if m in trained) / report["updates"]
            why = (f"{train_seconds:.0f} s of training / {per_update * 1000:.0f} ms an update, the pace of "
                   f"{len(report['models'])} models side by side in {speed_json}")
            return _fit(train_seconds, per_update), why
        rows = report.get("speed", {}).get("models", {})
        # a model measured twice (the reference, first and last) counts at its faster row: the first GPU run timed
        # the transformer first before the device had seen the batches (239 ms against 59 ms)
        steps = [min((rows[r]["train_8192"]["step_ms_median"] for r in (m, f"{m} (again)")
                      if "step_ms_median" in rows.get(r, {}).get("train_8192", {})), default=None) for m in models]
        if all(steps) and precision == "fp16" and size == "base":
            per_update = SHARING_OVERHEAD * sum(steps) / 1000
            why = (f"{train_seconds:.0f} s of training / ({SHARING_OVERHEAD} x {sum(steps):.0f} ms, the models' "
                   f"fp16 steps at 8,192 tokens in {speed_json})")
            return _fit(train_seconds, per_update), why
    return fallback, f"--updates (no pace or speed figures for every model in {precision} at size {size})"


#: fairseq's option for each --precision
PRECISIONS = {"fp16": "--fp16", "amp": "--amp", "fp32": ""}


def train_args(updates, warmup, train_seconds, cpu=False, precision="fp16"):
    """The options every model's training gets (EXTRA_TRAIN_ARGS of the recipe's train.sh)."""
    device = " --cpu --num-workers 0" if cpu else f" {PRECISIONS[precision]} --num-workers 2".replace("  ", " ")
    return (f"--max-update {updates} --warmup-updates {warmup} --no-epoch-checkpoints --save-interval 100000 "
            f"--validate-interval 100000 --log-interval 25 --stop-time-hours {train_seconds / 3600:.5f}" + device)


def run(cmd, log_path, env, timeout=None):
    """(exit code, or "timeout" when killed at ``timeout`` seconds with its whole process group; seconds)."""
    import signal

    start = time.time()
    with open(log_path, "w", encoding="utf-8") as f:
        proc = subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT, env=env, start_new_session=True)
        try:
            code = proc.wait(timeout=None if timeout is None else max(1.0, timeout))
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            code = "timeout"
            f.write(f"\n[tanaka_base.py] killed at its time limit ({timeout:.0f} s)\n")
    return code, round(time.time() - start, 1)


def write_summary(out, summary, start):
    summary["seconds"] = round(time.time() - start, 1)
    path = os.path.join(out, "tanaka_base.json")
    with open(path + ".tmp", "w", encoding="utf-8") as f:
        json.dump(summary, f, indent=1)
        f.write("\n")
    os.replace(path + ".tmp", path)


def environment(cpu):
    """The machine and code, as device_check.py records them (commit: git, or FAIRSEQ_SYNTAX_COMMIT)."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from device_check import environment as device_environment

    return device_environment("cpu" if cpu else "cuda")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__.split("\n\n", 1)[1])
    p.add_argument("--data", required=True, help="the Tanaka recipe's WORK with raw/, main/data-bin and main/work "
                   "(build_carry.sh's tanaka/)")
    p.add_argument("--out", required=True)
    p.add_argument("--work", default="/tmp/tanaka-base", help="where checkpoints and evaluations go")
    p.add_argument("--models", default=",".join(MODELS), help="comma list; the transformer first (default: "
                   f"{','.join(MODELS)})")
    p.add_argument("--budget", type=float, default=400, help="seconds for everything (default 400)")
    p.add_argument("--speed", default=os.path.join(ROOT, "examples", "gpu", "results", "tanaka_base_1100_updates",
                                                   "tanaka_base.json"),
                   help="what sizes the updates: an earlier run's tanaka_base.json (its pace; the default is the "
                   "committed run of 1,100 updates on an H100) or device_check.py's JSON (its speed rows); 'none': "
                   "--updates")
    p.add_argument("--updates", type=int, default=600, help="updates when --speed has no figures (default 600)")
    p.add_argument("--size", default="base", help="the recipe's SIZE (default base; cpu for the dry run)")
    p.add_argument("--cpu", action="store_true", help="the dry run: train on the CPU")
    p.add_argument("--precision", choices=sorted(PRECISIONS), default="fp16",
                   help="every model's training on the GPU: fp16 (fairseq's FP16Optimizer, dynamic loss scale), "
                   "amp (torch's autocast) or fp32 (default fp16)")
    args = p.parse_args(argv)
    start = time.time()
    deadline = start + args.budget
    models = args.models.split(",")
    if models[0] != "transformer":
        sys.exit("error: --models: the transformer first (every other model is tested against it)")
    work = args.work
    shutil.rmtree(work, ignore_errors=True)
    shutil.copytree(args.data, work)
    os.makedirs(args.out, exist_ok=True)
    logs = os.path.join(work, "logs")  # outside RESULTS: packed into its archive after each phase
    os.makedirs(logs, exist_ok=True)
    folder = os.path.join(work, "results")

    def pack():
        with tarfile.open(os.path.join(args.out, "tanaka_base.tar.gz.tmp"), "w:gz") as tar:
            if os.path.isdir(folder):
                tar.add(folder, arcname="results")
            tar.add(logs, arcname="logs")  # every model's logs, scored or not
        os.replace(os.path.join(args.out, "tanaka_base.tar.gz.tmp"), os.path.join(args.out, "tanaka_base.tar.gz"))

    train_seconds = args.budget - AFTER_TRAINING - START
    n, why = updates_for(models, args.speed, train_seconds, args.updates, args.precision, args.size)
    warmup = max(1, n // 4)
    extra = train_args(n, warmup, train_seconds, args.cpu, args.precision)
    decode = "--max-len-a 1.5 --max-len-b 10"
    env = dict(os.environ, WORK=work, SIZE=args.size, MAX_TOKENS="8192" if not args.cpu else "1024", GPUS="1",
               EXTRA_TRAIN_ARGS=extra, FAIRSEQ_SYNTAX_VENV=os.environ.get("FAIRSEQ_SYNTAX_VENV", "none"),
               OMP_NUM_THREADS="1", PYTHONWARNINGS="ignore")
    summary = {"environment": environment(args.cpu), "models": models, "updates": n, "warmup": warmup,
               "updates_chosen": why, "size": args.size, "precision": "cpu" if args.cpu else args.precision,
               "extra_train_args": extra, "decode_args": decode,
               "budget_seconds": args.budget, "train": {}, "evaluate": {}}
    write_summary(args.out, summary, start)
    log(f"{len(models)} models side by side, {n} updates each ({why}); training stops by {train_seconds:.0f} s")
    recipe = os.path.join(ROOT, "examples", "tanaka-ja-en")
    train_limit = train_seconds + START  # fairseq's own stop comes first; this kills a process that hangs
    with ThreadPoolExecutor(len(models)) as pool:
        done = dict(zip(models, pool.map(lambda m: run(["bash", os.path.join(recipe, "train.sh"), m],
                                                        os.path.join(logs, f"{m}.train.log"), env, train_limit),
                                         models)))
    for m, (code, seconds) in done.items():
        summary["train"][m] = {"exit": code, "seconds": seconds}
        log(f"trained {m}: exit {code}, {seconds} s")
    write_summary(args.out, summary, start)
    pack()
    trained = [m for m in models if done[m][0] == 0]
    left = lambda: deadline - time.time() - COLLECT  # noqa: E731
    evaluate = lambda m: run(["bash", os.path.join(recipe, "evaluate.sh"), m, *decode.split()],  # noqa: E731
                             os.path.join(logs, f"{m}.evaluate.log"), env, left())
    results = {}
    if "transformer" in trained:
        results["transformer"] = evaluate("transformer")  # the baseline first: the others are tested against it
    with ThreadPoolExecutor(max(1, len(trained))) as pool:
        results.update(zip([m for m in trained if m != "transformer"],
                           pool.map(evaluate, [m for m in trained if m != "transformer"])))
    for m, (code, seconds) in results.items():
        summary["evaluate"][m] = {"exit": code, "seconds": seconds}
        log(f"evaluated {m}: exit {code}, {seconds} s")
    write_summary(args.out, summary, start)
    pack()
    scored = [m for m in models if results.get(m, (1,))[0] == 0]
    if scored:
        table = subprocess.run([sys.executable, os.path.join(ROOT, "examples", "recipes", "results_table.py"),
                                "--work", work, "--models", *scored, "--ribes", "--out", folder],
                               capture_output=True, text=True, env=env)
        summary["table"] = table.stdout
        log("table:\n" + table.stdout + table.stderr[-2000:])
    pack()
    summary["scored"] = scored
    write_summary(args.out, summary, start)
    log(f"done in {summary['seconds']} s: {len(scored)} of {len(models)} models scored")
    return 0 if len(scored) == len(models) else 1


if __name__ == "__main__":
    sys.exit(main())
