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

With ``--sentencepiece`` (needs ``--treebank``: its ``# text`` comments are the raw sentences), the same
treebank is also cut by a SentencePiece model learned on its raw text (``--spm-vocab-size``) and its pieces are
aligned by character offsets (fairseq_syntax/data/alignment/piece_align.py), in memory and streaming, beside
the BPE paths of the same run.

    OMP_NUM_THREADS=1 taskset -c 0 python examples/benchmark/align_binarize.py [--sentences 100000]
    OMP_NUM_THREADS=1 taskset -c 0 python examples/benchmark/align_binarize.py --treebank EWT.conllu --sentencepiece \
        --repeat 5
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
    p.add_argument("--sentencepiece", action="store_true",
                   help="also time SentencePiece pieces aligned by character offsets (needs --treebank)")
    p.add_argument("--spm-vocab-size", type=int, default=8000, help="the SentencePiece model's pieces [8000]")
    p.add_argument("--repeat", type=int, default=1, metavar="N",
                   help="run every path N times, alternating them, and report each path's fastest run (the least "
                   "disturbed by other work on the machine) [1]")
    args = p.parse_args(argv)
    if args.sentencepiece and not args.treebank:
        p.error("--sentencepiece needs --treebank (its # text comments are the raw sentences)")
    bpe_runs, piece_runs = [], []
    for i in range(args.repeat):  # the paths alternate, so that a load that comes and goes falls on both
        bpe_runs.append(measure(args.sentences, args.treebank))
        if args.sentencepiece:
            piece_runs.append(measure_pieces(args.sentences, args.treebank, args.spm_vocab_size))
        if args.repeat > 1:
            print(f"[align_binarize] run {i + 1}/{args.repeat} done", file=sys.stderr, flush=True)
    res = fastest(bpe_runs)
    res["repeats"] = args.repeat
    if args.sentencepiece:
        res["sentencepiece"] = fastest(piece_runs)
        res["sentencepiece"]["streaming_vs_bpe_streaming"] = round(
            res["sentencepiece"]["streaming_sent_per_s"] / res["streaming_sent_per_s"], 3)
        res["sentencepiece"]["in_memory_vs_bpe_in_memory"] = round(
            res["sentencepiece"]["in_memory_sent_per_s"] / res["in_memory_sent_per_s"], 3)
    res["cpu"] = _cpu()
    print(json.dumps(res, indent=1))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(res, f, indent=1)


def fastest(runs):
    """Each figure of the fastest run of every path: times the least, sentences per second the most."""
    out = dict(runs[0])
    for key in out:
        if key.endswith("_sent_per_s"):
            out[key] = max(r[key] for r in runs)
        elif key.endswith("_s"):
            out[key] = min(r[key] for r in runs)
    return out


def measure(sentences, treebank=None):
    """Seconds and sentences per second of the in-memory and the command-line align + binarize paths."""
    from fairseq_syntax.cli.align import main as align_main
    from fairseq_syntax.data.alignment.binarize import align_and_binarize, binarize_corpus
    from fairseq_syntax.cli.binarize import main as binarize_main
    from fairseq_syntax.data.alignment.subword_align import align_corpus

    import fairseq.data  # noqa: F401  (imported before the clocks start: binarising imports it, once a process)
    import fairseq.data.indexed_dataset  # noqa: F401

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


def _cpu():
    """The CPU's model name and its widest vector extension (times depend on both)."""
    name, flags = "", set()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name") and not name:
                    name = line.split(":", 1)[1].strip()
                elif line.startswith("flags") and not flags:
                    flags = set(line.split(":", 1)[1].split())
    except OSError:
        pass
    vector = "AVX-512" if "avx512f" in flags else "AVX2" if "avx2" in flags else "no AVX2"
    return f"{name or 'unknown'} ({vector})"


def measure_pieces(sentences, treebank, vocab_size):
    """Seconds and sentences per second of SentencePiece pieces aligned by character offsets: in memory (blocks
    gathered into arrays, then binarized, as the BPE in-memory figure) and streaming (align_and_binarize with the raw text, as prepare runs it). The pieces are
    made first (SentencePiece's own time is not the alignment's and is reported apart)."""
    import sentencepiece as spm

    from fairseq_syntax.data.alignment.binarize import align_and_binarize, binarize_corpus
    from fairseq_syntax.data.alignment.piece_align import iter_piece_aligned_blocks, load_sentencepiece
    from fairseq_syntax.data.alignment.syntax_io import AlignedCorpus
    from fairseq_syntax.data.trees.conllu import read_conllu, write_conllu
    from fairseq_syntax.preparation.sentencepiece_step import raw_sentences

    with tempfile.TemporaryDirectory() as d:
        sents = list(read_conllu(treebank))
        conllu = os.path.join(d, "x.conllu")
        with open(conllu, "w", encoding="utf-8") as fc:
            for i in range(0, sentences, len(sents)):
                write_conllu(sents[: min(len(sents), sentences - i)], fc)
        raw = raw_sentences(conllu, os.path.join(d, "x.raw"))
        with open(raw, encoding="utf-8") as f:
            lines = f.read().splitlines()
        model = os.path.join(d, "m")
        spm.SentencePieceTrainer.train(sentence_iterator=iter(lines[:len(sents)]), model_prefix=model,
                                       vocab_size=vocab_size, hard_vocab_limit=False, num_threads=1, minloglevel=2)
        sp = load_sentencepiece(model + ".model")
        t0 = time.perf_counter()
        pieces = sp.encode(lines, out_type=str)
        t1 = time.perf_counter()
        pieces_path = os.path.join(d, "x.spm")
        with open(pieces_path, "w", encoding="utf-8") as f:
            f.writelines(" ".join(p) + "\n" for p in pieces)
        n_pieces = sum(len(p) for p in pieces)
        del pieces
        t2 = time.perf_counter()
        corpus = AlignedCorpus()
        for block in iter_piece_aligned_blocks(conllu, raw, pieces_path, sp, progress=False):
            corpus.add_block(block)
        binarize_corpus(corpus, os.path.join(d, "bin0"), "train", "src", "tgt", "src")
        t3 = time.perf_counter()
        del corpus
        align_and_binarize(conllu, pieces_path, os.path.join(d, "bin"), "train", "src", "tgt", "src",
                           text_prefix=os.path.join(d, "st"), progress=False, raw=raw, spm_model=model + ".model")
        t4 = time.perf_counter()
    return {"pieces": n_pieces, "spm_vocab_size": vocab_size, "sentencepiece_encode_s": round(t1 - t0, 2),
            "in_memory_align_s": round(t3 - t2, 2), "in_memory_sent_per_s": round(sentences / (t3 - t2)),
            "streaming_s": round(t4 - t3, 2), "streaming_sent_per_s": round(sentences / (t4 - t3))}


if __name__ == "__main__":
    main()
