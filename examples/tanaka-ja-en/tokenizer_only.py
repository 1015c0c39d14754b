#!/usr/bin/env python
"""Parser-free decoding of Japanese needs GiNZA's tokens without its parser: does its tokenizer alone (every
pipeline component excluded from loading) give the tokens the full pipeline gave the training data? Compares,
sentence by sentence over the whole corpus, the tokens of ``load_tokenizer_only`` with the surface tokens of the
recipe's parses (WORK/text/{train,valid,test}.ja.conllu, made from WORK/raw/SPLIT.ja), and times both loads.

    python examples/tanaka-ja-en/tokenizer_only.py --work work/tanaka-ja-en --json examples/tanaka-ja-en/results/tokenizer_only.json
"""
import argparse
import json
import os
import platform
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, ROOT)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--work", required=True, help="the Tanaka recipe's WORK (raw/ and text/)")
    p.add_argument("--model", default="ja_ginza")
    p.add_argument("--json", default=None)
    args = p.parse_args(argv)
    from fairseq_syntax.data.trees.conllu import read_conllu
    from fairseq_syntax.parsing.spacy_backend import load_tokenizer_only

    t0 = time.perf_counter()
    tokenize = load_tokenizer_only(args.model)
    load_s = time.perf_counter() - t0
    result = {"model": args.model, "tokenizer_load_seconds": round(load_s, 2), "splits": {}, "cpu": platform.processor()
              or platform.machine()}
    first_diff = None
    for split in ("train", "valid", "test"):
        raw = [line.rstrip("\n") for line in open(os.path.join(args.work, "raw", f"{split}.ja"), encoding="utf-8")]
        t0 = time.perf_counter()
        toks = tokenize(raw)
        seconds = time.perf_counter() - t0
        same = 0
        for k, (mine, sent) in enumerate(zip(toks, read_conllu(os.path.join(args.work, "text", f"{split}.ja.conllu")))):
            if mine == list(sent.forms("surface")):
                same += 1
            elif first_diff is None:
                first_diff = {"split": split, "line": k + 1, "tokenizer": mine, "pipeline": list(sent.forms("surface"))}
        result["splits"][split] = {"sentences": len(raw), "same_tokens": same, "tokenize_seconds": round(seconds, 2)}
        print(f"{split}: {same} of {len(raw)} sentences tokenised as the full pipeline did ({seconds:.1f} s)")
    result["first_difference"] = first_diff
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(result, f, indent=1)
            f.write("\n")


if __name__ == "__main__":
    main()
