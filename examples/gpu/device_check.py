#!/usr/bin/env python3
"""The checks a GPU run of fairseq-syntax makes, in one process, phase by phase, into one JSON:

* ``parity``: every preset at its tiny size (the golden cases of tests/golden_numbers.py, on their fixed batch of
  real aligned data), on the device against the CPU, both in float32 (TF32 off) and without dropout: every loss
  term (relative 1e-4), every gradient (1e-4 of the largest gradient element of the model), and beam search
  (beam 3): the same tokens, or hypotheses whose scores tie (1e-3);
* ``half``: 30 updates of each paper's model (the CPU table's Tanaka settings: 3+3 layers at d 128, the CKY
  LSTM's own 2 layers at d 256) through
  ``fairseq-syntax-train`` in each half precision (``--fp16``: fairseq's FP16Optimizer with loss scaling;
  ``--memory-efficient-fp16``; ``--amp``: torch's autocast with fairseq's AMP optimizer), every logged loss term
  finite, then ``fairseq-generate`` on the test split with the same precision; runs side by side, a process each.
  ``--precisions ...,bf16`` adds ``--bf16``, which ``fairseq-syntax-train`` keeps off XLA
  (:mod:`fairseq_syntax.patches.precision`; fairseq 0.12's own ``--bf16`` implies ``--tpu`` and fails on a GPU
  at ``xm.xla_device()``); not in the default list;
* ``distributed``: fairseq's distributed training through ``torchrun`` and ``fairseq-syntax-train`` on the one
  GPU: NCCL with one process, and two processes sharing the GPU over gloo (PyTorch's DDP on CUDA tensors);
  DBSA's tiny model, 5 updates, every logged term finite (the dry run: two CPU processes over gloo);
* ``speed``: at Transformer base (the papers' size) in fp16, on batches of 4,096 and 8,192 tokens of the data's
  real sentences: the training step (fairseq's Trainer: forward, backward, FP16 optimizer) of every syntax
  model and of fairseq's transformer, timed with CUDA events (the median and quartiles of ``--steps`` batches,
  each model trained once untimed on those batches first), the peak memory of those steps, and beam-4 decoding
  in sentences per second (every model decodes the same number of steps): each as a ratio to fairseq's
  transformer, measured first and again last (the drift).

``--device cpu --tiny`` is the dry run the test suite runs (tests/test_gpu_scripts.py): the same code on the
CPU at tiny sizes, half precision as far as fairseq allows on a CPU (its FP16Optimizer needs CUDA: the dry run
trains --memory-efficient-fp16 and --amp). Every phase has a share of
``--budget`` seconds and leaves the rest of its items as "skipped (time)"; the JSON is written after each
item, so a killed run still says what it measured.

    python3 examples/gpu/device_check.py --data .carry/tanaka/main/data-bin -s ja -t en --out gpu-out
"""
import argparse
import copy
import json
import math
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
USER_DIR = os.path.join(ROOT, "fairseq_syntax")
PHASES = ("parity", "half", "distributed", "speed")
#: each phase's share of the budget (what is left of the budget is carried to the next phase)
SHARES = {"parity": 0.15, "half": 0.4, "distributed": 0.1, "speed": 0.35}

LS = ["--criterion", "label_smoothed_cross_entropy", "--label-smoothing", "0.1"]
DEP = ["--criterion", "label_smoothed_cross_entropy_with_dependency", "--label-smoothing", "0.1",
       "--dependency-lambda-enc", "1.0", "--dependency-lambda-dec", "1.0", "--dependency-normalization", "arcs"]
SYNC = ["--criterion", "label_smoothed_cross_entropy_with_sync", "--label-smoothing", "0.1",
        "--dependency-lambda-enc", "0.5", "--dependency-lambda-dec", "0.5", "--sync-lambda", "0.5"]
