"""SyncAttn (Deguchi et al. 2021): L_sync by hand, masking, gradients; presets end to end."""
import math
import os
import re

import pytest
import torch

from fairseq_syntax.criterions.sync_loss import synchronous_attention_loss
from helpers import generate_cmd, run, tiny_model, train_cmd
from test_dbsa_e2e import _without_test_syntax

# 3-token source, 3-token target. C aligns target 0 <-> source 1, 1 <-> 0, 2 <-> 2 (a permutation),
# so D_mapped = C E C^T (Eq. 7) is E with rows and columns 0 and 1 swapped.
E = [[0.5, 0.5, 0.0], [0.25, 0.5, 0.25], [0.0, 0.0, 1.0]]
C = [[0.0, 1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]]
D = [[1.0, 0.0, 0.0], [0.2, 0.8, 0.0], [0.1, 0.2, 0.7]]


def hand_value():
    # row 0 sees only itself: D' = [1] = D. Row 1: D_mapped[1, :2] = [E01, E00] = [0.5, 0.5] -> D' = [.5, .5]
    row1 = (0.5 - 0.2) ** 2 + (0.5 - 0.8) ** 2
    # row 2: D_mapped[2] = [E21, E20, E22] = [0, 0, 1] -> softmax = [1, 1, e] / (2 + e)
    z = 2 + math.e
    row2 = (1 / z - 0.1) ** 2 + (1 / z - 0.2) ** 2 + (math.e / z - 0.7) ** 2
    return row1 + row2


def test_sync_loss_by_hand():
    total, rows = synchronous_attention_loss(torch.tensor([E]), torch.tensor([D]), torch.tensor([C]),
                                             torch.tensor([[True, True, True]]))
    assert total.item() == pytest.approx(hand_value(), rel=1e-6)
    assert total.item() == pytest.approx(0.208020, abs=1e-6)
    assert rows.item() == 3


def test_matrix_product_not_diagonal():
    """The public precursor took diag(E); with a non-diagonal E the results must differ."""
    e, c, d = torch.tensor([E]), torch.tensor([C]), torch.tensor([D])
    real = torch.tensor([[True, True, True]])
    total, _ = synchronous_attention_loss(e, d, c, real)
    diag, _ = synchronous_attention_loss(torch.diag_embed(e.diagonal(dim1=1, dim2=2)), d, c, real)
    assert not math.isclose(total.item(), diag.item(), rel_tol=1e-3)


def test_padding_and_future_contribute_nothing():
    e, c, d = torch.tensor([E]), torch.tensor([C]), torch.tensor([D])
    # the same sentence in a batch of two, the second one's target padded to 5 positions
    e5 = torch.zeros(2, 4, 4)
    e5[:, :3, :3] = e
    e5[:, 3] = 0.25  # a padded source row: C puts no mass on it
    c5 = torch.zeros(2, 5, 4)
    c5[:, :3, :3] = c
    c5[:, 3:, :] = 0.25  # padded target rows
    d5 = torch.rand(2, 5, 5)  # garbage in masked and padded cells
    d5[:, :3, :3] = torch.where(torch.ones(3, 3).tril().bool(), d, torch.rand(3, 3))
    real = torch.tensor([[True] * 3 + [False] * 2, [True] * 3 + [False] * 2])
    total, rows = synchronous_attention_loss(e5, d5, c5, real)
    assert total.item() == pytest.approx(2 * hand_value(), rel=1e-6) and rows.item() == 6
    # left-padded targets (rows that see nothing) stay finite
    real_left = torch.tensor([[False, False, True, True, True]] * 2)
    total, rows = synchronous_attention_loss(e5, d5, c5, real_left)
    assert torch.isfinite(total) and rows.item() == 6


def test_gradient_reaches_e_c_and_d():
    torch.manual_seed(0)
    e = torch.softmax(torch.randn(2, 4, 4), -1).requires_grad_()
    c = torch.softmax(torch.randn(2, 5, 4), -1).requires_grad_()
    d = torch.softmax(torch.randn(2, 5, 5) + torch.full((5, 5), float("-inf")).triu(1), -1).requires_grad_()
    real = torch.tensor([[True] * 5, [True] * 4 + [False]])
    total, _ = synchronous_attention_loss(e, d, c, real)
    total.backward()
    for t in (e, c, d):
        assert torch.isfinite(t.grad).all() and t.grad.abs().sum() > 0
    assert d.grad[1, 4].abs().sum() == 0 and d.grad[0].triu(1).abs().sum() == 0  # padded row, future cells


def test_model_returns_the_cross_attention_only_when_asked():
    model, d = tiny_model("transformer_syncattn_tiny")
    pad, eos = d.pad(), d.eos()
    src = torch.tensor([[pad, 5, 6, eos], [4, 5, 6, eos]])
    prev = torch.tensor([[eos, 9, 10], [eos, 14, 15]])
    _, extra = model(src, src.ne(pad).sum(1), prev, alignment_layer=model.sync_layer - 1)
    c = extra["attn"][0]
    assert c.shape == (2, 3, 4) and torch.allclose(c.sum(-1), torch.ones(2, 3), atol=1e-5)
    assert torch.all(c[0, :, 0] == 0)  # no mass on source padding
    with pytest.raises(ValueError, match="parse heads on both sides"):
        tiny_model("transformer_dbsa_tiny", dbsa_decoder_layer=0, sync_layer=1)


SYNC = ["--criterion", "label_smoothed_cross_entropy_with_sync", "--sync-lambda", "10.0"]


def test_syncattn_train_generate_restore(data_bin, tmp_path):
    save = str(tmp_path / "ck")
    arch = ["--arch", "transformer_syncattn_tiny"]
    p = run(train_cmd(data_bin, save, updates=3, arch=arch, extra=SYNC))
    log = p.stdout + p.stderr
    assert "sync_loss=" in log and "dep_enc_loss=" in log and "dep_dec_loss=" in log
    ck = os.path.join(save, "checkpoint_last.pt")
    g = run(generate_cmd(_without_test_syntax(data_bin, tmp_path), ck))  # no parses needed at inference
    assert len(re.findall(r"^H-\d+", g.stdout, flags=re.M)) == 21
    p2 = run(train_cmd(data_bin, save, updates=5, arch=arch, extra=SYNC + ["--restore-file", ck]))
    assert "num_updates=5" in (p2.stdout + p2.stderr).replace(" ", "")
    bad = run(train_cmd(data_bin, str(tmp_path / "bad"), updates=1, arch=["--arch", "transformer_dbsa_tiny"],
                        extra=SYNC), check=False)
    assert bad.returncode != 0 and "needs a SyncAttn model" in bad.stderr
