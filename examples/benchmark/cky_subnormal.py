#!/usr/bin/env python
"""Subnormal gradients in the CKY backward: the first updates of a real cky_lstm training, timed twice.

CKY attention's joint softmax (Watanabe et al. 2017, Eq. 13-14) gives the cells it all but ignores weights
below float32's smallest normal number, and their gradients are subnormal too; a CPU multiplies subnormal
operands tens of times slower. The table's backward drops them (``fairseq_syntax.modules.subnormal``: each
level's gradient loses its subnormal entries, and the CPU flushes subnormal values to zero while the levels
are replayed). This script trains the same model twice from the same seed for ``--updates``
updates with fairseq-syntax-train (one thread each, one run after the other): once with subnormal
gradients passed through (the code before the change) and once dropped (now). It records, per update,
the subnormal share of the upstream gradient of the table's cells above level 1 and the seconds of the
table's backward, and fairseq's logged training loss and gradient norm (they must agree: dropping a
gradient below 1.2e-38 keeps the gradients).

    OMP_NUM_THREADS=1 python examples/benchmark/cky_subnormal.py --updates 30 \\
        --json examples/benchmark/cky_subnormal_cpu.json -- DATA-BIN [fairseq-syntax-train options]

The training options after ``--`` are the recipe's (``fairseq_syntax/settings/cpu_table.py``, ``cky_lstm``);
``--max-update``, ``--no-save``, ``--disable-validation`` and ``--log-interval 1`` are appended. Each run
prints a line per 10 updates. At the recipe's setting on the Tanaka corpus the run without the change
costs a few seconds per update (see ``docs/cky.md``).
"""
import argparse
import contextlib
import json
import os
import re
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MARK = "[cky backward]"


def mean(values):
    values = list(values)
    return round(sum(values) / len(values), 4)


def worker(flush: bool, train_args):
    """One training run in this process, the table's backward instrumented (``--worker``)."""
    sys.path.insert(0, ROOT)
    import torch

    from fairseq_syntax.modules import cky_table

    if not flush:  # the code before the change: subnormal gradients passed through, the CPU's mode unchanged
        cky_table.flush_subnormal = lambda x: x
        cky_table.subnormals_flushed = lambda device: contextlib.nullcontext()
    replay = cky_table._CKYFunction.backward
    ends = []

    def backward(ctx, grad, grad_splits):
        upper = grad[:, ctx.width:]
        share = ((upper != 0) & (upper.abs() < torch.finfo(grad.dtype).tiny)).float().mean().item()
        start = time.perf_counter()
        out = replay(ctx, grad, grad_splits)
        end = time.perf_counter()
        update = end - ends[-1] if ends else float("nan")  # from the last update's table backward to this one's
        ends.append(end)
        print(f"{MARK} {len(ends)} {share:.6f} {end - start:.4f} {update:.4f}", flush=True)
        return out

    cky_table._CKYFunction.backward = staticmethod(backward)
    from fairseq_syntax.cli.train import cli_main

    sys.argv = ["fairseq-syntax-train", *train_args]
    cli_main()


def run(flush: bool, train_args, updates: int):
    """Run one worker; returns its per-update records, echoing a progress line every 10 updates."""
    name = "dropped" if flush else "passed through"
    with tempfile.TemporaryDirectory() as save_dir:
        args = [*train_args, "--max-update", str(updates), "--no-save", "--disable-validation",
                "--log-interval", "1", "--log-format", "simple", "--save-dir", save_dir]
        cmd = [sys.executable, os.path.abspath(__file__), "--worker", "--flush" if flush else "--no-flush", "--", *args]
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        calls, logged, tail = [], [], []
        for line in proc.stdout:
            tail = (tail + [line])[-30:]
            if line.startswith(MARK):
                _, _, n, share, seconds, update = line.split()
                calls.append({"share_subnormal": float(share), "table_backward_s": float(seconds)})
                if update != "nan":
                    calls[-1]["update_s"] = float(update)
                if int(n) % 10 == 0:
                    recent = calls[-10:]
                    print(f"subnormal {name}: updates {int(n) - 9}-{n}: subnormal share "
                          f"{mean(c['share_subnormal'] for c in recent):.3f}, table backward "
                          f"{mean(c['table_backward_s'] for c in recent):.2f} s per update", flush=True)
            m = re.search(r"train_inner.*loss=([\d.]+).*num_updates=(\d+).*gnorm=([\d.]+)", line)
            if m:
                logged.append({"update": int(m[2]), "loss": float(m[1]), "gnorm": float(m[3])})
        if proc.wait() != 0:
            sys.exit(f"cky_subnormal.py: the training run ({name}) failed:\n{''.join(tail)}")
    for rec, log in zip(calls, logged):
        rec.update(log)
    return calls


def main():
    if "--worker" in sys.argv:
        flush = "--flush" in sys.argv[:sys.argv.index("--")]
        return worker(flush, sys.argv[sys.argv.index("--") + 1:])
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
                                     usage="%(prog)s [--updates N] [--json FILE] -- DATA-BIN [training options]")
    parser.add_argument("--updates", type=int, default=30, help="updates per run (default 30)")
    parser.add_argument("--json", help="write the records here")
    argv = sys.argv[1:]
    cut = argv.index("--") if "--" in argv else len(argv)
    opts, train_args = parser.parse_args(argv[:cut]), argv[cut + 1:]
    if not train_args:
        parser.error("give the training options after --: DATA-BIN and the recipe's cky_lstm options")
    started = time.time()
    runs = {name: run(flush, train_args, opts.updates) for name, flush in (("passed_through", False), ("dropped", True))}
    same = all(a.get("loss") == b.get("loss") and a.get("gnorm") == b.get("gnorm")
               for a, b in zip(runs["passed_through"], runs["dropped"]))
    summary = {name: {"table_backward_s_mean": mean(c["table_backward_s"] for c in calls),
                      "update_s_mean_from_the_second": mean(c["update_s"] for c in calls[1:]),
                      "share_subnormal_mean": mean(c["share_subnormal"] for c in calls)}
               for name, calls in runs.items()}
    before, now = summary["passed_through"], summary["dropped"]
    print(f"per update (from the second): {before['update_s_mean_from_the_second']:.2f} s passed through, "
          f"{now['update_s_mean_from_the_second']:.2f} s dropped; the table's backward "
          f"{before['table_backward_s_mean']:.2f} s and {now['table_backward_s_mean']:.2f} s; "
          f"logged loss and gnorm {'identical' if same else 'DIFFER'} over {opts.updates} updates")
    if opts.json:
        sys.path.insert(0, os.path.join(ROOT, "examples", "recipes"))
        from results_table import machine  # the CPU's name, cores and AVX-512, as the results JSON records it

        record = {"what": "the first updates of a cky_lstm training, the table's subnormal gradients passed "
                          "through (before) and dropped (now), one run after the other",
                  "command": "OMP_NUM_THREADS=" + os.environ.get("OMP_NUM_THREADS", "(unset)") + " python "
                             "examples/benchmark/cky_subnormal.py " + " ".join(sys.argv[1:]),
                  "machine": machine(),
                  "date": time.strftime("%Y-%m-%d"), "wall_s": round(time.time() - started),
                  "loss_and_gnorm_identical": same, "summary": summary, "per_update": runs}
        with open(opts.json, "w") as f:
            json.dump(record, f, indent=1)
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