#: the papers' models of the half-precision phase: name -> (architecture, options)
PAPER_MODELS = {
    "transformer": ("transformer", LS),
    "dbsa": ("transformer_dbsa", DEP),  # Deguchi et al. 2019: parse heads on both sides, the unscaled 2019 form
    "dep_rel": ("transformer_dep_rel", LS),  # Omote et al. 2019
    "pascal": ("transformer_pascal", LS),  # Bugliarello & Okazaki 2020
    "sh": ("transformer_sh", LS),
    "syncattn": ("transformer_syncattn", SYNC),  # Deguchi et al. 2021
    "cky_lstm": ("cky_lstm", ["--criterion", "cross_entropy"]),  # Watanabe et al. 2017
}
#: fairseq's transformer at the tiny presets' size (models/presets.py TINY), for the dry run
TINY_TRANSFORMER = ["--encoder-layers", "2", "--decoder-layers", "2", "--encoder-embed-dim", "32",
                    "--decoder-embed-dim", "32", "--encoder-ffn-embed-dim", "64", "--decoder-ffn-embed-dim", "64",
                    "--encoder-attention-heads", "4", "--decoder-attention-heads", "4"]
#: the half-precision phase on a GPU trains each paper's model with the CPU table's settings for the Tanaka recipe
#: (fairseq_syntax/settings/cpu_table.py: 3+3 layers, d 128, the mechanism's options for that depth), then this
#: phase's own schedule (PAPER_MODELS' names are the table's)
HALF_TABLE = ("tanaka-ja-en", "cpu")
#: the models of the speed phase: name -> (architecture, options); the first is the reference
SPEED_MODELS = {
    "transformer": ("transformer", LS),
    "rel": ("transformer_rel", LS),
    "dep": ("transformer_dep", LS),
    "dep_rel": ("transformer_dep_rel", LS),
    "pascal": ("transformer_pascal", LS),
    "sh": ("transformer_sh", LS),
    "sisa": ("transformer_sisa", DEP),
    "dbsa_enc": ("transformer_dbsa_enc", DEP),
    "dbsa_dec": ("transformer_dbsa_dec", DEP),
    "dbsa": ("transformer_dbsa", DEP),
    "syncattn": ("transformer_syncattn", SYNC),
    "lstm_luong": ("lstm_luong", ["--criterion", "cross_entropy"]),
    "cky_lstm": ("cky_lstm", ["--criterion", "cross_entropy"]),
}
LSTMS = ("lstm_luong", "cky_lstm")
#: the goals at base size in fp16, as ratios to fairseq's transformer: training step (models with a relative
#: position term 1.10, the others 1.03) and peak memory (1.15)
RELATIVE = ("rel", "dep", "dep_rel")
STEP_GOAL = {"relative": 1.10, "other": 1.03}
MEMORY_GOAL = 1.15
DECODE_STEPS = 25  # every model decodes exactly this many steps in the speed phase (EOS blocked until then)


def _tiny(arch):
    """(architecture, size options) of an architecture at the tiny presets' size."""
    return (arch, TINY_TRANSFORMER) if arch == "transformer" else (arch + "_tiny", [])


def log(msg):
    print(f"[device-check {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


class Report:
    """The JSON, rewritten after every item."""

    def __init__(self, path):
        self.path, self.data = path, {}

    def set(self, *keys, value):
        d = self.data
        for k in keys[:-1]:
            d = d.setdefault(k, {})
        d[keys[-1]] = value
        self.write()

    def write(self):
        tmp = self.path + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(self.data, f, indent=1, sort_keys=True, default=str)
            f.write("\n")
        os.replace(tmp, self.path)


def _commit():
    """The checkout's commit (results_table.commit: git, else FAIRSEQ_SYNTAX_COMMIT, else None)."""
    sys.path.insert(0, os.path.join(ROOT, "examples", "recipes"))
    from results_table import commit

    return commit()


def environment(device):
    import torch

    import fairseq

    env = {"python": platform.python_version(), "torch": torch.__version__, "fairseq": fairseq.__version__,
           "cuda": torch.version.cuda, "device": device, "cpu": platform.processor() or platform.machine(),
           "cpu_count": os.cpu_count(), "date": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
           "commit": _commit()}
    if device == "cuda":
        p = torch.cuda.get_device_properties(0)
        env.update(gpu=torch.cuda.get_device_name(0), gpu_memory_gib=round(p.total_memory / 2**30, 1),
                   capability=f"{p.major}.{p.minor}", cudnn=torch.backends.cudnn.version())
        try:
            env["driver"] = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                                           capture_output=True, text=True, timeout=20).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            pass
    return env


