"""The parse losses under fairseq's memory and precision options.

* ``--checkpoint-activations``: the parse-head output must reach the criterion with its graph (it is a
  layer output, not a module attribute written under the checkpoint's ``no_grad``): the same gradients
  with and without it.
* LayerDrop: the supervised layers are never dropped and keep their number, so the criterion never reads
  a tensor from another batch, and SyncAttn's C comes from layer l_sync even when earlier layers drop.
* Low precision: the loss is taken from float32 log-probabilities, so a gold parent whose probability
  rounds to zero in fp16 / bf16 still has a finite loss and a gradient.
* Every transformer preset trains a few updates in each of these modes with finite losses and gradients
  reaching the parse parameters.
"""
import pytest
import torch
from fairseq import options, tasks
from fairseq.dataclass.utils import convert_namespace_to_omegaconf

from fairseq_syntax.criterions.dependency_loss import parse_head_nll
from fairseq_syntax.modules.dependency_attention import BiaffineParseHead
from fairseq_syntax.modules.syntax_attention import SyntaxSelfAttention
from helpers import USER_DIR, quick_subset

CRITERIA = {
    "transformer_dbsa_tiny": "label_smoothed_cross_entropy_with_dependency",
    "transformer_sisa_tiny": "label_smoothed_cross_entropy_with_dependency",
    "transformer_syncattn_tiny": "label_smoothed_cross_entropy_with_sync",
}
PRESETS = ["transformer_dbsa_tiny", "transformer_sisa_tiny", "transformer_rel_tiny", "transformer_dep_tiny",
           "transformer_dep_rel_tiny", "transformer_pascal_tiny", "transformer_sh_tiny", "transformer_syncattn_tiny"]
MODES = {
    "checkpoint-activations": ["--checkpoint-activations"],
    "layerdrop": ["--encoder-layerdrop", "0.5", "--decoder-layerdrop", "0.5"],
    "bf16-autocast": [],
}


def build(data_bin, arch, extra=(), dropout="0"):
    parser = options.get_training_parser()
    argv = [data_bin, "--user-dir", USER_DIR, "--task", "syntax_translation", "--arch", arch, "--dropout", dropout,
            "--criterion", CRITERIA.get(arch, "label_smoothed_cross_entropy"), "--label-smoothing", "0.1",
            "--optimizer", "adam", "--lr", "1e-3", "--max-tokens", "500", "--cpu", "--seed", "3", *extra]
    cfg = convert_namespace_to_omegaconf(options.parse_args_and_arch(parser, argv))
    task = tasks.setup_task(cfg.task)
    torch.manual_seed(3)
    model = task.build_model(cfg.model)
    criterion = task.build_criterion(cfg.criterion)
    task.load_dataset("train")
    batches = list(task.get_batch_iterator(task.dataset("train"), max_tokens=500).next_epoch_itr(shuffle=False))
    return model, criterion, batches


def parse_parameters(model):
    return {n: p for n, p in model.named_parameters() if ".parse_head." in n}


# ---------------------------------------------------------------- 1. activation checkpointing
@pytest.mark.parametrize("arch", ["transformer_dbsa_tiny", "transformer_syncattn_tiny"])
def test_parse_loss_gradient_same_with_checkpoint_activations(arch, data_bin):
    grads, logs = [], []
    for extra in ([], ["--checkpoint-activations"]):
        model, criterion, batches = build(data_bin, arch, extra)
        model.train()
        loss, _, log = criterion(model, batches[0])
        loss.backward()
        grads.append({n: p.grad.clone() for n, p in parse_parameters(model).items()})
        logs.append(log)
    assert set(grads[0]) == set(grads[1]) and any(".u1" in n for n in grads[0])
    for name, g in grads[0].items():
        assert g.abs().sum() > 0 or name.endswith(".u"), name  # Eq. 14's query bias has a zero gradient
        assert torch.allclose(g, grads[1][name], atol=1e-6), name
    for key in ("loss", "dep_enc_loss", "dep_dec_loss"):
        assert torch.allclose(torch.as_tensor(logs[0][key]), torch.as_tensor(logs[1][key]), atol=1e-5)


