#!/usr/bin/env python
"""Train-step time, beam-4 decode time and peak memory of syntax presets vs fairseq's transformer.

Every model gets the same batches (drawn once from the data-bin's train /
test split), the same size (``--size``) and the same optimizer; timings
alternate between models batch by batch so that machine drift hits all of
them alike, and are reported as ratios to vanilla ``transformer``.

Training memory: on a GPU ``torch.cuda.max_memory_allocated`` over each
model's steps; on CPU (where torch keeps no allocation statistics) the bytes
of parameters, Adam's two moment buffers and gradients, plus the tensors the
largest training step saves for the backward pass (counted with
``torch.autograd.graph.saved_tensors_hooks``, each storage once).

Operators (CPU runs): those one forward and backward pass and one beam-4
decoding of the first batch dispatch to torch, and those of them that are not
views (``count_ops``): a proxy, the same on any x86 CPU, for the kernels a GPU
launches, which bound a step of short sentences at base size there.

    OMP_NUM_THREADS=1 python examples/benchmark/speed.py work/demo/data-bin --size small --json speed.json
"""
import argparse
import json
import os
import sys
import time

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, ROOT)

SIZES = {
    "base": dict(layers=6, dim=512, ffn=2048, heads=8, dbsa_layer=4, pascal_heads=7, sync_layer=5, lstm_dim=256),
    "small": dict(layers=3, dim=128, ffn=256, heads=4, dbsa_layer=2, pascal_heads=2, sync_layer=2, lstm_dim=128),
}
DECODE_STEPS = 30
#: name -> (architecture, extra args, criterion)
MODELS = {
    "transformer": ("transformer", {}, "label_smoothed_cross_entropy"),
    "transformer_dbsa": ("transformer_dbsa", {}, "label_smoothed_cross_entropy_with_dependency"),
    "transformer_dbsa_enc": ("transformer_dbsa_enc", {}, "label_smoothed_cross_entropy_with_dependency"),
    "transformer_dbsa_dec": ("transformer_dbsa_dec", {}, "label_smoothed_cross_entropy_with_dependency"),
    "transformer_sisa": ("transformer_sisa", {}, "label_smoothed_cross_entropy_with_dependency"),
    "transformer_rel": ("transformer_rel", {}, "label_smoothed_cross_entropy"),
    "transformer_dep": ("transformer_dep", {}, "label_smoothed_cross_entropy"),
    "transformer_dep_rel": ("transformer_dep_rel", {}, "label_smoothed_cross_entropy"),
    # the reference form that builds the B x T x T x d pairwise tensors (what the bucket form saves)
    "transformer_dep_rel_materialised": ("transformer_dep_rel", {"rel_implementation": "materialised"},
                                         "label_smoothed_cross_entropy"),
    "transformer_pascal": ("transformer_pascal", {}, "label_smoothed_cross_entropy"),
    "transformer_sh": ("transformer_sh", {}, "label_smoothed_cross_entropy"),
    "transformer_syncattn": ("transformer_syncattn", {}, "label_smoothed_cross_entropy_with_sync"),
    # LSTM models (Watanabe et al. 2017): d = lstm_dim of the size, reference lstm_luong
    "lstm_luong": ("lstm_luong", {}, "label_smoothed_cross_entropy"),
    "cky_lstm": ("cky_lstm", {}, "label_smoothed_cross_entropy"),
}
LSTM_MODELS = ("lstm_luong", "cky_lstm")
#: collated once for every batch (parents under one strategy for all models: the cost does not depend on it);
#: each model gets the net_input fields it takes
INPUTS = ("src_depths", "src_parents", "src_labels")


def build(name, task, size, device):
    from fairseq.models import ARCH_CONFIG_REGISTRY, ARCH_MODEL_REGISTRY
    from fairseq.criterions import CRITERION_REGISTRY

    import fairseq_syntax.plugin  # noqa: F401  (registers the plugin's models and criterions)

    arch, extra, crit = MODELS[name]
    sz = SIZES[size]
    if name in LSTM_MODELS:
        args = argparse.Namespace(arch=arch, embed_dim=sz["lstm_dim"], **extra)
    else:
        args = transformer_args(arch, sz, extra)
    ARCH_CONFIG_REGISTRY[arch](args)
    torch.manual_seed(1)
    model = ARCH_MODEL_REGISTRY[arch].build_model(args, task).to(device)
    needs = model.syntax_needs() if hasattr(model, "syntax_needs") else None
    model.benchmark_inputs = needs.inputs if needs is not None else frozenset()
    criterion = CRITERION_REGISTRY[crit](task, sentence_avg=False, label_smoothing=0.1)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-4)
    return model, criterion, optimizer