# ---------------------------------------------------------------- parity
def without_dropout(model):
    """Train mode with every dropout probability at 0: what eval mode computes, on the kernels training uses.
    cuDNN's RNN has no backward in eval mode ("cudnn RNN backward can only be called in training mode", seen on
    an H100), so the LSTM presets take their parity gradients this way, through the cuDNN kernels that training
    runs; tests/test_gpu_scripts.py checks that it equals eval mode on the CPU."""
    import torch
    from fairseq.modules import FairseqDropout

    model.train()
    for m in model.modules():
        if isinstance(m, (FairseqDropout, torch.nn.Dropout)):
            m.p = 0.0
        elif isinstance(m, torch.nn.RNNBase) or isinstance(getattr(m, "dropout", None), float):
            m.dropout = 0.0  # torch's stacked RNNs, the CKY table's Deduction Units
    return model


def _run_case(case, model, criterion, batch, sample, task):
    """(logging outputs, {param: grad}, beam hypotheses) of one forward/backward (eval mode; the LSTM presets in
    train mode without dropout) and a beam search."""
    import torch
    from fairseq.sequence_generator import SequenceGenerator

    if any(isinstance(m, torch.nn.RNNBase) for m in model.modules()):
        without_dropout(model)
    else:
        model.eval()
    criterion.eval()
    model.zero_grad()
    loss, _, out = criterion(model, batch)
    loss.backward()
    model.eval()
    grads = {n: p.grad.detach().float().cpu() for n, p in model.named_parameters() if p.grad is not None}
    gen = SequenceGenerator([model], task.target_dictionary, beam_size=3, max_len_b=30)
    with torch.no_grad():
        hyps = task.inference_step(gen, [model], sample)
    beams = [[(h["tokens"].tolist(), float(h["score"])) for h in sent] for sent in hyps]
    return {k: float(v) for k, v in out.items()}, grads, beams


def parity(device, cases, report, deadline):
    import torch
    from fairseq import utils

    sys.path.insert(0, os.path.join(ROOT, "tests"))
    import golden_numbers

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    cases = cases or sorted(golden_numbers.CASES)
    for case in cases:
        if time.time() > deadline:
            report.set("parity", case, value={"status": "skipped (time)"})
            continue
        start = time.time()
        task, model, criterion, batch = golden_numbers.build(case)
        ds = task.dataset("train")
        sample = ds.collater([ds[i] for i in range(golden_numbers.BEAM_SENTENCES)])
        on_device = copy.deepcopy(model).to(device)
        log_cpu, g_cpu, beam_cpu = _run_case(case, model, criterion, batch, sample, task)
        move = (lambda t: t.to(device))
        log_dev, g_dev, beam_dev = _run_case(case, on_device, criterion.to(device),  # no parameters
                                             utils.apply_to_sample(move, batch), utils.apply_to_sample(move, sample),
                                             task)
        scale = max(float(g.abs().max()) for g in g_cpu.values())
        terms = {k: abs(log_dev[k] - v) / max(abs(v), 1e-12) for k, v in log_cpu.items()
                 if k not in ("ntokens", "nsentences", "sample_size")}
        grad_err = max(float((g_dev[n] - g).abs().max()) for n, g in g_cpu.items()) / scale
        same = ties = 0
        for hc, hd in zip(beam_cpu, beam_dev):
            for (tc, sc), (td, sd) in zip(hc, hd):
                if tc == td:
                    same += 1
                elif abs(sc - sd) <= 1e-3:
                    ties += 1
        total = sum(len(h) for h in beam_cpu)
        ok = (max(terms.values()) <= 1e-4 and grad_err <= 1e-4 and same + ties == total
              and set(g_cpu) == set(g_dev))
        report.set("parity", case, value={
            "status": "ok" if ok else "FAIL", "max_rel_loss_term_diff": max(terms.values()),
            "loss_terms": {k: [log_cpu[k], log_dev[k]] for k in terms},
            "max_grad_diff_of_largest": grad_err, "beam_same": same, "beam_ties": ties, "beam_hypotheses": total,
            "seconds": round(time.time() - start, 1)})
        log(f"parity {case}: {'ok' if ok else 'FAIL'} (loss terms {max(terms.values()):.1e}, "
            f"gradients {grad_err:.1e}, beam {same}+{ties}/{total})")


