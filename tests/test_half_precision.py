"""Half precision (fp16, bf16) on the CPU, as far as torch allows there: every preset's loss terms and gradients
finite with the model in half precision; a saturated parse head (scores beyond fp16's range), fully padded
rows and the synchronous attention loss stay finite. What only a GPU shows (fairseq's FP16Optimizer, which
needs CUDA) is run by examples/gpu/device_check.py; bf16 training through the command line is test_bf16.py's; the
memory-efficient FP16 optimizer (loss scaling) runs on the CPU in that script's dry run (test_gpu_scripts.py)."""
import pytest
import torch

import golden_numbers
from fairseq_syntax.criterions.dependency_loss import parse_head_nll
from fairseq_syntax.criterions.sync_loss import synchronous_attention_loss
from fairseq_syntax.modules.dependency_attention import BiaffineParseHead
from fairseq_syntax.modules.parent_scaled_attention import ParentScaledHeads
from fairseq_syntax.modules.relative_positions import RelativePositionTerms, depth_buckets
from fairseq_syntax.modules.syntax_attention import AttentionInputs, SyntaxSelfAttention

HALF = [torch.float16, torch.bfloat16]


def _finite_grads(module):
    return {n: bool(torch.isfinite(p.grad).all()) for n, p in module.named_parameters() if p.grad is not None}


@pytest.mark.parametrize("dtype", HALF, ids=["fp16", "bf16"])
@pytest.mark.parametrize("case", golden_numbers.case_params())
def test_every_preset_in_half_precision_has_finite_losses_and_gradients(case, dtype):
    from fairseq import utils

    task, model, criterion, batch = golden_numbers.build(case)
    model = model.to(dtype)
    batch = utils.apply_to_sample(lambda t: t.to(dtype) if t.is_floating_point() else t, batch)  # as fairseq does
    loss, _, log = criterion(model, batch)
    loss.backward()
    assert all(torch.isfinite(torch.as_tensor(v, dtype=torch.float32)) for v in log.values()), log
    grads = _finite_grads(model)
    assert grads and all(grads.values()), [n for n, ok in grads.items() if not ok]


def _attention(dtype, parse=True, relative=True, pascal=True, scale_u1=1.0):
    torch.manual_seed(1)
    attn = SyntaxSelfAttention(
        32, 4, parse_head=BiaffineParseHead(8, bias="query", scaled=False) if parse else None,
        relative={"dependency": RelativePositionTerms(8, 2)} if relative else None,
        parent_scaling=ParentScaledHeads(2) if pascal else None)
    if parse:
        with torch.no_grad():
            attn.parse_head.u1.mul_(scale_u1)
    return attn.to(dtype)


def _inputs(dtype, bsz=3, length=6, pad_rows=()):
    torch.manual_seed(2)
    x = (torch.randn(length, bsz, 32) * 4).to(dtype).requires_grad_()
    padding = torch.zeros(bsz, length, dtype=torch.bool)
    padding[0, :2] = True  # left padding
    for b in pad_rows:
        padding[b] = True  # a sentence of padding only: every key of its rows is masked
    depths = torch.randint(0, 4, (bsz, length))
    parents = torch.randint(0, length, (bsz, length)).float()
    syntax = AttentionInputs(dependency_buckets=depth_buckets(depths, 2), parents=parents)
    gold = torch.randint(0, length, (bsz, length))
    return x, padding, syntax, gold


@pytest.mark.parametrize("dtype", HALF, ids=["fp16", "bf16"])
def test_a_saturated_parse_head_stays_finite(dtype):
    """The 2019 parse head is unscaled (Q U1 K^T): with large activations its scores leave fp16's range
    (65,504). Computed in float32, its log-probabilities, the dependency loss and the attention output stay
    finite (in fp16 they were NaN, whatever the loss scale), and so do the gradients once the loss is scaled
    down as fairseq's loss scaler does after an overflow (gradients of such scores are large by nature)."""
    attn = _attention(dtype, scale_u1=1000.0)
    x, padding, syntax, gold = _inputs(dtype)
    with torch.no_grad():
        q = attn.q_proj(x).float().view(6, 3, 4, 8)[:, :, -1].transpose(0, 1)
        k = attn.k_proj(x).float().view(6, 3, 4, 8)[:, :, -1].transpose(0, 1)
        raw = attn.parse_head.float()(q, k)
        attn.parse_head.to(dtype)
    assert raw.abs().max() > 65504  # saturated: beyond fp16's largest number
    out = attn(x, key_padding_mask=padding, syntax=syntax)
    logp = out.parse_logprobs
    assert logp.dtype == torch.float32
    real = ~padding.unsqueeze(1).expand_as(logp)
    assert torch.isfinite(logp[real]).all()
    nll, n = parse_head_nll(logp, gold, ~padding, causal=False)
    assert torch.isfinite(nll) and n > 0
    assert torch.isfinite(out.out).all()
    ((nll + out.out.float().sum()) / 2 ** 8).backward()
    grads = _finite_grads(attn)
    assert all(grads.values()) and torch.isfinite(x.grad).all(), grads