def transformer_args(arch, sz, extra):
    args = argparse.Namespace(
        arch=arch, encoder_layers=sz["layers"], decoder_layers=sz["layers"], encoder_embed_dim=sz["dim"],
        decoder_embed_dim=sz["dim"], encoder_ffn_embed_dim=sz["ffn"], decoder_ffn_embed_dim=sz["ffn"],
        encoder_attention_heads=sz["heads"], decoder_attention_heads=sz["heads"], share_all_embeddings=True,
        dropout=0.1, **extra,
    )
    if arch == "transformer_pascal":
        args.pascal_heads = sz["pascal_heads"]
    if arch == "transformer_syncattn":
        args.sync_layer = sz["sync_layer"]
    if arch in ("transformer_dbsa", "transformer_dbsa_enc", "transformer_sisa"):
        args.dbsa_encoder_layer = sz["dbsa_layer"]
    if arch in ("transformer_dbsa", "transformer_dbsa_dec"):
        args.dbsa_decoder_layer = sz["dbsa_layer"]
    return args


def load_task(data):
    from omegaconf import OmegaConf

    from fairseq_syntax.data.datasets.syntax_request import SyntaxNeeds
    from fairseq_syntax.tasks.syntax_translation import SyntaxTranslationConfig, SyntaxTranslationTask

    cfg = OmegaConf.structured(SyntaxTranslationConfig(data=data, source_syntax="parents,depths,labels",
                                                       target_syntax="parents"))
    cfg.train_subset, cfg.dataset_impl, cfg.required_seq_len_multiple = "train", "mmap", 1
    task = SyntaxTranslationTask.setup_task(cfg)
    # the batches carry every model's syntax inputs (for_model gives each model its own)
    task.add_model_needs(SyntaxNeeds(inputs=frozenset(INPUTS)))
    task.load_dataset("train")
    task.load_dataset("test")
    return task


def batches(task, split, n, max_tokens, device):
    from fairseq import utils

    itr = task.get_batch_iterator(task.dataset(split), max_tokens=max_tokens, seed=1).next_epoch_itr(shuffle=split == "train")
    out = []
    for b in itr:
        out.append(utils.move_to_cuda(b) if device.type == "cuda" else b)
        if len(out) == n:
            break
    return out


def for_model(model, batch):
    """The batch with only the syntax inputs this model's forward takes."""
    net = {k: v for k, v in batch["net_input"].items() if k not in INPUTS or k in model.benchmark_inputs}
    return dict(batch, net_input=net)


def sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize()


def timed(device, fn, *args):
    """Seconds that fn(*args) takes: CUDA events around it on a GPU, the wall clock on CPU."""
    if device.type == "cuda":
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn(*args)
        end.record()
        torch.cuda.synchronize()
        return start.elapsed_time(end) / 1000
    t0 = time.perf_counter()
    fn(*args)
    return time.perf_counter() - t0


def forward_backward(model, criterion, batch):
    model.train()
    criterion.train()
    loss, sample_size, _ = criterion(model, for_model(model, batch))
    (loss / sample_size).backward()


def train_step(model, criterion, optimizer, batch):
    optimizer.zero_grad()
    forward_backward(model, criterion, batch)
    optimizer.step()


def decode(task, model, batch, steps=DECODE_STEPS):
    from fairseq.sequence_generator import SequenceGenerator

    model.eval()
    # every model decodes exactly `steps` steps (EOS is blocked until then): equal work for untrained models
    gen = SequenceGenerator([model], task.target_dictionary, beam_size=4, max_len_a=0, max_len_b=steps,
                            min_len=steps)
    with torch.no_grad():
        gen.generate([model], for_model(model, batch))


def count_ops(fn, *args):
    """(operators, of which not views) that ``fn(*args)`` dispatches to torch, backward included (the dispatch
    mode travels with autograd's thread-local state): a proxy for the kernels a GPU launches, where a step of
    Tanaka's short sentences at base size is bound by launching them rather than by their arithmetic
    (docs/benchmarks.md, "On a GPU"). A proxy only: a view (``func.is_view``: view, permute, expand, ...) launches
    no kernel but costs its dispatch, some non-views launch none (``empty``, ``_unsafe_view``) or several, and
    the CPU's code paths differ from CUDA's in places (dropout decomposes into three operators there, one fused
    kernel on CUDA). The same on any x86 CPU for a given torch build and batch."""
    from torch.utils._python_dispatch import TorchDispatchMode

    class Counter(TorchDispatchMode):
        ops = views = 0

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            Counter.ops += 1
            Counter.views += bool(func.is_view)
            return func(*args, **(kwargs or {}))

    with Counter():
        fn(*args)
    return Counter.ops, Counter.ops - Counter.views