# ---------------------------------------------------------------- half precision through the CLIs
def _finite_terms(stdout):
    """Every numeric field of fairseq's JSON train_inner / train log lines: (lines, non-finite fields, last)."""
    lines, bad, last = 0, [], {}
    for line in stdout.splitlines():
        m = re.search(r"\| (?:train_inner|train) \| (\{.*\})$", line)
        if not m:
            continue
        lines += 1
        fields = json.loads(m.group(1))
        for key, value in fields.items():
            try:
                x = float(value)
            except (TypeError, ValueError):
                continue
            if not math.isfinite(x):
                bad.append(f"{key}={value} (update {fields.get('num_updates')})")
        last = fields
    return lines, bad, last


def _half_options(name, tiny):
    """A paper's model for the half-precision phase: its architecture, size and mechanism options. At the tiny size
    (the dry run) the tiny preset with PAPER_MODELS' criterion; otherwise the CPU table's whole training command for
    the model (its layer and head options fit its depth: the first GPU run found --dbsa-encoder-layer 4 of the
    base architecture against 3 layers), whose schedule the phase's later options override."""
    if not tiny:
        from fairseq_syntax.settings.datasets import settings

        return list(settings(*HALF_TABLE)[name].train)
    arch, opts = PAPER_MODELS[name]
    arch, size = _tiny(arch)
    share = [] if name in LSTMS else ["--share-all-embeddings"]
    return ["--arch", arch, *size, *opts, *share]


def _half_command(name, precision, data, src, tgt, tiny, updates, device, save):
    """The fairseq-syntax-train command of one half-precision run (argparse keeps an option's last value)."""
    # on a CPU fairseq's handler of a gradient overflow needs CUDA (trainer.py: torch.tensor(0.0).cuda()): the
    # dry run starts the loss scale at 1, where its tiny models do not overflow
    cpu = ["--cpu"] if device == "cpu" else []
    scale = ["--fp16-init-scale", "1"] if device == "cpu" and "fp16" in precision else []
    return ["fairseq-syntax-train", data, "--user-dir", USER_DIR, "--task", "syntax_translation", "-s", src, "-t",
            tgt, *_half_options(name, tiny), "--optimizer", "adam", "--adam-betas", "(0.9, 0.98)", "--lr", "0.0005",
            "--lr-scheduler", "inverse_sqrt", "--warmup-updates", "10", "--max-update", str(updates),
            "--max-tokens", "4096", f"--{precision}", "--save-dir", save, "--no-epoch-checkpoints", "--log-format",
            "json", "--log-interval", "1", "--seed", "1", "--num-workers", "0", "--disable-validation", *scale,
            *cpu]


def _half_run(name, precision, data, src, tgt, tiny, updates, device, workdir):
    save = os.path.join(workdir, f"{name}-{precision}")
    train = _half_command(name, precision, data, src, tgt, tiny, updates, device, save)
    cpu = ["--cpu"] if device == "cpu" else []
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONWARNINGS="ignore")
    start = time.time()
    p = subprocess.run(train, capture_output=True, text=True, env=env)
    result = {"train_exit": p.returncode, "train_seconds": round(time.time() - start, 1)}
    lines, bad, last = _finite_terms(p.stdout + p.stderr)
    # fairseq's FP16 optimizers skip an overflowing update ("gradient overflow detected, ignoring gradient"); its
    # AMP optimizer lowers the scale and retries the batch ("AMP: overflow detected"): the first GPU run counted
    # only the former and wrote 0 for --amp runs whose loss scale had fallen from 128 to 16
    overflows = len(re.findall(r"gradient overflow detected|AMP: overflow detected", p.stdout + p.stderr))
    result.update(logged_lines=lines, non_finite=bad, last={k: v for k, v in last.items()
                                                          if "loss" in k or k.endswith(("num_updates", "gnorm"))},
                  overflows=overflows)
    if p.returncode != 0:
        result["error"] = (p.stderr or p.stdout).strip().splitlines()[-3:]
        result["status"] = "FAIL"
        return result
    half_gen = {"fp16": ["--fp16"], "memory-efficient-fp16": ["--fp16"], "bf16": ["--bf16"], "amp": []}[precision]
    gen = ["fairseq-generate", data, "--user-dir", USER_DIR, "--task", "syntax_translation", "-s", src, "-t", tgt,
           "--path", os.path.join(save, "checkpoint_last.pt"), "--gen-subset", "test", "--beam", "4",
           "--batch-size", "64", "--max-len-a", "1.2", "--max-len-b", "10", *half_gen, *cpu]
    start = time.time()
    g = subprocess.run(gen, capture_output=True, text=True, env=env)
    hyps = len(re.findall(r"^H-\d+\t", g.stdout, flags=re.M))
    bleu = re.search(r"BLEU4? = ([\d.]+)", g.stdout + g.stderr)
    result.update(generate_exit=g.returncode, generate_seconds=round(time.time() - start, 1), hypotheses=hyps,
                  bleu=float(bleu.group(1)) if bleu else None)
    if g.returncode != 0:
        result["error"] = (g.stderr or g.stdout).strip().splitlines()[-3:]
    result["status"] = "ok" if (p.returncode == 0 and g.returncode == 0 and not bad and lines >= updates
                                and hyps > 0) else "FAIL"
    return result


