#!/usr/bin/env python
"""Preprocessing at the recipes' scale: throughput with 1 and 2 workers, peak memory of prepare.

Prints (and writes as JSON with --json):

* ``parse``: UDPipe 1 parse throughput (sentences/s) with 1 and 2 worker processes, raw text of UD English
  EWT train (``$FAIRSEQ_SYNTAX_SHARED/data``, default ../shared) with its
  ``models/en_ewt_udpipe_small.udpipe``; wall time of ``parse_chunked`` as ``prepare`` and ``parse.py`` run it
  (worker start and model loading included);
  and, as its control, N independent processes running the UDPipe backend alone on n/N sentences each;
* ``filter``: language-identification throughput (pairs/s) with 1 and 2 workers, UD PUD English-German
  sentence pairs repeated (langdetect by default: the slower tool, the PASCAL recipes');
* ``bpe``: subword-nmt BPE application (sentences/s) with 1 and 2 workers (EWT train tokens repeated,
  8000 merges learned on EWT train), and learn-bpe seconds at the sizes given (``--bpe-learn-pairs``);
* ``rss``: peak resident memory (max RSS of the largest process, as GNU time reports it) and wall time of
  ``preprocess/prepare.py`` at each of ``--rss-pairs`` training pairs, on the synthetic corpus with gold
  parses (``preprocess/synth.py``) and on UD PUD English-German gold trees repeated;
* ``align``: align + binarize sentences/s on one core (``align_binarize.py``, EWT train repeated);
* ``collation``: ms per batch (``collation.py``, EWT data-bin).

    OMP_NUM_THREADS=1 python examples/benchmark/preprocess.py --json preprocess.json
    OMP_NUM_THREADS=1 python examples/benchmark/preprocess.py --only rss --rss-pairs 100000,1000000

Throughputs measured while another process uses a core are depressed: compare the 1- and 2-worker figures
of one run on an otherwise idle machine.
"""
import argparse
import contextlib
import io
import itertools
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.path.insert(0, ROOT)
SHARED = os.environ.get("FAIRSEQ_SYNTAX_SHARED", os.path.join(os.path.dirname(ROOT), "shared"))
EWT_TRAIN = os.path.join(SHARED, "data", "UD_English-EWT", "en_ewt-ud-train.conllu")
PUD = {lang: os.path.join(SHARED, "data", f"UD_{name}-PUD", f"{lang}_pud-ud-test.conllu")
       for lang, name in (("en", "English"), ("de", "German"))}
UDPIPE_EN = os.path.join(SHARED, "models", "en_ewt_udpipe_small.udpipe")
SECTIONS = ("parse", "filter", "bpe", "rss", "align", "collation")


def _sentences(path):
    from fairseq_syntax.data.trees.conllu import read_conllu

    return list(read_conllu(path))


def _text(s):
    return next(c for c in s.comments if c.startswith("# text = "))[9:].strip()


def _repeat(items, n):
    return list(itertools.islice(itertools.cycle(items), n))


def _write(path, lines):
    with open(path, "w", encoding="utf-8") as f:
        f.writelines(x + "\n" for x in lines)
    return path


def _cpu():
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


class Timer:
    """Wall and CPU seconds (this process and its finished children) of a block."""

    def __enter__(self):
        self.t0, self.c0 = time.perf_counter(), _cpu()
        return self

    def __exit__(self, *exc):
        self.wall, self.cpu = time.perf_counter() - self.t0, _cpu() - self.c0


def _rates(n, timers, workers):
    """Items/s (wall), speedup, and the CPU seconds spent: cpu[1] / cpu[N] is the parallel efficiency
    (1.0: the N workers did the 1-worker work with no overhead), whatever else runs on the machine."""
    rate = {w: round(n / timers[w].wall, 1) for w in workers}
    cpu = {w: round(timers[w].cpu, 2) for w in workers}
    return {"per_s": rate, "speedup": round(rate[workers[-1]] / rate[workers[0]], 2), "cpu_s": cpu,
            "cpu_efficiency": round(cpu[workers[0]] / cpu[workers[-1]], 3),
            "cpu_per_s": {w: round(n / timers[w].cpu, 1) for w in workers}}


