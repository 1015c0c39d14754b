#!/usr/bin/env python
"""Throughput of preprocess align + binarize, in sentences per second on one core.

Builds a synthetic corpus of N sentences (default 100k; gold CoNLL-U plus a
BPE'd version where every word longer than 4 characters is split in two),
then times
  * the in-memory path (CoNLL-U + BPE -> aligned arrays -> mmap datasets),
  * the two command-line steps (align.py writes text files, binarize.py
    reads them back and writes the mmap datasets), and
  * the streaming path that preprocess/prepare.py uses (align_and_binarize:
    block by block to the mmap datasets and the text files, memory not
    growing with the corpus).

All three read the CoNLL-U in blocks as byte arrays
(fairseq_syntax/data/trees/conllu_blocks.py).

    OMP_NUM_THREADS=1 taskset -c 0 python examples/benchmark/align_binarize.py [--sentences 100000]
"""
import argparse
import json
import os
import random
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def _split(w):
    return w[:2] + "@@ " + w[2:] if len(w) > 4 else w


def make_inputs(d, n, seed=1, treebank=None):
    from fairseq_syntax.data.trees.conllu import read_conllu, write_conllu
    from fairseq_syntax.preparation.corpora.synthetic import SyntheticLanguagePair

    if treebank:  # a real treebank, repeated to n sentences
        sents = list(read_conllu(treebank))
        conllu, bpe = os.path.join(d, "x.conllu"), os.path.join(d, "x.bpe")
        with open(conllu, "w", encoding="utf-8") as fc, open(bpe, "w", encoding="utf-8") as fb:
            for i in range(0, n, len(sents)):
                chunk = sents[: min(len(sents), n - i)]
                write_conllu(chunk, fc)
                for s in chunk:
                    fb.write(" ".join(_split(w) for w in s.tokens) + "\n")
        return conllu, bpe
    pair = SyntheticLanguagePair(seed)
    rng = random.Random(seed)
    conllu, bpe = os.path.join(d, "x.conllu"), os.path.join(d, "x.bpe")
    with open(conllu, "w", encoding="utf-8") as fc, open(bpe, "w", encoding="utf-8") as fb:
        batch = []
        for i in range(n):
            src, _ = pair.sample(rng)
            batch.append(src)
            fb.write(" ".join(_split(w) for w in src.words) + "\n")
            if len(batch) == 1000:
                write_conllu(batch, fc)
                batch = []
        write_conllu(batch, fc)
    return conllu, bpe


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sentences", type=int, default=100_000)
    p.add_argument("--treebank", default=None,
                   help="a CoNLL-U file to repeat instead of the synthetic corpus (e.g. UD English EWT train)")
    p.add_argument("--json", default=None, help="also write the figures to this JSON file")
    args = p.parse_args(argv)
    res = measure(args.sentences, args.treebank)
    print(json.dumps(res, indent=1))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(res, f, indent=1)


def measure(sentences, treebank=None):
    """Seconds and sentences per second of the in-memory and the command-line align + binarize paths."""
    from fairseq_syntax.cli.align import main as align_main
    from fairseq_syntax.data.alignment.binarize import align_and_binarize, binarize_corpus
    from fairseq_syntax.cli.binarize import main as binarize_main
    from fairseq_syntax.data.alignment.subword_align import align_corpus

    with tempfile.TemporaryDirectory() as d:
        conllu, bpe = make_inputs(d, sentences, treebank=treebank)
        n = sentences
        words = sum(1 for line in open(conllu, encoding="utf-8") if line[:1].isdigit())
        t0 = time.perf_counter()
        corpus = align_corpus(conllu, bpe, progress=False)
        t1 = time.perf_counter()
        n_subwords = len(corpus.words)
        binarize_corpus(corpus, os.path.join(d, "bin"), "train", "src", "tgt", "src")
        t2 = time.perf_counter()
        align_main(["--conllu", conllu, "--bpe", bpe, "-o", os.path.join(d, "al"), "--no-progress"])
        t3 = time.perf_counter()
        binarize_main(["--aligned-prefix", os.path.join(d, "al"), "--destdir", os.path.join(d, "bin2"),
                       "--split", "train", "-s", "src", "-t", "tgt", "--lang", "src"])
        t4 = time.perf_counter()
        del corpus
        align_and_binarize(conllu, bpe, os.path.join(d, "bin3"), "train", "src", "tgt", "src",
                           text_prefix=os.path.join(d, "st"), progress=False)
        t5 = time.perf_counter()
    return {
        "input": treebank or "synthetic corpus",
        "sentences": n,
        "words": words,
        "subwords": n_subwords,
        "in_memory_align_s": round(t1 - t0, 2),
        "in_memory_binarize_s": round(t2 - t1, 2),
        "in_memory_sent_per_s": round(n / (t2 - t0)),
        "cli_align_s": round(t3 - t2, 2),
        "cli_binarize_s": round(t4 - t3, 2),
        "cli_sent_per_s": round(n / (t4 - t2)),
        "streaming_s": round(t5 - t4, 2),
        "streaming_sent_per_s": round(n / (t5 - t4)),
    }


if __name__ == "__main__":
    main()