@pytest.mark.parametrize("dtype", HALF + [torch.float32], ids=["fp16", "bf16", "fp32"])
def test_fully_padded_rows_stay_finite(dtype):
    """A sentence of padding only (every key of its rows masked): no NaN in the output, the parse head's
    log-probabilities or any gradient (a NaN row would poison the whole batch's gradient through the
    softmax's backward, even where the loss selects it away)."""
    attn = _attention(dtype)
    x, padding, syntax, gold = _inputs(dtype, pad_rows=(2,))
    out = attn(x, key_padding_mask=padding, syntax=syntax)
    assert torch.isfinite(out.out).all()
    assert torch.isfinite(out.parse_logprobs[~padding]).all()
    nll, _ = parse_head_nll(out.parse_logprobs, gold, ~padding, causal=False)
    (nll + out.out.float().sum()).backward()
    assert torch.isfinite(x.grad).all()
    assert all(_finite_grads(attn).values())


@pytest.mark.parametrize("dtype", HALF, ids=["fp16", "bf16"])
def test_sync_loss_in_half_precision_with_a_padding_only_target(dtype):
    torch.manual_seed(3)
    bsz, src, tgt = 3, 5, 4
    enc = torch.softmax(torch.randn(bsz, src, src) * 30, -1).to(dtype).requires_grad_()
    dec = torch.softmax(torch.randn(bsz, tgt, tgt) * 30, -1).to(dtype).requires_grad_()
    cross = torch.softmax(torch.randn(bsz, tgt, src) * 30, -1).to(dtype).requires_grad_()
    real = torch.ones(bsz, tgt, dtype=torch.bool)
    real[1, 2:] = False
    real[2] = False  # a target of padding only
    loss, rows = synchronous_attention_loss(enc, dec, cross, real)
    assert loss.dtype == torch.float32 and torch.isfinite(loss) and rows == 6
    loss.backward()
    assert all(torch.isfinite(t.grad).all() for t in (enc, dec, cross))


def _base_parse_layer_grads(dtype, loss_scale, bsz=33, length=10, tokens_per_row=20):
    """One DBSA encoder layer's self-attention at Transformer base (d 512, 8 heads, the 2019 head: unscaled, query
    bias) on unit-variance inputs (a post-LN layer's input), its parse loss in fairseq's sum units (the 'arcs'
    term: the CE sum times about 1, as at Tanaka's lengths) times ``loss_scale``, as FP16Optimizer's backward
    takes it; the batch stands for ``tokens_per_row`` times its tokens (6,600, a Tanaka batch of 8,192 tokens),
    its loss weighted so. The gradients (the input's too) in float32, divided by the loss scale."""
    torch.manual_seed(7)
    attn = SyntaxSelfAttention(512, 8, parse_head=BiaffineParseHead(64, bias="query", scaled=False)).to(dtype)
    x = torch.randn(length, bsz, 512).to(dtype).requires_grad_()
    padding = torch.zeros(bsz, length, dtype=torch.bool)
    padding[::3, :3] = True  # left padding on a third of the rows
    gold = torch.randint(3, length, (bsz, length))
    gold[padding] = -1
    out = attn(x, key_padding_mask=padding)
    nll, _ = parse_head_nll(out.parse_logprobs, gold, ~padding, causal=False)
    (nll * tokens_per_row * loss_scale).backward()
    grads = {n: p.grad for n, p in attn.named_parameters() if p.grad is not None}
    grads["input"] = x.grad
    return {n: g.float() / loss_scale for n, g in grads.items()}


def test_the_parse_heads_gradients_at_base_size_stay_finite_in_fp16_at_loss_scales_1_to_16():
    """The candidate overflow points of DBSA's parse head under fairseq's FP16Optimizer: U1's gradient, summed over
    every token pair of the batch in float32 and cast to the fp16 parameter's dtype, and the backward of the
    head's float() casts of q and k (float32 gradients cast to fp16). At base size, loss scales 1 to 16 (where the
    stalled GPU run spent its updates): every gradient finite and equal to float32's to fp16's rounding; and U1's
    largest gradient element below q_proj's, so an fp16 overflow starts in the ordinary projections first, not
    in the head."""
    reference = _base_parse_layer_grads(torch.float32, 1)
    for scale in (1, 2, 4, 8, 16):
        grads = _base_parse_layer_grads(torch.float16, scale)
        bad = [n for n, g in grads.items() if not torch.isfinite(g).all()]
        assert not bad, (scale, bad)
        for name in ("parse_head.u1", "q_proj.weight", "k_proj.weight", "input"):
            top = reference[name].abs().max()
            assert (grads[name] - reference[name]).abs().max() <= 2e-2 * top, (scale, name)
    u1, q = reference["parse_head.u1"].abs().max(), reference["q_proj.weight"].abs().max()
    assert 16 * u1 < torch.finfo(torch.float16).max / 2 and u1 < q, (float(u1), float(q))