def _spin(n):
    x = 0
    for i in range(n):
        x += i * i
    return x


def machine_scaling(workers, n=20_000_000):
    """The control: wall-clock speedup of N pure-Python CPU spinners over one, at this moment. On an idle
    machine with N free cores it is N; when other programs hold cores it is what any N-worker step can
    reach, so a step's speedup is to be read against it."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    t0 = time.perf_counter()
    _spin(n)
    one = time.perf_counter() - t0
    w = workers[-1]
    with ProcessPoolExecutor(w, mp_context=multiprocessing.get_context("spawn")) as ex:
        list(ex.map(_spin, [10] * w))
        t0 = time.perf_counter()
        list(ex.map(_spin, [n] * w))
        many = time.perf_counter() - t0
    return round(w * one / many, 2)


def parse_throughput(d, n, workers, chunk_size):
    """UDPipe sentences/s for each worker count; the outputs must be identical."""
    from fairseq_syntax.preparation.parse_files import parse_chunked

    raw = _write(os.path.join(d, "parse.txt"), [_text(s) for s in _sentences(EWT_TRAIN)[:n]])
    timers, outs = {}, []
    for w in workers:
        out = os.path.join(d, f"parse.w{w}.conllu")
        with Timer() as timers[w]:
            parse_chunked(raw, out, spec=("udpipe", {"model_path": UDPIPE_EN, "pretokenized": False}), workers=w,
                          chunk_size=chunk_size, progress=False)
        outs.append(open(out, "rb").read())
    assert all(o == outs[0] for o in outs), "outputs differ between worker counts"
    return {"sentences": n, "load_before": os.getloadavg()[0], **_rates(n, timers, workers)}


def _udpipe_worker(lines, barrier, results):
    from fairseq_syntax.parsing.udpipe_backend import UDPipeParser

    parser = UDPipeParser(model_path=UDPIPE_EN)
    barrier.wait()
    t0 = time.perf_counter()
    for i in range(0, len(lines), 256):  # the batches parse_chunked gives the backend
        parser.parse(lines[i:i + 256])
    results.put((t0, time.perf_counter()))


def udpipe_process_scaling(n, workers):
    """The parse step's own control: N independent processes that only run the UDPipe backend (model
    loaded before the clock starts; no chunks, no files, no pipes) on n/N sentences each, against one
    process on all n. If these fall short of the CPU spinners too, the shortfall is the parser's on this machine
    (shared caches and memory bandwidth), not the chunking's."""
    import multiprocessing

    ctx = multiprocessing.get_context("spawn")
    lines = [_text(s) for s in _sentences(EWT_TRAIN)[:n]]
    walls = {}
    for w in workers:
        barrier, results = ctx.Barrier(w), ctx.Queue()
        procs = [ctx.Process(target=_udpipe_worker, args=(lines[i::w], barrier, results)) for i in range(w)]
        for p in procs:
            p.start()
        spans = [results.get() for _ in procs]
        for p in procs:
            p.join()
        walls[w] = max(t1 for _, t1 in spans) - min(t0 for t0, _ in spans)
    return {"sentences": n, "per_s": {w: round(n / walls[w], 1) for w in workers},
            "speedup": round(walls[workers[0]] / walls[workers[-1]], 2)}