# ---------------------------------------------------------------- 2. LayerDrop
def test_layerdrop_never_supervises_another_batch(data_bin):
    model, criterion, batches = build(data_bin, "transformer_dbsa_tiny",
                                      ["--encoder-layerdrop", "0.9", "--decoder-layerdrop", "0.9"])
    model.train()
    assert len({b["net_input"]["src_tokens"].shape for b in batches[:2]}) == 2
    torch.manual_seed(0)
    for step in range(20):
        batch = batches[step % 2]
        _, extra = model(**batch["net_input"])
        src, prev = batch["net_input"]["src_tokens"], batch["net_input"]["prev_output_tokens"]
        # the parse layers always ran, on this batch
        assert extra["encoder_parse_logprobs"][0].shape == (src.size(0), src.size(1), src.size(1))
        assert extra["parse_logprobs"][0].shape == (prev.size(0), prev.size(1), prev.size(1))
        loss, _, _ = criterion(model, batch)
        assert torch.isfinite(loss)


def test_layerdrop_keeps_the_sync_layer_number(data_bin):
    """fairseq numbers the layers it runs when it picks alignment_layer: a dropped layer 1 would make
    layer 3 answer for l_sync = 2. Dropped layers are identities here, so C is layer l_sync's."""
    model, criterion, batches = build(data_bin, "transformer_syncattn_tiny",
                                      ["--decoder-layers", "3", "--decoder-layerdrop", "0.9"])
    model.train()
    layer = model.decoder.layers[model.sync_layer - 1]
    seen = []
    hook = layer.encoder_attn.register_forward_hook(lambda m, i, o: seen.append(o[1]))
    torch.manual_seed(0)
    for _ in range(12):
        seen.clear()
        c = criterion.model_output(model, batches[0])[1]["attn"][0]
        assert len(seen) == 1  # layer l_sync ran ...
        assert torch.allclose(c, seen[0].float().mean(0))  # ... and C is its cross-attention (all heads)
    hook.remove()


# ---------------------------------------------------------------- 3. low precision
def _peaked_attention():
    torch.manual_seed(0)
    att = SyntaxSelfAttention(8, 2, parse_head=BiaffineParseHead(4, "key"))
    with torch.no_grad():
        att.parse_head.u1.copy_(torch.eye(4) * 40.0)
    return att


@pytest.mark.parametrize("precision", ["fp16", "bf16-autocast"])
def test_tiny_gold_probability_gives_finite_loss_and_gradient(precision):
    att = _peaked_attention()
    x = torch.randn(5, 2, 8) * 3
    if precision == "fp16":
        att = att.half()
        out, _, logp = att(x.half())
    else:
        with torch.autocast("cpu", dtype=torch.bfloat16):
            out, _, logp = att(x)
    assert logp.dtype == torch.float32
    # the gold parent of every token: its least likely position (far below fp16's / bf16's smallest number)
    gold = logp.argmin(-1)
    p_gold = logp.gather(-1, gold.unsqueeze(-1)).exp()
    assert (p_gold < 1e-8).all()
    assert (p_gold.to(torch.float16 if precision == "fp16" else torch.bfloat16) == 0).any()  # would round to 0
    nll, n = parse_head_nll(logp, gold, torch.ones_like(gold, dtype=torch.bool), causal=False)
    assert n == gold.numel() and torch.isfinite(nll) and nll > 18 * n
    nll.backward()
    g = att.parse_head.u1.grad
    assert g is not None and torch.isfinite(g).all() and g.abs().sum() > 0


# ---------------------------------------------------------------- every preset in every mode
@pytest.mark.parametrize("mode", list(MODES))
@pytest.mark.parametrize("arch", quick_subset(PRESETS, quick=["transformer_dbsa_tiny", "transformer_pascal_tiny"]))
def test_presets_train_in_each_mode(arch, mode, data_bin):
    model, criterion, batches = build(data_bin, arch, MODES[mode], dropout="0.1")
    model.train()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    parse = parse_parameters(model)
    for batch in batches[:3]:
        optimizer.zero_grad()
        if mode == "bf16-autocast":
            with torch.autocast("cpu", dtype=torch.bfloat16):
                loss, _, log = criterion(model, batch)
        else:
            loss, _, log = criterion(model, batch)
        loss.backward()
        assert torch.isfinite(loss), (arch, mode)
        for key in ("dep_enc_loss", "dep_dec_loss", "sync_loss"):
            if key in log:
                assert torch.isfinite(torch.as_tensor(log[key], dtype=torch.float32)), key
        for name, p in model.named_parameters():
            assert p.grad is None or torch.isfinite(p.grad).all(), (arch, mode, name)
        for name, p in parse.items():
            if name.endswith(".u1"):
                assert p.grad is not None and p.grad.abs().sum() > 0, (arch, mode, name)
        optimizer.step()