def half(device, data, src, tgt, models, precisions, tiny, updates, workers, report, deadline):
    jobs = [(m, prec) for prec in precisions for m in models]
    with tempfile.TemporaryDirectory() as workdir, ThreadPoolExecutor(workers) as pool:
        futures = {}
        for m, prec in jobs:
            futures[(m, prec)] = pool.submit(
                lambda m=m, prec=prec: ({"status": "skipped (time)"} if time.time() > deadline else
                                        _half_run(m, prec, data, src, tgt, tiny, updates, device, workdir)))
        for (m, prec), fut in futures.items():
            r = fut.result()
            report.set("half", prec, m, value=r)
            log(f"half {prec} {m}: {r['status']}" + (f" (loss {r['last'].get('train_loss')}, "
                                                    f"{r['overflows']} overflows, {r.get('hypotheses')} hypotheses)"
                                                    if "last" in r else ""))


# ---------------------------------------------------------------- distributed
def distributed(device, data, src, tgt, report, deadline):
    import shutil

    runs = ({"nccl, 1 process": (1, "nccl"), "gloo, 2 processes on the one GPU": (2, "gloo")} if device == "cuda"
            else {"gloo, 2 CPU processes": (2, "gloo")})
    train = shutil.which("fairseq-syntax-train")
    for port, (name, (procs, backend)) in enumerate(runs.items(), start=29611):
        if time.time() > deadline:
            report.set("distributed", name, value={"status": "skipped (time)"})
            continue
        with tempfile.TemporaryDirectory() as save:
            cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", str(procs), "--master_addr",
                   "127.0.0.1", "--master_port", str(port), train, data, "--user-dir", USER_DIR, "--task",
                   "syntax_translation", "-s", src, "-t", tgt, "--arch", "transformer_dbsa_tiny", *DEP,
                   "--share-all-embeddings", "--optimizer", "adam", "--lr", "0.0005", "--max-update", "5",
                   "--max-tokens", "2048", "--save-dir", save, "--no-save", "--log-format", "json", "--log-interval",
                   "1", "--seed", "1", "--num-workers", "0", "--disable-validation", "--distributed-backend", backend,
                   *(["--device-id", "0"] if device == "cuda" and procs > 1 else []),
                   *(["--cpu"] if device == "cpu" else [])]
            start = time.time()
            p = subprocess.run(cmd, capture_output=True, text=True, env=dict(os.environ, OMP_NUM_THREADS="1"))
        lines, bad, last = _finite_terms(p.stdout + p.stderr)
        world = re.findall(r"distributed init \(rank (\d+)\)", p.stdout + p.stderr)
        ok = p.returncode == 0 and not bad and lines >= 5
        r = {"status": "ok" if ok else "FAIL", "exit": p.returncode, "logged_lines": lines, "non_finite": bad,
             "ranks_initialised": sorted(set(world)), "seconds": round(time.time() - start, 1),
             "last": {k: v for k, v in last.items() if "loss" in k}}
        if p.returncode:
            r["error"] = (p.stderr or p.stdout).strip().splitlines()[-4:]
        report.set("distributed", name, value=r)
        log(f"distributed {name}: {r['status']} (ranks {r['ranks_initialised']}, {lines} log lines)")


