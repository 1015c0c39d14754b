#!/usr/bin/env python3
"""Paired step timings and true peak memory of syntax transformers against fairseq's transformer, into one JSON.

The protocol (its statistics: examples/gpu/timing_analysis.py):

* every model is built at once, each as fairseq-train builds it (its task, criterion and ``Trainer``, so the
  step timed is fairseq's ``train_step``: forward, backward, the FP16 optimizer), at Transformer base
  (``--tiny``: the tiny presets);
* the batches are those of a synthetic data-bin (examples/gpu/synthetic_bin.py: random token ids, random
  valid trees), batched by fairseq at each block's tokens per batch, the same sentences for every model
  (collated by each model's own task: its parent strategy and fields), moved to the device before timing;
* a block is one precision, one regime (``tanaka``: sentences of 4-14 subwords, as Tanaka's; ``wmt``: 20-100)
  and one batch size. In it every model is first warmed ``--warmup`` times over every batch (the last pass
  measures memory), then timed in ``--rounds`` rounds: each round visits the batches in order and, for each,
  steps every model once, in a seeded random order;
* fp16 starts the loss scale at ``--fp16-init-scale`` (low, so that few updates overflow), and an update that
  fairseq skips for an overflow (its update count does not move) is recorded as not timed; bf16 is fairseq's
  Trainer with ``common.bf16`` set after parsing (fairseq 0.12's ``--bf16`` flag implies ``--tpu``, XLA): no
  loss scale, and fairseq keeps its fp32 master weights unflattened, so bf16's absolute step times are not
  fp16's (its ratios are against the transformer under the same optimizer);
* a step is timed whole: ``torch.cuda.synchronize()`` before it, CUDA events around it and a synchronize
  after (fairseq's train_step waits for the device inside, so events inside it would time the host); on the
  CPU ``time.perf_counter``; Python's garbage collector is off while a block is timed;
* after the rounds, ``--profile-steps`` steps of each model on the first batch under ``torch.profiler``: the
  time the device was busy a step (the kernels' intervals; on the CPU the operators') beside the wall time;
* memory (examples/gpu/peak_memory.py): each step of the last warm-up pass, with fairseq's per-step reset of
  the peak counter disabled, as its peak minus what was allocated before it plus the model's static state;
  a model's figure is the largest over the block's batches (on the CPU, where torch keeps no allocator
  statistics, the static state alone).

    python3 examples/gpu/paired_timing.py --out gpu-out            # on a GPU: fp16 and bf16, every block
    python3 examples/gpu/paired_timing.py --device cpu --tiny --dtypes fp32 --out /tmp/pt --rounds 2 ...
"""
import argparse
import gc
import json
import os
import platform
import random
import shutil
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
USER_DIR = os.path.join(ROOT, "fairseq_syntax")
sys.path[:0] = [HERE, ROOT]  # this folder's modules; the checkout's plugin
import peak_memory  # noqa: E402
import timing_analysis  # noqa: E402
from device_check import DEP, LS, SYNC  # noqa: E402  (the check's criterion options of each paper's model)
#: name (the architecture at base size) -> criterion options; the first is the reference
MODELS = {
    "transformer": LS,
    "transformer_rel": LS,
    "transformer_dep": LS,
    "transformer_dep_rel": LS,
    "transformer_pascal": LS,
    "transformer_sh": LS,
    "transformer_dbsa_enc": DEP,
    "transformer_dbsa_dec": DEP,
    "transformer_dbsa": DEP,
    "transformer_sisa": DEP,
    "transformer_syncattn": SYNC,
}
DEFAULT_MODELS = ("transformer", "transformer_rel", "transformer_dep", "transformer_dep_rel", "transformer_pascal",
                  "transformer_sh", "transformer_dbsa_enc", "transformer_syncattn")