def train_memory_cpu(model, criterion, batches):
    """MiB of parameters + gradients + Adam moments + saved activations (largest batch)."""
    params = sum(p.numel() * p.element_size() for p in model.parameters())
    peak = 0
    for batch in batches:
        seen, total = set(), [0]

        def pack(t):
            key = (t.untyped_storage().data_ptr(), t.untyped_storage().nbytes())
            if key not in seen:
                seen.add(key)
                total[0] += key[1]
            return t

        model.train()
        with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            loss, _, _ = criterion(model, for_model(model, batch))
        del loss
        peak = max(peak, total[0])
    return (4 * params + peak) / 2**20


def measure(task, built, train_b, test_b, repeats, device):
    """Interleaved timings and training memory of the built models; ratios to the first one."""
    names = list(built)
    for n in names:  # warm-up
        train_step(*built[n], train_b[0])
        decode(task, built[n][0], test_b[0])
    train_t = {n: 0.0 for n in names}
    dec_t = {n: 0.0 for n in names}
    mem = {}
    sync(device)
    for b in train_b:
        for n in names:
            train_t[n] += timed(device, train_step, *built[n], b)
    for b in test_b * repeats:
        for n in names:
            dec_t[n] += timed(device, decode, task, built[n][0], b)
    for n in names:
        if device.type == "cuda":
            torch.cuda.reset_peak_memory_stats()
            for b in train_b[:5]:
                train_step(*built[n], b)
            mem[n] = torch.cuda.max_memory_allocated() / 2**20
        else:
            mem[n] = train_memory_cpu(built[n][0], built[n][1], train_b[:5])
    ops = measure_ops(task, built, train_b, test_b, device)
    ref = names[0]
    rows = []
    for n in names:
        row = {"model": n, "reference": ref, "train_step_ms": 1000 * train_t[n] / len(train_b),
               "decode_ms": 1000 * dec_t[n] / (len(test_b) * repeats), "peak_mem_mib": mem[n],
               "train_ratio": train_t[n] / train_t[ref], "decode_ratio": dec_t[n] / dec_t[ref],
               "mem_ratio": mem[n] / mem[ref] if mem[ref] else float("nan")}
        if ops[n] is not None:
            row.update(_ops_fields(ops[n], ops[ref]))
        rows.append(row)
    return rows


def _commit_of_checkout():
    sys.path.insert(0, os.path.join(ROOT, "examples", "recipes"))
    from results_table import commit

    return commit()


def measure_ops(task, built, train_b, test_b, device):
    """{model: (training ops, their non-view ops, decoding ops, their non-view ops)} on the first batch of each,
    after one untimed step and decoding (lazy set-up is not counted). Training is the forward and backward pass
    without the optimizer's step: on the CPU torch's Adam updates one parameter at a time (about 9 operators
    each, thousands a step at base size), on CUDA a few fused launches for every model alike. Counted where the
    CPU's code paths are the ones measured (None on a GPU run)."""
    if device.type != "cpu":
        return {n: None for n in built}
    out = {}
    for n, (model, criterion, optimizer) in built.items():
        train_step(model, criterion, optimizer, train_b[0])
        decode(task, model, test_b[0])
        optimizer.zero_grad()
        out[n] = (count_ops(forward_backward, model, criterion, train_b[0])
                  + count_ops(decode, task, model, test_b[0]))
    return out


def _ops_fields(counts, reference):
    """A row's operator fields: measure_ops' four counts of a model and their non-view ratios to a reference's."""
    return {"train_ops": counts[0], "train_nonview_ops": counts[1], "decode_ops": counts[2],
            "decode_nonview_ops": counts[3], "train_nonview_ops_ratio": counts[1] / reference[1],
            "decode_nonview_ops_ratio": counts[3] / reference[3]}


def ops_rows(names, ops):
    """Rows of measure_ops' counts, as ratios to the first model (the LSTM presets to lstm_luong when counted)."""
    rows = []
    for n in names:
        ref = "lstm_luong" if n in LSTM_MODELS and "lstm_luong" in names else names[0]
        rows.append({"model": n, "reference": ref, **_ops_fields(ops[n], ops[ref])})
    return rows