def filter_throughput(d, n, workers, tool, chunk_size):
    from fairseq_syntax.preparation.pair_selection import language_keep_file

    en, de = ([_text(s) for s in _sentences(PUD[lang])] for lang in ("en", "de"))
    a = _write(os.path.join(d, "filter.en"), _repeat(en, n))
    b = _write(os.path.join(d, "filter.de"), _repeat(de, n))
    timers, outs = {}, []
    for w in workers:
        out = os.path.join(d, f"filter.w{w}.mask")
        with Timer() as timers[w]:
            language_keep_file(a, b, out, ("en", "de"), tool, workers=w, chunk_size=chunk_size)
        outs.append(open(out, "rb").read())
    assert all(o == outs[0] for o in outs), "outputs differ between worker counts"
    return {"tool": tool, "pairs": n, "load_before": os.getloadavg()[0], **_rates(n, timers, workers),
            "kept": outs[0].count(b"1")}


def bpe_throughput(d, n, workers, merges, learn_pairs):
    from subword_nmt.learn_bpe import learn_bpe

    from fairseq_syntax.preparation.bpe import apply_bpe_file

    toks = [" ".join(s.tokens) for s in _sentences(EWT_TRAIN)]
    train = _write(os.path.join(d, "bpe.train"), toks)
    codes = os.path.join(d, "bpe.codes")
    t0 = time.perf_counter()
    with open(train, encoding="utf-8") as fin, open(codes, "w", encoding="utf-8") as fout, \
            contextlib.redirect_stderr(io.StringIO()):
        learn_bpe(fin, fout, merges, min_frequency=2)
    learn = {len(toks): round(time.perf_counter() - t0, 1)}
    text = _write(os.path.join(d, "bpe.text"), _repeat(toks, n))
    timers, outs = {}, []
    for w in workers:
        with Timer() as timers[w]:
            apply_bpe_file(codes, text, os.path.join(d, f"bpe.w{w}"), workers=w, progress=False)
        outs.append(open(os.path.join(d, f"bpe.w{w}"), "rb").read())
    assert all(o == outs[0] for o in outs), "outputs differ between worker counts"
    res = _rates(n, timers, workers)
    learn.update(bpe_learn_real(d, merges))
    for pairs in learn_pairs:  # learn-bpe on the synthetic corpus, both sides joint, as prepare does
        raw = os.path.join(d, f"synth{pairs}")
        subprocess.run([sys.executable, os.path.join(ROOT, "preprocess", "synth.py"), "-o", raw, "--train",
                        str(pairs), "--valid", "10", "--test", "10"], check=True, stdout=subprocess.DEVNULL)
        cat = os.path.join(d, "bpe.cat")
        with open(cat, "w", encoding="utf-8") as out:
            for lang in ("src", "tgt"):
                for s in _sentences(os.path.join(raw, f"train.{lang}.conllu")):
                    out.write(" ".join(s.tokens) + "\n")
        t0 = time.perf_counter()
        with open(cat, encoding="utf-8") as fin, open(codes + ".s", "w", encoding="utf-8") as fout, \
                contextlib.redirect_stderr(io.StringIO()):
            learn_bpe(fin, fout, merges, min_frequency=2)
        learn[f"synthetic {pairs} pairs"] = round(time.perf_counter() - t0, 1)
    return {"merges": merges, "apply_sentences": n, "apply": res, "learn_s": learn}


def bpe_learn_real(d, merges):
    """learn-bpe seconds (vocabulary counting and the merges apart) on Multi30k train En+De joint, at a
    quarter, half and all of its 29k pairs: how the cost grows with real text."""
    from subword_nmt.learn_bpe import get_vocabulary, learn_bpe

    raw = os.path.join(SHARED, "data", "multi30k", "task1", "raw")
    if not os.path.exists(os.path.join(raw, "train.en")):
        return {}
    lines = {lang: open(os.path.join(raw, f"train.{lang}"), encoding="utf-8").read().splitlines()
             for lang in ("en", "de")}
    out = {}
    for frac in (0.25, 0.5, 1.0):
        n = int(len(lines["en"]) * frac)
        cat = _write(os.path.join(d, "m30k.cat"), lines["en"][:n] + lines["de"][:n])
        t0 = time.perf_counter()
        with open(cat, encoding="utf-8") as f:
            vocab = get_vocabulary(f)
        t1 = time.perf_counter()
        with open(cat, encoding="utf-8") as fin, open(cat + ".codes", "w", encoding="utf-8") as fout, \
                contextlib.redirect_stderr(io.StringIO()):
            learn_bpe(fin, fout, merges, min_frequency=2)
        t2 = time.perf_counter()
        out[f"multi30k {n} pairs"] = {"seconds": round(t2 - t1, 1), "vocabulary_count_s": round(t1 - t0, 2),
                                      "word_types": len(vocab)}
    return out


