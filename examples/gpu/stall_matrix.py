#!/usr/bin/env python3
"""The dbsa_enc stall matrix: eight Tanaka Ja->En trainings at Transformer base side by side on one GPU, training
only, that separate what stalled dbsa_enc's 600-update fp16 run (its NLL flat at 7.3-7.7 from update 125 on,
its loss scale down to 1) where dep_rel trained: precision, seed, the warm-up and the parse loss's weight.

Each run is the recipe's model (``examples/tanaka-ja-en/train.sh MODEL``, ``SIZE=base``) with the stalled run's
schedule (``--max-update 600 --warmup-updates 150``, the peak learning rate 7e-4 of the recipe) and one change
(``RUNS``): fp16 seeds 1 and 2 with fairseq's overflow logging by parameter (``--debug-param-names
--fp16-no-flatten-grads``), fp32 seeds 1 and 2, bf16 (``fairseq-syntax-train --bf16``), fp16 with a warm-up of
275 updates, fp16 at lambda 0.5 (``--dependency-lambda-enc``), and the transformer in fp16. Each run has its own
WORK (checkpoints, locks) over the one data-bin; nothing is saved (``--no-save``); fairseq validates once, at
the last update.

    python3 examples/gpu/stall_matrix.py --data .carry/tanaka --out gpu-out --budget 300

RESULTS/stall_matrix.json holds the setting, the machine and commit, and per run its exit, seconds and a summary of
its log (``summarise``): the training NLL at updates 125, 300 and 600, the logged rows (update, NLL, loss
scale, gradient norm, learning rate), the overflows with the parameters fairseq named, the validation NLL. It
is rewritten every ``--every`` seconds while the runs train, so a job killed at its time limit still
leaves what they logged. The logs are written outside RESULTS and packed at the end into
RESULTS/stall_matrix_logs.tar.gz. ``--budget`` is a deadline:
each training also stops at fairseq's ``--stop-time-hours`` and is killed past it.
"""
import argparse
import json
import os
import re
import shutil
import sys
import tarfile
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tanaka_base import environment, run  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
#: fairseq's per-parameter overflow lines need both (fairseq/trainer.py: param_names with unflattened grads)
OVERFLOW_NAMES = "--debug-param-names --fp16-no-flatten-grads"
#: run -> (recipe model, precision, its own options, given after everything else)
RUNS = {
    "dbsa_enc_fp16_s1": ("dbsa_enc", "fp16", f"--seed 1 {OVERFLOW_NAMES}"),
    "dbsa_enc_fp16_s2": ("dbsa_enc", "fp16", f"--seed 2 {OVERFLOW_NAMES}"),
    "dbsa_enc_fp32_s1": ("dbsa_enc", "fp32", "--seed 1"),
    "dbsa_enc_fp32_s2": ("dbsa_enc", "fp32", "--seed 2"),
    "dbsa_enc_bf16": ("dbsa_enc", "bf16", "--seed 1"),
    "dbsa_enc_fp16_warmup275": ("dbsa_enc", "fp16", f"--seed 1 --warmup-updates 275 {OVERFLOW_NAMES}"),
    "dbsa_enc_fp16_lambda05": ("dbsa_enc", "fp16", f"--seed 1 --dependency-lambda-enc 0.5 {OVERFLOW_NAMES}"),
    "transformer_fp16": ("transformer", "fp16", f"--seed 1 {OVERFLOW_NAMES}"),
}
#: fairseq's option for each precision
PRECISIONS = {"fp16": "--fp16", "bf16": "--bf16", "fp32": ""}
#: the updates whose training NLL the summary picks out (the stalled run: 7.47 at 125, 7.32 at 300, 7.61 at 600)
CHECKPOINTS = (125, 300, 600)
#: seconds for the processes' start (loading the data-bin) and, after training, for packing
START = 40
COLLECT = 15