#: the models with a relative-position term (step goal 1.10x; the others 1.03x)
RELATIVE = ("transformer_rel", "transformer_dep", "transformer_dep_rel")
#: regime -> subwords per sentence (shortest, longest), each side drawn on its own
REGIMES = {"tanaka": (4, 14), "wmt": (20, 100)}
DEFAULT_BLOCKS = "wmt:8192,wmt:32768,tanaka:8192"
#: fairseq's transformer at the tiny presets' size (fairseq_syntax/models/presets.py)
TINY_TRANSFORMER = ["--encoder-layers", "2", "--decoder-layers", "2", "--encoder-embed-dim", "32",
                    "--decoder-embed-dim", "32", "--encoder-ffn-embed-dim", "64", "--decoder-ffn-embed-dim", "64",
                    "--encoder-attention-heads", "4", "--decoder-attention-heads", "4"]
#: --tiny: (architecture, options) where a model has no _tiny preset
TINY = {"transformer": ("transformer", TINY_TRANSFORMER),
        "transformer_dbsa_enc": ("syntax_transformer_tiny", ["--dbsa-encoder-layer", "2"]),
        "transformer_dbsa_dec": ("syntax_transformer_tiny", ["--dbsa-decoder-layer", "2"])}


def log(msg):
    print(f"[paired-timing {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def parse_blocks(text):
    """"wmt:8192,wmt:32768" -> [("wmt", 8192), ("wmt", 32768)]; one line naming the option on a bad entry."""
    out = []
    for item in (x for x in text.split(",") if x):
        regime, _, tokens = item.partition(":")
        if regime not in REGIMES or not tokens.isdigit():
            raise SystemExit(f"error: --blocks: {item!r}: give REGIME:TOKENS with REGIME one of {', '.join(REGIMES)}")
        out.append((regime, int(tokens)))
    return out


def build_trainer(name, data, dtype, device, tiny, init_scale, seed):
    """fairseq's task, Trainer and model of one named model, as fairseq-train builds them."""
    import torch
    from fairseq import options, tasks
    from fairseq.dataclass.utils import convert_namespace_to_omegaconf
    from fairseq.trainer import Trainer

    arch, size = (name, []) if not tiny else TINY.get(name, (name + "_tiny", []))
    precision = {"fp16": ["--fp16", "--fp16-init-scale", str(init_scale)], "bf16": [], "fp32": []}[dtype]
    argv = [data, "--user-dir", USER_DIR, "--task", "syntax_translation", "-s", "src", "-t", "tgt",
            "--train-subset", "wmt", "--valid-subset", "tanaka", "--arch", arch, *size, *MODELS[name],
            "--share-all-embeddings", "--optimizer", "adam", "--adam-betas", "(0.9, 0.98)", "--lr", "0.0005",
            "--lr-scheduler", "inverse_sqrt", "--warmup-updates", "4000", "--max-tokens", "8192", "--seed",
            str(seed), "--num-workers", "0", *precision, *(["--cpu"] if device == "cpu" else [])]
    cfg = convert_namespace_to_omegaconf(options.parse_args_and_arch(options.get_training_parser(), argv))
    if dtype == "bf16":  # what --bf16 would set, without the --tpu that fairseq 0.12 adds to it
        cfg.common.bf16, cfg.common.tpu = True, False
    torch.manual_seed(seed)
    task = tasks.setup_task(cfg.task)
    model = task.build_model(cfg.model)
    criterion = task.build_criterion(cfg.criterion)
    for split in REGIMES:
        task.load_dataset(split)
    return task, Trainer(cfg, task, model, criterion)


def batch_indices(dataset, max_tokens, n, seed):
    """The sentence indices of n of fairseq's batches of at most max_tokens (its length-sorted batching of the
    split, the batches' order shuffled with the seed, those less than half full left out), the same for every
    model."""
    from fairseq.data import data_utils

    with data_utils.numpy_seed(seed):
        indices = dataset.ordered_indices()
    batches = dataset.batch_by_size(indices, max_tokens=max_tokens, required_batch_size_multiple=8)
    # not the split's remainder (the last batch, partly filled): every batch timed holds at least half its tokens
    batches = [b for b in batches if len(b) * max(dataset.num_tokens(int(i)) for i in b) >= max_tokens / 2]
    order = list(range(len(batches)))
    random.Random(seed).shuffle(order)
    return [batches[i] for i in order[:n]]


def device_batches(task, split, indices, device):
    """The model's task's batches of those sentences, on the device."""
    from fairseq import utils

    ds = task.dataset(split)
    out = []
    for idx in indices:
        b = ds.collater([ds[int(i)] for i in idx])
        out.append(utils.move_to_cuda(b) if device == "cuda" else b)
    return out


class StepTimer:
    """One training step timed whole: (seconds, wall seconds, skipped). On CUDA the device is idle when it starts
    (synchronize) and the CUDA events' time is the figure; on the CPU the wall clock. ``skipped``: fairseq did
    not count the update (an fp16 overflow)."""

    def __init__(self, device):
        import torch

        self.cuda = device == "cuda"
        self.torch = torch

    def __call__(self, trainer, batch):
        torch = self.torch
        n = trainer.get_num_updates()
        if self.cuda:
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            start.record()
            trainer.train_step([batch])
            end.record()
            torch.cuda.synchronize()
            wall = time.perf_counter() - t0
            seconds = start.elapsed_time(end) / 1000
        else:
            t0 = time.perf_counter()
            trainer.train_step([batch])
            wall = seconds = time.perf_counter() - t0
        return seconds, wall, trainer.get_num_updates() == n


class NullCounter:
    """The CPU's stand-in for the allocator counters: torch keeps none for the CPU, so a step's transient
    allocation reads 0 and a model's figure is its static state."""

    def allocated(self):
        return 0

    def peak(self):
        return 0

    def reset_peak(self):
        pass


def kernel_time(trainer, batch, steps, device):
    """(ms a step that the device was busy under torch.profiler, what was measured): on a GPU the union of the
    CUDA activity's intervals (kernels, copies); on the CPU the union of the operators' intervals (the time
    spent inside torch's operators, not in Python between them). Read from the profiler's raw events (its
    per-operator tables cost about a second a step of a base model to build)."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device == "cuda" else [])
    with profile(activities=activities) as prof:
        for _ in range(steps):
            trainer.train_step([batch])
        if device == "cuda":
            torch.cuda.synchronize()
    kind = "CUDA" if device == "cuda" else "CPU"
    intervals = [(e.start_ns(), e.start_ns() + e.duration_ns()) for e in prof.profiler.kineto_results.events()
                 if e.device_type().name == kind and not e.is_user_annotation() and e.duration_ns() > 0]
    what = ("CUDA busy time a step (kernels and copies, overlaps counted once)" if device == "cuda"
            else "time inside torch's CPU operators a step (no CUDA on this run)")
    return busy_ns(intervals) / 1e6 / steps, what


def busy_ns(intervals):
    """The length of the union of (start, end) intervals."""
    total, reach = 0, None
    for start, end in sorted(intervals):
        if reach is None or start > reach:
            total += end - start
            reach = end
        elif end > reach:
            total += end - reach
            reach = end
    return total


def run_block(trainers, names, regime, tokens, args, deadline, timer, counter):
    """One block: warm-up (memory on its last pass), timed rounds, profiled steps. Returns its JSON entry."""
    import torch

    ref_task = trainers[names[0]][0]
    indices = batch_indices(ref_task.dataset(regime), tokens, args.batches, args.seed)
    batches = {n: device_batches(trainers[n][0], regime, indices, args.device) for n in names}
    first = batches[names[0]]
    for n in names[1:]:  # the same sentences in the same rows for every model
        assert all(torch.equal(a["net_input"]["src_tokens"], b["net_input"]["src_tokens"])
                   for a, b in zip(first, batches[n])), n
    block = {"regime_name": regime, "tokens": tokens, "lengths": list(REGIMES[regime]),
             "batch_sentences": [int(b["nsentences"]) for b in first],
             "batch_target_tokens": [int(b["ntokens"]) for b in first],
             "batch_source_width": [int(b["net_input"]["src_tokens"].size(1)) for b in first]}
    overflows = {n: 0 for n in names}
    rng = random.Random(args.seed)
    start = time.time()
    memory = {n: [] for n in names}
    for p in range(args.warmup):
        for b in range(len(first)):
            for n in rng.sample(names, len(names)):
                trainer = trainers[n][1]
                if p == args.warmup - 1:
                    updates = trainer.get_num_updates()
                    m, _ = peak_memory.measure_step(
                        lambda: trainer.train_step([batches[n][b]]), counter,
                        lambda: peak_memory.static_bytes(trainer.model, trainer._optimizer))
                    m["skipped"] = trainer.get_num_updates() == updates
                    memory[n].append(m)
                else:
                    trainer.train_step([batches[n][b]])
    warm = time.time() - start
    per_pass = warm / max(args.warmup, 1)
    block["warmup_seconds"] = round(warm, 1)
    if time.time() + per_pass * args.rounds > deadline:
        block["status"] = f"skipped (time): {args.rounds} rounds need about {per_pass * args.rounds:.0f} s"
        return block
    times = {n: [[None] * len(first) for _ in range(args.rounds)] for n in names}
    walls = {n: [[None] * len(first) for _ in range(args.rounds)] for n in names}
    gc.collect()
    gc.disable()
    try:
        for r in range(args.rounds):
            for b in range(len(first)):
                for n in rng.sample(names, len(names)):
                    seconds, wall, skipped = timer(trainers[n][1], batches[n][b])
                    walls[n][r][b] = round(wall, 7)
                    if skipped:
                        overflows[n] += 1
                    else:
                        times[n][r][b] = round(seconds, 7)
    finally:
        gc.enable()
    block["times"], block["wall_times"], block["skipped_updates"] = times, walls, overflows
    block["kernel_ms"] = {}
    if args.profile_steps:
        for n in names:
            try:
                block["kernel_ms"][n], block["kernel_what"] = kernel_time(trainers[n][1], batches[n][0],
                                                                          args.profile_steps, args.device)
            except Exception as e:  # the profiler is a side figure: its failure does not stop the run
                block["kernel_error"] = f"{type(e).__name__}: {e}"
                break
    peaks = {}
    block["memory_steps"] = {}
    for n in names:
        steps = [m for m in memory[n] if not m["skipped"]] or memory[n]
        if steps:
            peaks[n] = peak_memory.model_peak(steps)["model_peak"]
            block["memory_steps"][n] = {k: [m[k] for m in steps] for k in ("static", "transient", "model_peak")}
    block["memory"] = timing_analysis.memory_ratios(peaks, names[0])
    block["loss_scale"] = {n: _loss_scale(trainers[n][1]) for n in names}
    block["seconds"] = round(time.time() - start, 1)
    batches.clear()  # the device copies go with the block
    return block


def _loss_scale(trainer):
    scaler = getattr(trainer._optimizer, "scaler", None)
    return getattr(scaler, "loss_scale", None)


def environment(device):
    import torch

    import fairseq

    env = {"python": platform.python_version(), "torch": torch.__version__, "fairseq": fairseq.__version__,
           "device": device, "cpu_count": os.cpu_count(),
           "date": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())}
    if device == "cuda":
        env.update(gpu=torch.cuda.get_device_name(0), cuda=torch.version.cuda)
    return env


def run(out, device="cuda", dtypes=("fp16", "bf16"), models=DEFAULT_MODELS, blocks=None, batches=4, rounds=10,
        warmup=2, profile_steps=2, fp16_init_scale=4, seed=1, budget=420.0, tiny=False, vocab=32000,
        counter=None, compute_bound=timing_analysis.COMPUTE_BOUND):
    """The whole run into ``out``/paired_timing.json (rewritten after every block); returns the report. The
    first of ``models`` is the reference. ``counter``: the allocator counters (default: torch.cuda's on a GPU,
    none on the CPU)."""
    import torch

    import fairseq_syntax.plugin  # noqa: F401  (registers the plugin)
    from synthetic_bin import write_data_bin

    start = time.time()
    deadline = start + budget
    args = argparse.Namespace(device=device, batches=batches, rounds=rounds, warmup=warmup,
                              profile_steps=profile_steps, seed=seed)
    blocks = parse_blocks(blocks or DEFAULT_BLOCKS)
    names = list(models)
    unknown = [n for n in names if n not in MODELS]
    if unknown:
        raise SystemExit(f"error: --models: unknown {unknown}; known: {', '.join(MODELS)}")
    if device == "cpu" and "fp16" in dtypes:
        raise SystemExit("error: --dtypes: fp16 trains through fairseq's FP16Optimizer, which needs CUDA; on the "
                         "CPU give fp32 or bf16")
    os.makedirs(out, exist_ok=True)
    path = os.path.join(out, "paired_timing.json")
    report = {"environment": environment(device),
              "setting": {"reference": names[0], "models": names, "relative": [n for n in names if n in RELATIVE],
                          "dtypes": list(dtypes), "blocks": [f"{r}:{t}" for r, t in blocks], "batches": batches,
                          "rounds": rounds, "warmup_passes": warmup, "profile_steps": profile_steps,
                          "fp16_init_scale": fp16_init_scale, "seed": seed, "size": "tiny" if tiny else "base",
                          "vocab": vocab, "regimes": {k: list(v) for k, v in REGIMES.items()},
                          "max_drift": timing_analysis.MAX_DRIFT, "compute_bound": compute_bound,
                          "statistics": timing_analysis.STATISTICS,
                          "resamples": timing_analysis.RESAMPLES, "level": timing_analysis.LEVEL,
                          "timer": "CUDA events, synchronize before and after" if device == "cuda"
                          else "time.perf_counter",
                          "memory": "per step: peak - allocated before (fairseq's peak reset disabled) + the "
                                    "model's static state; the largest over the block's batches"
                          if device == "cuda" else "static state only (no CPU allocator statistics)"},
              "blocks": {}}

    def write():
        timing_analysis.decide_goals(report, threshold=compute_bound)
        tmp = path + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(report, f, separators=(",", ":"))
            f.write("\n")
        os.replace(tmp, path)

    splits = {}  # each regime's split: about twice the sentences its largest block's batches hold
    for r, lengths in REGIMES.items():
        largest = max([t for name, t in blocks if name == r], default=0)
        splits[r] = (int(2 * batches * largest / (sum(lengths) / 2 + 1)) + 64, lengths)
    data = tempfile.mkdtemp(prefix="paired-timing-")
    try:
        write_data_bin(data, splits, vocab_size=vocab, seed=seed)
        if counter is None:
            counter = peak_memory.CudaCounter() if device == "cuda" else NullCounter()
        timer = StepTimer(device)
        for dtype in dtypes:
            entries = report["blocks"].setdefault(dtype, {})
            if time.time() > deadline:
                for r, t in blocks:
                    entries[f"{r}:{t}"] = {"regime_name": r, "tokens": t, "status": "skipped (time)"}
                write()
                continue
            t0 = time.time()
            trainers = {n: build_trainer(n, data, dtype, device, tiny, fp16_init_scale, seed) for n in names}
            log(f"{dtype}: {len(names)} models built in {time.time() - t0:.0f} s")
            rate = None  # seconds a pass over a block's batches takes per token of its batch size, as last seen
            for r, t in blocks:
                key = f"{r}:{t}"
                need = rate * t * (warmup + rounds) if rate else 0
                if time.time() + need > deadline:
                    entries[key] = {"regime_name": r, "tokens": t, "status": "skipped (time)"
                                    + (f": about {need:.0f} s needed" if need else "")}
                else:
                    entries[key] = run_block(trainers, names, r, t, args, deadline, timer, counter)
                    if "warmup_seconds" in entries[key]:
                        rate = entries[key]["warmup_seconds"] / max(warmup, 1) / t
                write()
                _log_block(dtype, key, entries[key], names[0])
            trainers = None
            gc.collect()
            if device == "cuda":
                torch.cuda.empty_cache()
    finally:
        shutil.rmtree(data, ignore_errors=True)
    report["seconds"] = round(time.time() - start, 1)
    write()
    return report


def _log_block(dtype, key, block, reference):
    if "analysis" not in block:
        log(f"{dtype} {key}: {block.get('status')}")
        return
    a = block["analysis"]
    ratios = ", ".join(f"{m} {x['ratio']:.3f}" for m, x in a["models"].items() if x.get("ratio"))
    log(f"{dtype} {key}: {reference} {a['models'][reference]['median_step_ms']:.1f} ms, drift "
        f"{a['drift']:+.1%}{' REJECTED' if a['rejected'] else ''}; {ratios} ({block['seconds']} s)")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog=__doc__.split("\n\n", 1)[1])
    p.add_argument("--out", required=True, help="folder of paired_timing.json")
    p.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    p.add_argument("--dtypes", default=None, help="comma list of fp16, bf16, fp32 (default: fp16,bf16 on cuda, "
                   "fp32 on cpu)")
    p.add_argument("--models", default=",".join(DEFAULT_MODELS), help="comma list, the first the reference; "
                   "known: " + ", ".join(MODELS))
    p.add_argument("--blocks", default=DEFAULT_BLOCKS, help=f"comma list of REGIME:TOKENS, regimes "
                   f"{', '.join(f'{k} {v[0]}-{v[1]} subwords' for k, v in REGIMES.items())} (default "
                   f"{DEFAULT_BLOCKS}); goals are decided on the wmt blocks")
    p.add_argument("--batches", type=int, default=4, help="batches per block (default 4)")
    p.add_argument("--rounds", type=int, default=10, help="timed rounds per block (default 10)")
    p.add_argument("--warmup", type=int, default=2, help="untimed passes over every batch first (default 2)")
    p.add_argument("--profile-steps", type=int, default=2, help="profiled steps per model and block (default 2; "
                   "0: none)")
    p.add_argument("--fp16-init-scale", type=int, default=4, help="fp16's initial loss scale (default 4)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--budget", type=float, default=420, help="seconds for the run: a block that would not fit is "
                   "recorded as skipped (default 420)")
    p.add_argument("--tiny", action="store_true", help="the tiny presets (the CPU smoke run)")
    p.add_argument("--vocab", type=int, default=32000, help="shared vocabulary size (default 32000)")
    p.add_argument("--compute-bound", type=float, default=timing_analysis.COMPUTE_BOUND,
                   help="the reference's step at the largest wmt batch over the smallest from which the goals are "
                   f"decided (default {timing_analysis.COMPUTE_BOUND})")
    a = p.parse_args(argv)
    dtypes = (a.dtypes or ("fp16,bf16" if a.device == "cuda" else "fp32")).split(",")
    bad = [d for d in dtypes if d not in ("fp16", "bf16", "fp32")]
    if bad:
        p.error(f"--dtypes: unknown {bad}")
    report = run(a.out, device=a.device, dtypes=dtypes, models=a.models.split(","), blocks=a.blocks,
                 batches=a.batches, rounds=a.rounds, warmup=a.warmup, profile_steps=a.profile_steps,
                 fp16_init_scale=a.fp16_init_scale, seed=a.seed, budget=a.budget, tiny=a.tiny, vocab=a.vocab,
                 compute_bound=a.compute_bound)
    print(timing_analysis.markdown(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