# ---------------------------------------------------------------- speed and memory
def _trainer(name, task_data, src, tgt, tiny, device, dtype):
    """fairseq's task, Trainer and the model's named syntax inputs, built from fairseq-train's options."""
    from fairseq import options, tasks
    from fairseq.dataclass.utils import convert_namespace_to_omegaconf
    from fairseq.trainer import Trainer

    arch, opts = SPEED_MODELS[name]
    arch, extra = _tiny(arch) if tiny else (arch, [])
    share = [] if name in LSTMS else ["--share-all-embeddings"]
    precision = {"fp16": ["--fp16"], "fp32": []}[dtype]
    argv = [task_data, "--user-dir", USER_DIR, "--task", "syntax_translation", "-s", src, "-t", tgt, "--arch", arch,
            *extra, *opts, *share, "--optimizer", "adam", "--adam-betas", "(0.9, 0.98)", "--lr", "0.0005",
            "--lr-scheduler", "inverse_sqrt", "--warmup-updates", "4000", "--max-tokens", "8192", "--seed", "1",
            "--num-workers", "0", *precision, *(["--cpu"] if device == "cpu" else [])]
    cfg = convert_namespace_to_omegaconf(options.parse_args_and_arch(options.get_training_parser(), argv))
    task = tasks.setup_task(cfg.task)
    model = task.build_model(cfg.model)
    criterion = task.build_criterion(cfg.criterion)
    return task, Trainer(cfg, task, model, criterion), model


def _batches(task, split, max_tokens, n):
    task.load_dataset(split)
    itr = task.get_batch_iterator(task.dataset(split), max_tokens=max_tokens, seed=1,
                                  required_batch_size_multiple=8).next_epoch_itr(shuffle=split == "train")
    out = []
    for b in itr:
        out.append(b)
        if len(out) == n:
            break
    return out


def _timer(device):
    import torch

    if device == "cuda":
        def timed(fn):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            end.record()
            torch.cuda.synchronize()
            return start.elapsed_time(end) / 1000
    else:
        def timed(fn):
            t0 = time.perf_counter()
            fn()
            return time.perf_counter() - t0
    return timed


def _measure(name, data, src, tgt, tiny, device, dtype, token_sizes, steps, warmup, decode_batches):
    import torch
    from fairseq.sequence_generator import SequenceGenerator

    task, trainer, model = _trainer(name, data, src, tgt, tiny, device, dtype)
    timed = _timer(device)
    row = {"parameters": sum(p.numel() for p in model.parameters())}
    for tokens in token_sizes:
        # every timed batch once untimed first (--warmup passes): in results/device_check.json the first model timed
        # after 3 untimed steps took 239 ms a step, and 59 ms when timed again last on the same batches (one cause
        # could be kernel choices made per new batch shape; not profiled), so each model meets every shape first
        batches = _batches(task, "train", tokens, steps)
        for b in batches * warmup:
            trainer.train_step([b])
        if device == "cuda":
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
        times = [timed(lambda b=b: trainer.train_step([b])) for b in batches]
        quartiles = statistics.quantiles(times, n=4, method="inclusive") if len(times) > 1 else [times[0]] * 3
        entry = {"step_ms_median": 1000 * statistics.median(times), "step_ms_min": 1000 * min(times),
                 "step_ms_quartiles": [1000 * quartiles[0], 1000 * quartiles[2]], "steps": len(times),
                 "sentences_per_batch": statistics.mean(int(b["nsentences"]) for b in batches),
                 "tokens_per_batch": statistics.mean(int(b["ntokens"]) for b in batches)}
        if device == "cuda":
            entry["peak_mem_mib"] = torch.cuda.max_memory_allocated() / 2**20
        row[f"train_{tokens}"] = entry
    test = _batches(task, "test", 8192, decode_batches)
    model.eval()
    gen = SequenceGenerator([model], task.target_dictionary, beam_size=4, max_len_a=0, max_len_b=DECODE_STEPS,
                            min_len=DECODE_STEPS)
    sentences, seconds = 0, 0.0
    for i, b in enumerate(test):
        b, _ = trainer._prepare_sample(b)  # on the device, in the training dtype
        with torch.no_grad():
            if i == 0:
                task.inference_step(gen, [model], b)  # warm-up
            seconds += timed(lambda b=b: task.inference_step(gen, [model], b))
        sentences += int(b["nsentences"])
    row["decode"] = {"sentences": sentences, "seconds": seconds, "sentences_per_second": sentences / seconds,
                     "steps": DECODE_STEPS, "beam": 4}
    trainer = model = None  # free the GPU memory before the next model
    if device == "cuda":
        torch.cuda.empty_cache()
    return row


