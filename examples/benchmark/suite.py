#!/usr/bin/env python
"""The benchmark suite: every preset vs its reference, and align + binarize throughput, in one command.

* Transformer presets against fairseq's vanilla ``transformer``, LSTM presets
  against ``lstm_luong``: train-step time (forward + backward + Adam step
  with each model's criterion), training memory (GPU:
  ``torch.cuda.max_memory_allocated``; CPU: parameters + gradients + Adam
  moments + the tensors saved for backward) and beam-4 decoding time (every
  model decodes exactly 30 steps), on the same batches, in one process,
  timings interleaved batch by batch (``speed.py``). On a GPU each step is
  timed with CUDA events.
* Align + binarize throughput of the preprocessing (``align_binarize.py``):
  the in-memory path of ``prepare`` and the two command-line steps.
* Collation (``collation.py``): ms per batch of reading and collating a
  batch with each model family's syntax fields, at 4096-token and
  224-sentence batches, beside fairseq's tokens-only collation and a
  re-implementation of the authors' DBSA collation.

Without ``--data`` it builds (once) a synthetic data-bin with source and
target parses under ``--workdir``. Prints one table and writes JSON.

    OMP_NUM_THREADS=1 python examples/benchmark/suite.py --size small --json examples/benchmark/suite_cpu_small.json
"""
import argparse
import json
import os
import platform
import subprocess
import sys
import time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.path.insert(0, ROOT)

import align_binarize  # noqa: E402
import collation  # noqa: E402
import speed  # noqa: E402

TRANSFORMERS = ["transformer", "transformer_dbsa", "transformer_dbsa_enc", "transformer_dbsa_dec", "transformer_sisa",
                "transformer_rel", "transformer_dep", "transformer_dep_rel", "transformer_pascal", "transformer_sh",
                "transformer_syncattn"]
LSTMS = ["lstm_luong", "cky_lstm"]


def synthetic_data_bin(workdir, train):
    data = os.path.join(workdir, "data-bin")
    if os.path.exists(os.path.join(data, "test.src-tgt.tgt.heads.idx")):
        return data
    raw = os.path.join(workdir, "raw")
    py = [sys.executable, os.path.join(ROOT, "preprocess")]
    subprocess.run([py[0], os.path.join(py[1], "synth.py"), "-o", raw, "--train", str(train), "--valid", "200",
                    "--test", "200", "--seed", "1"], check=True)
    subprocess.run([py[0], os.path.join(py[1], "prepare.py"), "-s", "src", "-t", "tgt", "--trainpref",
                    os.path.join(raw, "train"), "--validpref", os.path.join(raw, "valid"), "--testpref",
                    os.path.join(raw, "test"), "--destdir", data, "--bpe-merges", "2000", "--no-progress"],
                   check=True, stdout=subprocess.DEVNULL)
    return data


def machine(device):
    if device.type == "cuda":
        return torch.cuda.get_device_name(0)
    threads = torch.get_num_threads()
    return f"CPU ({platform.processor() or platform.machine()}, {os.cpu_count()} cores, {threads} torch thread(s))"


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", default=None, help="data-bin with source and target syntax (default: synthetic, built)")
    p.add_argument("--workdir", default=os.path.join(ROOT, "work", "benchmark"), help="for the synthetic data-bin")
    p.add_argument("--size", choices=sorted(speed.SIZES), default="small",
                   help="small: 3+3 layers d 128 (LSTM d 128); base: the papers' 6+6 d 512 (LSTM d 256)")
    p.add_argument("--models", default=",".join(TRANSFORMERS + LSTMS),
                   help="comma list (default: every preset); references are added")
    p.add_argument("--train-batches", type=int, default=10, help="timed training batches (default 10)")
    p.add_argument("--decode-batches", type=int, default=2, help="decoding batches (default 2)")
    p.add_argument("--repeats", type=int, default=2, help="passes over the decoding batches (default 2)")
    p.add_argument("--max-tokens", type=int, default=4096, help="tokens per batch (default 4096)")
    p.add_argument("--align-sentences", type=int, default=20000,
                   help="sentences for the align + binarize throughput (default 20000; 0: skip)")
    p.add_argument("--collation-repeats", type=int, default=3,
                   help="passes over the batches for the collation ms per batch, best reported (default 3; 0: skip)")
    p.add_argument("--json", default=None, help="write the results here")
    args = p.parse_args(argv)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    data = args.data or synthetic_data_bin(args.workdir, 5000)
    wanted = args.models.split(",")
    unknown = [m for m in wanted if m not in speed.MODELS]
    if unknown:
        p.error(f"unknown model(s) {unknown}; known: {','.join(speed.MODELS)}")
    task = speed.load_task(data)
    train_b = speed.batches(task, "train", args.train_batches, args.max_tokens, device)
    test_b = speed.batches(task, "test", args.decode_batches, args.max_tokens, device)
    rows = []
    t0 = time.perf_counter()
    for reference, group in (("transformer", TRANSFORMERS), ("lstm_luong", LSTMS)):
        names = [reference] + [m for m in wanted if m in group and m != reference]
        if len(names) == 1 and reference not in wanted:
            continue
        built = {n: speed.build(n, task, args.size, device) for n in names}
        rows += speed.measure(task, built, train_b, test_b, args.repeats, device)
        del built
    throughput = align_binarize.measure(args.align_sentences) if args.align_sentences else None
    collation_rows = None
    if args.collation_repeats:
        collation_rows = collation.measure(data, "suite data-bin", args.collation_repeats)
    where = machine(device)
    print(f"{where}; size {args.size}; {len(train_b)} training batches of up to {args.max_tokens} tokens, "
          f"{len(test_b)} x {args.repeats} decoding batches (beam 4, 30 steps); ratios to the reference "
          f"({time.perf_counter() - t0:.0f} s)")
    print(speed.format_rows(rows))
    if throughput:
        print(f"align + binarize, {throughput['sentences']} synthetic sentences: in memory (prepare) "
              f"{throughput['in_memory_sent_per_s']} sent/s, align.py + binarize.py {throughput['cli_sent_per_s']} "
              f"sent/s")
    if collation_rows:
        print(f"collation, ms per batch (read + collate), best of {args.collation_repeats} passes:")
        print(collation.format_rows(collation_rows))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"machine": where, "device": str(device), "size": args.size, "data": data,
                       "train_batches": len(train_b), "decode_batches": len(test_b), "repeats": args.repeats,
                       "max_tokens": args.max_tokens, "rows": rows, "align_binarize": throughput,
                       "collation": collation_rows}, f, indent=1)


if __name__ == "__main__":
    main()