def _peak_rss(cmd):
    """Max RSS (MiB) of the largest process of cmd's tree, and its wall seconds, in a fresh wrapper."""
    wrapper = ("import resource, subprocess, sys, time; t = time.perf_counter(); "
               "subprocess.run(sys.argv[1:], check=True, stdout=subprocess.DEVNULL); "
               "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, time.perf_counter() - t)")
    out = subprocess.run([sys.executable, "-c", wrapper, *cmd], check=True, capture_output=True, text=True).stdout
    kb, secs = out.split()
    return round(int(kb) / 1024, 1), round(float(secs), 1)


def _pud_corpus(d, n):
    """UD PUD English-German gold trees repeated to n training pairs (+ 100 valid)."""
    from fairseq_syntax.data.trees.conllu import write_conllu

    raw = os.path.join(d, f"pud{n}")
    os.makedirs(raw, exist_ok=True)
    for lang in ("en", "de"):
        sents = _sentences(PUD[lang])
        for s in sents:
            s.comments = []
        with open(os.path.join(raw, f"train.{lang}.conllu"), "w", encoding="utf-8") as f:
            for i in range(0, n, len(sents)):
                write_conllu(sents[: min(len(sents), n - i)], f)
        with open(os.path.join(raw, f"valid.{lang}.conllu"), "w", encoding="utf-8") as f:
            write_conllu(sents[:100], f)
    return raw, ("en", "de")


def _synthetic_corpus(d, n, synth_dir=None):
    if synth_dir:
        return synth_dir, ("src", "tgt")
    raw = os.path.join(d, "synth-rss")
    if not os.path.exists(os.path.join(raw, "train.src.conllu")):
        subprocess.run([sys.executable, os.path.join(ROOT, "preprocess", "synth.py"), "-o", raw, "--train", str(n),
                        "--valid", "500", "--test", "10"], check=True, stdout=subprocess.DEVNULL)
    return raw, ("src", "tgt")