def _reference(name, models):
    """The row a model is compared with: fairseq's transformer (the first model), the LSTMs with lstm_luong."""
    if name.split(" ")[0] in LSTMS and "lstm_luong" in models:
        return "lstm_luong"
    return models[0]


def speed(device, data, src, tgt, models, tiny, dtype, token_sizes, steps, warmup, decode_batches, report,
          deadline):
    order = list(models) + ([models[0] + " (again)"] if len(models) > 1 else [])  # the reference again: drift
    rows = {}
    for name in order:
        if time.time() > deadline:
            report.set("speed", "models", name, value={"status": "skipped (time)"})
            continue
        start = time.time()
        rows[name] = _measure(name.split(" ")[0], data, src, tgt, tiny, device, dtype, token_sizes, steps, warmup,
                              decode_batches)
        rows[name]["seconds"] = round(time.time() - start, 1)
        ref = _reference(name, models)
        base = rows[ref]
        rows[name]["reference"] = ref
        for tokens in token_sizes:
            key = f"train_{tokens}"
            rows[name][key]["ratio"] = rows[name][key]["step_ms_median"] / base[key]["step_ms_median"]
            if "peak_mem_mib" in base[key]:
                rows[name][key]["mem_ratio"] = rows[name][key]["peak_mem_mib"] / base[key]["peak_mem_mib"]
        rows[name]["decode"]["ratio"] = (rows[name]["decode"]["sentences_per_second"]
                                         / base["decode"]["sentences_per_second"])
        model = name.split(" ")[0]
        if ref == models[0] and model != ref and model not in LSTMS:
            step_goal = STEP_GOAL["relative" if model in RELATIVE else "other"]
            worst = max(rows[name][f"train_{t}"]["ratio"] for t in token_sizes)
            mem = [rows[name][f"train_{t}"].get("mem_ratio") for t in token_sizes]
            rows[name]["goals"] = {"step_ratio_at_most": step_goal, "step_met": worst <= step_goal,
                                   "memory_ratio_at_most": MEMORY_GOAL,
                                   "memory_met": None if None in mem else max(mem) <= MEMORY_GOAL}
        report.set("speed", "models", name, value=rows[name])
        t = rows[name][f"train_{token_sizes[-1]}"]
        log(f"speed {name}: {t['step_ms_median']:.1f} ms/step at {token_sizes[-1]} tokens ({t['ratio']:.3f}x "
            f"{ref}" + (f", memory {t['mem_ratio']:.3f}x" if "mem_ratio" in t else "") + "), decode "
            f"{rows[name]['decode']['sentences_per_second']:.0f} sent/s")
    report.set("speed", "setting", value={"dtype": dtype, "size": "tiny" if tiny else "base", "token_sizes":
                                          token_sizes, "timed_steps": steps, "warmup_passes": warmup,
                                          "reference": models[0], "lstm_reference": "lstm_luong",
                                          "decode_steps": DECODE_STEPS, "decode_batches": decode_batches})


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__.split("\n\n", 1)[1])
    p.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    p.add_argument("--data", required=True, help="a data-bin with both sides' syntax and train / test splits")
    p.add_argument("-s", "--source-lang", required=True)
    p.add_argument("-t", "--target-lang", required=True)
    p.add_argument("--out", required=True, help="folder of device_check.json")
    p.add_argument("--phases", default=",".join(PHASES), help=f"comma list of {', '.join(PHASES)}")
    p.add_argument("--budget", type=float, default=360, help="seconds for all phases (default 360)")
    p.add_argument("--tiny", action="store_true", help="tiny sizes everywhere (the CPU dry run)")
    p.add_argument("--parity-cases", default="", help="comma list of golden cases (default: all)")
    p.add_argument("--half-models", default=",".join(PAPER_MODELS), help="comma list of: " + ", ".join(PAPER_MODELS))
    p.add_argument("--precisions", default=None, help="default: fp16,memory-efficient-fp16,amp on cuda; "
                   "memory-efficient-fp16,amp on cpu; bf16 also works (fairseq-syntax-train keeps it off XLA)")
    p.add_argument("--updates", type=int, default=30, help="updates of each half-precision run (default 30)")
    p.add_argument("--workers", type=int, default=None, help="half-precision runs side by side (default: cuda 8, "
                   "cpu 2)")
    p.add_argument("--speed-models", default=",".join(SPEED_MODELS), help="comma list, the first the reference: "
                   + ", ".join(SPEED_MODELS))
    p.add_argument("--speed-dtype", default=None, choices=("fp16", "fp32"), help="default fp16 on cuda, "
                   "fp32 on cpu")
    p.add_argument("--token-sizes", default="4096,8192", help="tokens per training batch (default 4096,8192)")
    p.add_argument("--steps", type=int, default=20, help="timed training steps (batches) per batch size (default 20)")
    p.add_argument("--warmup", type=int, default=1, help="untimed passes over the timed batches first (default 1)")
    p.add_argument("--decode-batches", type=int, default=2, help="test batches of 8,192 tokens decoded (default 2)")
    args = p.parse_args(argv)
    start = time.time()
    os.makedirs(args.out, exist_ok=True)
    report = Report(os.path.join(args.out, "device_check.json"))
    import fairseq_syntax.plugin  # noqa: F401  (registers the plugin in this process)

    report.set("environment", value=environment(args.device))
    report.set("command", value=sys.argv)
    phases = [x for x in args.phases.split(",") if x]
    unknown = set(phases) - set(PHASES)
    if unknown:
        sys.exit(f"error: --phases: unknown {sorted(unknown)}; known: {', '.join(PHASES)}")
    precisions = (args.precisions or ("fp16,memory-efficient-fp16,amp" if args.device == "cuda"
                                      else "memory-efficient-fp16,amp")).split(",")
    shares = sum(SHARES[ph] for ph in phases)
    for ph in phases:
        left = args.budget - (time.time() - start)
        deadline = time.time() + left * SHARES[ph] / shares
        shares -= SHARES[ph]
        t0 = time.time()
        log(f"phase {ph} ({left * SHARES[ph] / (shares + SHARES[ph]):.0f} s of the budget)")
        if ph == "parity":
            parity(args.device, [c for c in args.parity_cases.split(",") if c], report, deadline)
        elif ph == "distributed":
            distributed(args.device, args.data, args.source_lang, args.target_lang, report, deadline)
        elif ph == "half":
            half(args.device, args.data, args.source_lang, args.target_lang, args.half_models.split(","),
                 precisions, args.tiny, args.updates, args.workers or (8 if args.device == "cuda" else 2), report,
                 deadline)
        else:
            speed(args.device, args.data, args.source_lang, args.target_lang, args.speed_models.split(","),
                  args.tiny, args.speed_dtype or ("fp16" if args.device == "cuda" else "fp32"),
                  [int(x) for x in args.token_sizes.split(",")], args.steps, args.warmup, args.decode_batches,
                  report, deadline)
        report.set("seconds", ph, value=round(time.time() - t0, 1))
    report.set("seconds", "total", value=round(time.time() - start, 1))
    failed = [f"{ph} {k}" for ph in ("parity", "distributed") for k, v in report.data.get(ph, {}).items()
              if v["status"] == "FAIL"]
    failed += [f"half {prec} {m}" for prec, ms in report.data.get("half", {}).items() for m, v in ms.items()
               if v["status"] == "FAIL"]
    report.set("failed", value=failed)
    log(f"done in {time.time() - start:.0f} s; " + (f"FAILED: {', '.join(failed)}" if failed else "every check passed"))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
