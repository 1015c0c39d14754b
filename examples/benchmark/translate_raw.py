#!/usr/bin/env python
"""Raw sentences per second end to end (parse, BPE and alignment, beam search, detokenisation) through the hub
interface, at batch 1 and batched, and where the time goes.

    OMP_NUM_THREADS=1 python examples/benchmark/translate_raw.py --models transformer=DIR dep_rel=DIR ... \\
        --data DATA-BIN --sentences FILE [--n 200] [--batch-sizes 1 64] [--beam 4] [--json out.json]

Each model is a folder with its checkpoint (``--checkpoint``, default checkpoint_best.pt) or a packed model
folder; ``--data`` is the data-bin it was trained on (with its preparation.json), unless the folder holds it.
The first ``--n`` lines of ``--sentences`` are translated after one warm-up batch (the parser's and the
model's first call). Reported per model and batch size: sentences/s end to end, and the seconds spent in the
parser, in a tokenizer alone (``--parser-free`` models: their own parse head gives the tree), in the rest of
the encoding (normalisation, tokens, BPE, the tree's alignment, the ids) and in beam search with detokenisation;
the ratio of each model's end-to-end time to the first model's.
"""
import argparse
import json
import os
import sys
import time


def measure(hub, lines, batch, beam):
    hub.translate(lines[:batch], beam=beam)  # warm-up: the parser's (or tokenizer's) and the model's first call
    enc = hub.task.raw_input._encoder
    enc.seconds = dict.fromkeys(enc.seconds, 0.0)
    t0 = time.perf_counter()
    for i in range(0, len(lines), batch):
        hub.translate(lines[i:i + batch], beam=beam)
    total = time.perf_counter() - t0
    parse, tokenize, encode = enc.seconds["parse"], enc.seconds["tokenize"], enc.seconds["encode"]
    return {"sentences": len(lines), "batch": batch, "seconds": round(total, 2),
            "sentences_per_second": round(len(lines) / total, 2), "parse_seconds": round(parse, 2),
            "tokenize_seconds": round(tokenize, 2), "bpe_align_seconds": round(encode - parse - tokenize, 2),
            "decode_seconds": round(total - encode, 2)}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__.split("\n\n", 1)[1])
    p.add_argument("--models", nargs="+", required=True, metavar="NAME=DIR", help="models, the first the reference")
    p.add_argument("--checkpoint", default="checkpoint_best.pt", help="checkpoint file in each folder")
    p.add_argument("--data", default=".", help="the data-bin (default: each folder itself)")
    p.add_argument("--sentences", required=True, help="raw sentences, one per line")
    p.add_argument("--n", type=int, default=200, help="sentences translated per measurement (default 200)")
    p.add_argument("--batch-sizes", type=int, nargs="+", default=[1, 64], help="default: 1 64")
    p.add_argument("--beam", type=int, default=4, help="beam size (default 4)")
    p.add_argument("--parser-free", nargs="*", default=[], metavar="NAME",
                   help="models decoded with inference_parser='self' (a self-parsing model: no parser, its own "
                   "parse head's tree; the text is only tokenised)")
    p.add_argument("--json", default=None, help="write the results here")
    args = p.parse_args(argv)
    from fairseq_syntax.inference.hub import from_pretrained

    lines = [x.rstrip("\n") for x in open(args.sentences, encoding="utf-8")][: args.n]
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "recipes"))
    from results_table import machine  # the CPU's name, cores and AVX-512, as the results JSON records it

    results = {"machine": machine(), "threads": os.environ.get("OMP_NUM_THREADS"), "beam": args.beam,
               "sentences_file": args.sentences, "checkpoint": args.checkpoint, "models": {}}
    for spec in args.models:
        name, folder = spec.split("=", 1)
        extra = {"inference_parser": "self"} if name in args.parser_free else {}
        hub = from_pretrained(folder, args.checkpoint, args.data, **extra)
        hub.eval()
        results["models"][name] = [measure(hub, lines, b, args.beam) for b in args.batch_sizes]
    ref = next(iter(results["models"].values()))
    print(f"| model | batch | sentences/s | parse s | tokenize s | BPE+align s | decode s | time vs "
          f"{args.models[0].split('=')[0]} |")
    print("|---|---|---|---|---|---|---|---|")
    for name, rows in results["models"].items():
        for row, base in zip(rows, ref):
            row["ratio_to_first"] = round(row["seconds"] / base["seconds"], 2)
            print(f"| {name} | {row['batch']} | {row['sentences_per_second']} | {row['parse_seconds']} | "
                  f"{row['tokenize_seconds']} | {row['bpe_align_seconds']} | {row['decode_seconds']} | "
                  f"{row['ratio_to_first']}x |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