def prepare_rss(d, pair_counts, corpora, merges, synth_dir=None):
    """Peak RSS and wall time of prepare at each size (the first N pairs of one corpus: --train-first)."""
    rows = []
    biggest = max(pair_counts)
    for corpus in corpora:
        raw, (s, t) = _synthetic_corpus(d, biggest, synth_dir) if corpus == "synthetic" else _pud_corpus(d, biggest)
        for n in pair_counts:
            dest = os.path.join(d, f"bin-{corpus}-{n}")
            cmd = [sys.executable, os.path.join(ROOT, "preprocess", "prepare.py"), "-s", s, "-t", t,
                   "--trainpref", os.path.join(raw, "train"), "--validpref", os.path.join(raw, "valid"),
                   "--destdir", dest, "--bpe-merges", str(merges), "--train-first", str(n), "--no-progress"]
            mib, secs = _peak_rss(cmd)
            rows.append({"corpus": corpus, "pairs": n, "peak_rss_mib": mib, "wall_s": secs})
            print(f"  prepare, {corpus}, {n} pairs: peak RSS {mib} MiB, {secs} s", flush=True)
            subprocess.run(["rm", "-rf", dest])
    for corpus in corpora:
        mine = [r for r in rows if r["corpus"] == corpus]
        mine[-1]["ratio_to_smallest"] = round(mine[-1]["peak_rss_mib"] / mine[0]["peak_rss_mib"], 3)
    return rows


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--only", default=",".join(SECTIONS), help=f"comma list of sections (default: all: "
                   f"{','.join(SECTIONS)})")
    p.add_argument("--workers", default="1,2", help="worker counts to compare (default 1,2)")
    p.add_argument("--parse-sentences", type=int, default=3000, help="sentences parsed per worker count")
    p.add_argument("--filter-pairs", type=int, default=1500, help="pairs identified per worker count")
    p.add_argument("--filter-tool", default="langdetect", choices=["langdetect", "langid"])
    p.add_argument("--chunk-size", type=int, default=256, help="chunk size of parse and filter (default 256)")
    p.add_argument("--bpe-sentences", type=int, default=200000, help="sentences BPE'd per worker count")
    p.add_argument("--bpe-merges", type=int, default=8000)
    p.add_argument("--bpe-learn-pairs", default="", help="also time learn-bpe on synthetic corpora of these sizes")
    p.add_argument("--rss-pairs", default="100000,1000000", help="training pairs for prepare's peak RSS")
    p.add_argument("--rss-corpora", default="synthetic,pud", help="synthetic and/or pud (UD PUD En-De repeated)")
    p.add_argument("--rss-merges", type=int, default=8000, help="BPE merges of the prepare runs")
    p.add_argument("--synthetic-dir", default=None, help="an existing synth.py output with at least the largest "
                   "--rss-pairs training pairs (default: generated)")
    p.add_argument("--align-sentences", type=int, default=100000)
    p.add_argument("--workdir", default=None, help="scratch directory (default: a temporary one)")
    p.add_argument("--json", default=None)
    args = p.parse_args(argv)
    only = set(args.only.split(","))
    workers = [int(x) for x in args.workers.split(",")]
    res = {"cpus": os.cpu_count(), "load_average": os.getloadavg()[0]}
    if only & {"parse", "filter", "bpe"}:
        res["control_speedup"] = machine_scaling(workers)
        print(f"control: {workers[-1]} CPU spinners run {res['control_speedup']}x as fast as one", flush=True)
    if args.workdir:
        os.makedirs(args.workdir, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=args.workdir) as d:
        if "parse" in only:
            res["parse_udpipe"] = parse_throughput(d, args.parse_sentences, workers, args.chunk_size)
            print("parse (UDPipe):", res["parse_udpipe"], flush=True)
            res["udpipe_processes"] = udpipe_process_scaling(args.parse_sentences, workers)
            print("control: independent UDPipe backend processes:", res["udpipe_processes"], flush=True)
        if "filter" in only:
            res["language_filter"] = filter_throughput(d, args.filter_pairs, workers, args.filter_tool,
                                                       args.chunk_size)
            print("language filter:", res["language_filter"], flush=True)
        if "bpe" in only:
            learn = [int(x) for x in args.bpe_learn_pairs.split(",") if x]
            res["bpe"] = bpe_throughput(d, args.bpe_sentences, workers, args.bpe_merges, learn)
            print("BPE:", res["bpe"], flush=True)
        if "rss" in only:
            res["prepare_rss"] = prepare_rss(d, [int(x) for x in args.rss_pairs.split(",")],
                                             args.rss_corpora.split(","), args.rss_merges, args.synthetic_dir)
            print("prepare peak RSS:", res["prepare_rss"], flush=True)
        if "align" in only:
            import align_binarize

            res["align_binarize"] = align_binarize.measure(args.align_sentences, EWT_TRAIN)
            print("align + binarize:", res["align_binarize"], flush=True)
        if "collation" in only:
            import collation

            data = collation.ewt_data_bin(os.path.join(ROOT, "work", "benchmark"))
            rows = collation.measure(data, "UD English EWT train", 3)
            res["collation"] = rows
            print("collation, ms per batch:\n" + collation.format_rows(rows), flush=True)
    print(json.dumps(res, indent=1))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
