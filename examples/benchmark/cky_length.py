#!/usr/bin/env python
"""Cost of CKY-based attention vs the LSTM baseline as the source grows (Watanabe et al. 2017).

Builds ``cky_lstm`` and ``lstm_luong`` (d = 256, the paper's size) over a
synthetic vocabulary and times, at each source length (target length equal),
on the same random batches, interleaved model by model:

* a training step (label-smoothed CE, forward + backward + Adam step);
* beam-4 decoding of exactly L target tokens (EOS blocked until then, so both
  models do the same number of steps);
* training memory (see ``speed.py``: CUDA peak, or on CPU parameters + grads +
  Adam moments + saved activations).

Ratios are cky_lstm / lstm_luong at the same length; the last column pair
shows how each model's train step grows relative to the shortest length.

    OMP_NUM_THREADS=1 python examples/benchmark/cky_length.py --lengths 10,25,50 --json cky_length.json
"""
import argparse
import json
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from speed import decode, timed, train_memory_cpu, train_step  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, ROOT)


def make_task(vocab):
    from argparse import Namespace

    from fairseq.data import Dictionary

    d = Dictionary()
    for i in range(vocab - len(d)):
        d.add_symbol(f"w{i}")
    return Namespace(source_dictionary=d, target_dictionary=d)


def build(arch, task, dim, device):
    from argparse import Namespace

    from fairseq.criterions.label_smoothed_cross_entropy import LabelSmoothedCrossEntropyCriterion
    from fairseq.models import ARCH_CONFIG_REGISTRY, ARCH_MODEL_REGISTRY

    import fairseq_syntax.plugin  # noqa: F401

    args = Namespace(arch=arch, embed_dim=dim)
    ARCH_CONFIG_REGISTRY[arch](args)
    torch.manual_seed(1)
    model = ARCH_MODEL_REGISTRY[arch].build_model(args, task).to(device)
    model.benchmark_inputs = frozenset()
    criterion = LabelSmoothedCrossEntropyCriterion(task, sentence_avg=False, label_smoothing=0.1)
    return model, criterion, torch.optim.Adam(model.parameters(), lr=1e-4)


def make_batch(task, length, bsz, generator, device):
    from fairseq import utils

    d = task.source_dictionary
    words = lambda: torch.randint(d.nspecial, len(d), (bsz, length - 1), generator=generator)  # noqa: E731
    eos = torch.full((bsz, 1), d.eos(), dtype=torch.long)
    src, tgt = torch.cat([words(), eos], 1), torch.cat([words(), eos], 1)
    prev = torch.cat([eos, tgt[:, :-1]], 1)
    batch = {"id": torch.arange(bsz), "nsentences": bsz, "ntokens": bsz * length, "target": tgt,
             "net_input": {"src_tokens": src, "src_lengths": torch.full((bsz,), length), "prev_output_tokens": prev}}
    return utils.move_to_cuda(batch) if device.type == "cuda" else batch


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--lengths", default="10,25,50", help="source (= target) lengths in tokens, EOS included")
    p.add_argument("--batch-size", type=int, default=32, help="sentences per batch (default 32)")
    p.add_argument("--batches", type=int, default=3, help="timed training batches per length (default 3)")
    p.add_argument("--decode-batch-size", type=int, default=8, help="sentences per decoding batch (default 8)")
    p.add_argument("--vocab", type=int, default=16000, help="source and target vocabulary size (default 16000)")
    p.add_argument("--dim", type=int, default=256, help="d (default 256, the paper's)")
    p.add_argument("--models", default="lstm_luong,cky_lstm", help="comma list, the first is the reference")
    p.add_argument("--json", default=None, help="write the rows here")
    args = p.parse_args(argv)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    task = make_task(args.vocab)
    names = args.models.split(",")
    built = {n: build(n, task, args.dim, device) for n in names}
    gen = torch.Generator().manual_seed(0)
    rows = []
    for length in [int(x) for x in args.lengths.split(",")]:
        train_b = [make_batch(task, length, args.batch_size, gen, device) for _ in range(args.batches)]
        dec_b = make_batch(task, length, args.decode_batch_size, gen, device)
        for n in names:  # warm-up at this length
            train_step(*built[n], train_b[0])
        t_train = {n: 0.0 for n in names}
        t_dec = {n: 0.0 for n in names}
        for b in train_b:
            for n in names:
                t_train[n] += timed(device, train_step, *built[n], b)
        for n in names:
            t_dec[n] = timed(device, decode, task, built[n][0], dec_b, length)
        for n in names:
            if device.type == "cuda":
                torch.cuda.reset_peak_memory_stats()
                train_step(*built[n], train_b[0])
                mem = torch.cuda.max_memory_allocated() / 2**20
            else:
                mem = train_memory_cpu(built[n][0], built[n][1], train_b[:1])
            rows.append({"model": n, "length": length, "train_step_ms": 1000 * t_train[n] / len(train_b),
                         "decode_ms": 1000 * t_dec[n], "mem_mib": mem})
    ref = {(r["length"]): r for r in rows if r["model"] == names[0]}
    first = {r["model"]: r for r in rows if r["length"] == rows[0]["length"]}
    print(f"device {device}, d {args.dim}, vocab {args.vocab}, train batch {args.batch_size} x L, "
          f"decode batch {args.decode_batch_size} (beam 4, L steps); ratios to {names[0]} at the same length")
    print(f"{'model':<12} {'L':>3} {'train ms':>9} {'ratio':>6} {'decode ms':>10} {'ratio':>6} {'mem MiB':>8} "
          f"{'ratio':>6} {'train x L0':>10}")
    for r in rows:
        base = ref[r["length"]]
        r.update(train_ratio=r["train_step_ms"] / base["train_step_ms"], decode_ratio=r["decode_ms"] / base["decode_ms"],
                 mem_ratio=r["mem_mib"] / base["mem_mib"], growth=r["train_step_ms"] / first[r["model"]]["train_step_ms"])
        print(f"{r['model']:<12} {r['length']:>3} {r['train_step_ms']:9.1f} {r['train_ratio']:6.2f} {r['decode_ms']:10.1f} "
              f"{r['decode_ratio']:6.2f} {r['mem_mib']:8.1f} {r['mem_ratio']:6.2f} {r['growth']:10.2f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": str(device), "dim": args.dim, "vocab": args.vocab, "batch_size": args.batch_size,
                       "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