def log(msg):
    print(f"[stall-matrix {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def run_args(name, cpu=False):
    """The options of one run after the common ones: its own, with its precision's flag on a GPU. The dry run on
    a CPU trains in float32 (fairseq's FP16Optimizer takes an overflow's zero gradient on CUDA) and leaves out
    the fp16-only logging; the rest of the run's options stay."""
    model, precision, own = RUNS[name]
    words = own.split()
    if cpu:
        drop = set(OVERFLOW_NAMES.split())
        return [w for w in words if w not in drop]
    return ([PRECISIONS[precision]] if PRECISIONS[precision] else []) + words


def common_args(updates, warmup, train_seconds, cpu=False):
    """EXTRA_TRAIN_ARGS of every run (train.sh puts them after the recipe's own options)."""
    device = "--cpu --num-workers 0" if cpu else "--num-workers 2"
    return (f"--max-update {updates} --warmup-updates {warmup} --no-save --validate-interval 100000 "
            f"--log-interval {min(25, updates)} --stop-time-hours {train_seconds / 3600:.5f} {device}")


_PAIR = re.compile(r"(\w+)=([^,\s]+)")


def _number(text):
    try:
        return float(text)
    except ValueError:
        return text


def summarise(text):
    """What a run's fairseq log says about the stall: ``rows`` (every train_inner line: update, nll, loss
    scale, gnorm, lr), ``nll_at`` (the training NLL logged at ``CHECKPOINTS``), ``loss_scales`` (the scale at each
    change, by logged update), ``overflows`` (each "gradient overflow" note: the last logged update before it, the
    scale fairseq set, the parameters it named), ``overflow_params`` (name -> overflows), ``valid_nll``,
    ``updates`` (the last logged), ``gnorm_max``, and the errors fairseq raised (minimum loss scale, NaN)."""
    rows, overflows, errors, valid = [], [], [], None
    last_update = 0
    for line in text.splitlines():
        if "| train_inner |" in line:
            fields = {k: _number(v) for k, v in _PAIR.findall(line.split("| train_inner |", 1)[1])}
            if "num_updates" in fields:
                last_update = int(fields["num_updates"])
                rows.append({"update": last_update, "nll": fields.get("nll_loss"),
                             "loss_scale": fields.get("loss_scale"), "gnorm": fields.get("gnorm"),
                             "lr": fields.get("lr"), "parse_loss": fields.get("dep_enc_loss")})
        elif "gradient overflow detected" in line:
            scale = re.search(r"setting loss scale to: ([\d.e+-]+)", line)
            overflows.append({"after_update": last_update, "loss_scale": float(scale.group(1)) if scale else None,
                              "params": []})
        elif "overflow in param " in line and overflows:
            overflows[-1]["params"].append(line.split("overflow in param ", 1)[1].strip())
        elif "| valid |" in line:
            m = re.search(r"\| nll_loss (\S+)", line)
            if m:
                valid = _number(m.group(1))
        elif "| train |" in line:  # an epoch's end: the update count reached, also below the log interval
            m = re.search(r"\| num_updates (\d+)", line)
            if m:
                last_update = max(last_update, int(m.group(1)))
        elif "Minimum loss scale reached" in line or "FloatingPointError" in line or "gradients are Nan" in line:
            errors.append(line.strip()[-300:])
    nll_at = {str(u): next((r["nll"] for r in rows if r["update"] == u), None) for u in CHECKPOINTS}
    scales, previous = [], None
    for r in rows:
        if r["loss_scale"] is not None and r["loss_scale"] != previous:
            scales.append([r["update"], r["loss_scale"]])
            previous = r["loss_scale"]
    params = {}
    for o in overflows:
        for p in o["params"]:
            params[p] = params.get(p, 0) + 1
    gnorms = [r["gnorm"] for r in rows if isinstance(r["gnorm"], float)]
    return {"updates": last_update, "nll_at": nll_at, "valid_nll": valid, "loss_scales": scales,
            "overflows": overflows, "overflow_params": dict(sorted(params.items(), key=lambda kv: -kv[1])),
            "gnorm_first": gnorms[0] if gnorms else None, "gnorm_max": max(gnorms) if gnorms else None,
            "rows": rows, "errors": errors[:5]}


def write_json(path, data):
    with open(path + ".tmp", "w", encoding="utf-8") as f:
        json.dump(data, f, indent=1)
        f.write("\n")
    os.replace(path + ".tmp", path)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__.split("\n\n", 1)[1])
    p.add_argument("--data", required=True, help="the Tanaka recipe's WORK with main/data-bin (build_carry.sh's tanaka/)")
    p.add_argument("--out", required=True)
    p.add_argument("--work", default=os.path.join(tempfile.gettempdir(), "stall-matrix"),
                   help="each run's WORK and the logs (default: TMPDIR/stall-matrix)")
    p.add_argument("--runs", default=",".join(RUNS), help=f"comma list (default: all of {','.join(RUNS)})")
    p.add_argument("--budget", type=float, default=300, help="seconds for everything (default 300)")
    p.add_argument("--updates", type=int, default=600, help="updates of every run (default 600)")
    p.add_argument("--warmup", type=int, default=150, help="warm-up of the runs that do not set theirs (default 150, "
                   "the stalled run's)")
    p.add_argument("--size", default="base", help="the recipe's SIZE (default base; cpu for the dry run)")
    p.add_argument("--cpu", action="store_true", help="the dry run: train on the CPU, in float32")
    p.add_argument("--every", type=float, default=20, help="seconds between rewrites of the JSON (default 20)")
    args = p.parse_args(argv)
    start = time.time()
    names = args.runs.split(",")
    unknown = [n for n in names if n not in RUNS]
    if unknown:
        sys.exit(f"error: --runs: unknown {','.join(unknown)} (known: {','.join(RUNS)})")
    main_dir = os.path.join(os.path.abspath(args.data), "main")
    if not os.path.isfile(os.path.join(main_dir, "data-bin", ".prepared")):
        sys.exit(f"error: --data: {main_dir}/data-bin is not a finished data-bin (run examples/gpu/stage.sh)")
    shutil.rmtree(args.work, ignore_errors=True)
    logs = os.path.join(args.work, "logs")
    os.makedirs(logs)
    os.makedirs(args.out, exist_ok=True)
    train_seconds = max(30.0, args.budget - START - COLLECT)
    common = common_args(args.updates, args.warmup, train_seconds, args.cpu)
    summary = {"environment": environment(args.cpu), "size": args.size, "updates": args.updates,
               "budget_seconds": args.budget, "common_args": common, "runs": {}}
    for n in names:
        model, precision, _ = RUNS[n]
        summary["runs"][n] = {"model": model, "precision": "cpu" if args.cpu else precision,
                              "args": " ".join(run_args(n, args.cpu))}
    out_json = os.path.join(args.out, "stall_matrix.json")

    def refresh(final=False):
        for n in names:
            path = os.path.join(logs, f"{n}.log")
            if os.path.exists(path):
                text = open(path, encoding="utf-8", errors="replace").read()
                summary["runs"][n]["summary"] = summarise(text)
                if final and summary["runs"][n].get("exit") not in (0, None):
                    summary["runs"][n]["log_tail"] = text.splitlines()[-15:]
        summary["seconds"] = round(time.time() - start, 1)
        write_json(out_json, summary)

    refresh()
    env = dict(os.environ, SIZE=args.size, MAX_TOKENS="1024" if args.cpu else "8192", GPUS="1",
               EXTRA_TRAIN_ARGS=common, FAIRSEQ_SYNTAX_VENV=os.environ.get("FAIRSEQ_SYNTAX_VENV", "none"),
               OMP_NUM_THREADS="1", PYTHONWARNINGS="ignore")
    train = os.path.join(ROOT, "examples", "tanaka-ja-en", "train.sh")

    def one(name):
        work = os.path.join(args.work, name)
        os.makedirs(work)
        os.symlink(main_dir, os.path.join(work, "main"))  # the one data-bin, read by every run
        return run(["bash", train, RUNS[name][0], *run_args(name, args.cpu)], os.path.join(logs, f"{name}.log"),
                   dict(env, WORK=work), train_seconds + START)

    log(f"{len(names)} runs side by side, {args.updates} updates each, training stops by {train_seconds:.0f} s")
    stop = threading.Event()

    def keep_writing():
        while not stop.wait(args.every):
            refresh()

    writer = threading.Thread(target=keep_writing, daemon=True)
    writer.start()
    with ThreadPoolExecutor(len(names)) as pool:
        done = dict(zip(names, pool.map(one, names)))
    stop.set()
    writer.join()
    for n, (code, seconds) in done.items():
        summary["runs"][n].update(exit=code, seconds=seconds)
        log(f"{n}: exit {code}, {seconds} s")
    refresh(final=True)
    with tarfile.open(os.path.join(args.out, "stall_matrix_logs.tar.gz"), "w:gz") as tar:
        tar.add(logs, arcname="logs")
    failed = [n for n in names if done[n][0] != 0]
    log(f"done in {summary['seconds']} s" + (f"; failed: {', '.join(failed)}" if failed else ""))
    for n in names:
        s = summary["runs"][n].get("summary", {})
        log(f"  {n:26s} nll@125/300/600 {s.get('nll_at')} valid {s.get('valid_nll')} scales {s.get('loss_scales')}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