def ops_markdown(rows):
    """docs/benchmarks.md's table of ops_rows (the --ops-only JSON's rows)."""
    lines = ["| model | against | forward+backward ops | not views | ratio | decoding ops | not views | ratio |",
             "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in rows:
        lines.append(f"| {r['model']} | {r['reference']} | {r['train_ops']:,} | {r['train_nonview_ops']:,} | "
                     f"{r['train_nonview_ops_ratio']:.3f} | {r['decode_ops']:,} | {r['decode_nonview_ops']:,} | "
                     f"{r['decode_nonview_ops_ratio']:.3f} |")
    return "\n".join(lines)


def format_rows(rows):
    ops = all("train_ops" in r for r in rows)
    lines = [f"{'model':<32} {'train ms':>9} {'ratio':>6} {'decode ms':>10} {'ratio':>6} {'mem MiB':>9} {'ratio':>6}"
             + (f" {'train ops':>10} {'non-view':>8} {'ratio':>6} {'decode non-view':>15} {'ratio':>6}" if ops else "")]
    for r in rows:
        lines.append(f"{r['model']:<32} {r['train_step_ms']:9.1f} {r['train_ratio']:6.3f} {r['decode_ms']:10.1f} "
                     f"{r['decode_ratio']:6.3f} {r['peak_mem_mib']:9.1f} {r['mem_ratio']:6.3f}"
                     + (f" {r['train_ops']:10d} {r['train_nonview_ops']:8d} {r['train_nonview_ops_ratio']:6.3f} "
                        f"{r['decode_nonview_ops']:15d} {r['decode_nonview_ops_ratio']:6.3f}" if ops else ""))
    return "\n".join(lines)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("data", help="data-bin with source and target syntax (e.g. the demo's work/demo/data-bin)")
    p.add_argument("--size", choices=sorted(SIZES), default="small")
    p.add_argument("--models", default="transformer,transformer_dbsa,transformer_sisa",
                   help="comma list, the first is the reference; known: " + ",".join(MODELS))
    p.add_argument("--train-batches", type=int, default=20)
    p.add_argument("--decode-batches", type=int, default=4)
    p.add_argument("--max-tokens", type=int, default=4096)
    p.add_argument("--repeats", type=int, default=3, help="passes over the decode batches (default 3)")
    p.add_argument("--ops-only", action="store_true", help="count the operators of a training step and a decoding "
                   "only (no timings, no memory): the same on any CPU, so small batches do")
    p.add_argument("--json", default=None)
    args = p.parse_args(argv)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    names = args.models.split(",")
    task = load_task(args.data)
    train_b = batches(task, "train", args.train_batches, args.max_tokens, device)
    test_b = batches(task, "test", args.decode_batches, args.max_tokens, device)
    built = {n: build(n, task, args.size, device) for n in names}
    if args.ops_only:
        if device.type != "cpu":
            sys.exit("error: --ops-only counts on the CPU (CUDA_VISIBLE_DEVICES= to hide the GPU)")
        rows = ops_rows(names, measure_ops(task, built, train_b, test_b, device))
        print(f"size {args.size}, operators of one forward+backward pass and one beam-4 decoding of {DECODE_STEPS} steps "
              f"(first batch of each, max tokens {args.max_tokens}); ratios to {names[0]} (LSTMs: lstm_luong)")
        print("\n".join(f"{r['model']:<34} {r['train_ops']:6d} {r['train_nonview_ops']:6d} "
                        f"{r['train_nonview_ops_ratio']:6.3f} {r['decode_ops']:7d} {r['decode_nonview_ops']:7d} "
                        f"{r['decode_nonview_ops_ratio']:6.3f}" for r in rows))
        if args.json:
            with open(args.json, "w") as f:
                json.dump({"device": "cpu", "size": args.size, "max_tokens": args.max_tokens, "data": args.data,
                           "torch": torch.__version__, "mkldnn": torch.backends.mkldnn.is_available(),
                           "date": time.strftime("%Y-%m-%d", time.gmtime()), "commit": _commit_of_checkout(),
                           "counted": "forward+backward (no optimizer step); beam-4 decoding", "rows": rows},
                          f, indent=1)
        return
    rows = measure(task, built, train_b, test_b, args.repeats, device)
    print(f"device {device}, size {args.size}, {len(train_b)} train batches, {len(test_b)} decode batches (beam 4), "
          f"max tokens {args.max_tokens}; ratios to {names[0]}")
    print(format_rows(rows))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": str(device), "size": args.size, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
