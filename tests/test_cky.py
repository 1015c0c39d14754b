"""CKY-based convolutional attention (Watanabe et al. 2017): Deduction Unit, Eq. 12 table, Eq. 13-16 attention.

Coordinates: flat, level-major tables; cell (i, j) (span length i, start j) of a table over T positions is
row ``level_offset(i, T) + j``; a sentence of length n owns the cells with j + i <= n.
"""
import itertools

import pytest
import torch

from fairseq_syntax.modules.cky_table import (
    CKYTable,
    DeductionUnit,
    cell_coordinates,
    level_offset,
    split_candidates,
    table_size,
)
from fairseq_syntax.modules.lstm_attention import CKYAttention, memory_size, memory_states
from helpers import tiny_model


def test_coordinates_and_split_operands():
    assert [level_offset(i, 4) for i in (1, 2, 3, 4)] == [0, 4, 7, 9] and table_size(4) == 10
    level, start = cell_coordinates(4)
    assert level.tolist() == [1, 1, 1, 1, 2, 2, 2, 3, 3, 4] and start.tolist() == [0, 1, 2, 3, 0, 1, 2, 0, 1, 0]
    # level 3 over 4 positions: cells (3,0), (3,1); splits k=1: (1,j)+(2,j+1), k=2: (2,j)+(1,j+2)
    left, right = split_candidates(3, 4)
    assert left.tolist() == [[0, 4], [1, 5]] and right.tolist() == [[5, 2], [6, 3]]
    assert memory_states(memory_size(7)) == 7
    with pytest.raises(ValueError, match="not T states"):
        memory_states(11)


def test_deduction_unit_shapes():
    du = DeductionUnit(8)
    assert du.cnn1.weight.shape == (4, 8)  # 1x1, d/2 channels
    assert du.cnn2.weight.shape == (4, 2 * 4)  # 1x2 over two d/2-channel cells, d/2 channels
    assert du.cnn3.weight.shape == (8, 4)  # 1x1, d channels
    assert du.cnn4.weight.shape == (8, 2 * 8)  # 1x2 over two d-channel cells, d channels
    a, b = torch.randn(3, 5, 8), torch.randn(3, 5, 8)
    assert du(a, b).shape == (3, 5, 8)
    with pytest.raises(ValueError, match="even state size"):
        DeductionUnit(7)


def test_cell_terms_give_the_du_output_and_its_sum():
    torch.manual_seed(0)
    du = DeductionUnit(6).double()
    a, b = torch.randn(10, 6, dtype=torch.double), torch.randn(10, 6, dtype=torch.double)
    za, zb, pl, pr = du.cell_terms(torch.cat([a, b]))
    torch.testing.assert_close(du.combine(za[:10], zb[10:], pl[:10], pr[10:]), du.raw(a, b))
    u3, const = du.score_weights()
    fast = torch.relu(za[:10] + zb[10:]) @ u3 + pl[:10].sum(-1) + pr[10:].sum(-1) + const
    torch.testing.assert_close(fast, du.raw(a, b).sum(-1))
    torch.testing.assert_close(du(a, b), torch.nn.functional.layer_norm(du.raw(a, b), (6,)))  # LN at init
    plain = DeductionUnit(6, norm="none").double()
    torch.testing.assert_close(plain(a, b), plain.raw(a, b))
    with pytest.raises(ValueError, match="unknown Deduction Unit normalisation"):
        DeductionUnit(6, norm="batch")


def _linear_table(h, w_left=1.0, w_right=2.0):
    """CKYTable whose DU is DU(a, b) = w_left * a + w_right * b (CNN1-3 zeroed, no normalisation): Eq. 12 by
    hand."""
    d = h.size(-1)
    table = CKYTable(d, norm="none").double()
    with torch.no_grad():
        for p in table.parameters():
            p.zero_()
        table.du.cnn4.weight[:, :d] = w_left * torch.eye(d)
        table.du.cnn4.weight[:, d:] = w_right * torch.eye(d)
    return table


def test_max_over_splits_on_a_hand_made_table():
    # DU(a, b) = a + 2b. T = 3: level 2 has one split per cell; cell (3, 0) chooses between
    #   k=1: DU(h0, (2,1)) = h0 + 2 (h1 + 2 h2)   and   k=2: DU((2,0), h2) = h0 + 2 h1 + 2 h2.
    h = torch.tensor([[[1.0, 0.0], [0.0, 1.0], [3.0, -1.0]]], dtype=torch.double)
    cells, padding, splits = _linear_table(h)(h, torch.tensor([3]))
    h0, h1, h2 = h[0]
    c20, c21 = h0 + 2 * h1, h1 + 2 * h2
    k1, k2 = h0 + 2 * c21, c20 + 2 * h2  # k1 = (13, -2): sum 11; k2 = (7, 0): sum 7
    assert k1.sum() > k2.sum()
    expected = torch.stack([h0, h1, h2, c20, c21, k1])
    torch.testing.assert_close(cells[0], expected)
    assert splits[0].tolist() == [0, 0, 0, 1, 1, 1] and not padding.any()
    # make h2's second coordinate dominate negatively in k1: now the split k=2 wins
    h = torch.tensor([[[1.0, 0.0], [0.0, 1.0], [0.0, -3.0]]], dtype=torch.double)
    cells, _, splits = _linear_table(h)(h, torch.tensor([3]))
    h0, h1, h2 = h[0]
    k1, k2 = h0 + 2 * (h1 + 2 * h2), (h0 + 2 * h1) + 2 * h2  # sums -9 and -3
    assert k2.sum() > k1.sum()
    torch.testing.assert_close(cells[0, 5], k2)
    assert splits[0, 5].item() == 2


def _naive_table(du, h):
    """Eq. 12 cell by cell and split by split: every candidate DU output, the one with the largest sum wins
    (then normalised, when the DU normalises)."""
    t = h.size(0)
    cell = {(1, j): h[j] for j in range(t)}
    for i in range(2, t + 1):
        for j in range(t - i + 1):
            cands = [du.raw(cell[(k, j)], cell[(i - k, j + k)]) for k in range(1, i)]
            cell[(i, j)] = du.norm(max(cands, key=lambda v: v.sum().item()))
    return torch.stack([cell[(i, j)] for i in range(1, t + 1) for j in range(t - i + 1)])


@pytest.mark.parametrize("norm", ["layer", "none"])
def test_batched_levels_equal_the_equation_values_and_gradients(norm):
    torch.manual_seed(1)
    table = CKYTable(6, norm=norm).double()
    if norm == "layer":  # a normalisation that is not the identity at initialisation
        with torch.no_grad():
            table.du.norm.weight.uniform_(0.5, 1.5)
            table.du.norm.bias.uniform_(-0.5, 0.5)
    h = torch.randn(1, 5, 6, dtype=torch.double, requires_grad=True)
    cells, _, _ = table(h, torch.tensor([5]))
    weights = torch.randn_like(cells)
    fast_grads = torch.autograd.grad((cells * weights).sum(), [h, *table.parameters()])
    naive = _naive_table(table.du, h[0])
    torch.testing.assert_close(cells[0], naive)
    naive_grads = torch.autograd.grad((naive * weights[0]).sum(), [h, *table.parameters()])
    for fast, ref in zip(fast_grads, naive_grads):
        torch.testing.assert_close(fast, ref)


@pytest.mark.parametrize("norm", ["layer", "none"])
def test_table_gradients_with_dropout_pass_gradcheck(norm):
    """The replayed backward with the forward's dropout masks (reseeded: the same masks on every call)."""
    torch.manual_seed(7)
    table = CKYTable(4, dropout=0.3, norm=norm).double().train()
    h = torch.randn(2, 4, 4, dtype=torch.double, requires_grad=True)
    lengths = torch.tensor([4, 3])

    def cells(states, *params):
        torch.manual_seed(11)
        return table(states, lengths)[0]

    assert torch.autograd.gradcheck(cells, (h, *table.parameters()), eps=1e-6, atol=1e-5)


def _left_padded(sentences, pad):
    width = max(len(s) for s in sentences)
    src = torch.full((len(sentences), width), pad, dtype=torch.long)
    for b, s in enumerate(sentences):
        src[b, width - len(s):] = torch.tensor(s)
    return src, torch.tensor([len(s) for s in sentences])


def test_left_padded_batch_equals_each_sentence_alone():
    model, d = tiny_model("cky_lstm_tiny")
    model = model.double()
    sentences = [[5, 6, 7, 2], [8, 9, 10, 11, 12, 13, 2], [14, 2]]
    src, lengths = _left_padded(sentences, d.pad())
    memory, h, c, padding = model.encoder(src, lengths)
    width = src.size(1)
    assert memory.size(0) == memory_size(width)
    for b, s in enumerate(sentences):
        alone, h1, c1, pad1 = model.encoder(torch.tensor([s]), torch.tensor([len(s)]))
        n = len(s)
        assert not pad1.any()
        torch.testing.assert_close(memory[:n, b], alone[:n, 0])  # encoder states (right-padded coordinates)
        torch.testing.assert_close(h[:, b], h1[:, 0])
        torch.testing.assert_close(c[:, b], c1[:, 0])
        level, start = cell_coordinates(n)
        rows = width + level_offset(level, width) + start  # the same cells in the batch's table
        torch.testing.assert_close(memory[rows, b], alone[n:, 0])
        owned = torch.zeros(memory.size(0), dtype=torch.bool)
        owned[:n] = True
        owned[rows] = True
        assert torch.equal(padding[:, b], ~owned)  # every other row is padding


def test_joint_attention_sums_to_one_and_padding_gets_nothing():
    model, d = tiny_model("cky_lstm_tiny")
    src, lengths = _left_padded([[5, 6, 7, 2], [8, 9, 10, 11, 12, 2]], d.pad())
    memory, _, _, padding = model.encoder(src, lengths)
    attn = model.decoder.attention
    assert isinstance(attn, CKYAttention)
    query = torch.randn(2, memory.size(-1))
    _, word_alpha = attn(query, memory, padding)  # by default: Eq. 8's weights on the states, zeros on cells
    t = src.size(1)
    torch.testing.assert_close(word_alpha[:t].sum(0), torch.ones(2))
    assert word_alpha[t:].abs().max() == 0
    with attn.joint_weights():
        out, alpha = attn(query, memory, padding)
    assert attn.return_joint is False  # left as it was
    assert out.shape == (2, memory.size(-1)) and alpha.shape == padding.shape
    torch.testing.assert_close(alpha.sum(0), torch.ones(2))
    assert alpha[padding].abs().max() == 0 and (alpha[~padding] > 0).all()
    # Eq. 13: one softmax over states and cells (level-1 cells included) with the dot scores
    scores = memory[:, 0] @ query[0]
    keep = ~padding[:, 0]
    torch.testing.assert_close(alpha[keep, 0], torch.softmax(scores[keep], 0))


@pytest.mark.parametrize("arch", ["lstm_luong_tiny", "cky_lstm_tiny"])
def test_incremental_decoding_equals_the_full_forward(arch):
    torch.manual_seed(2)
    model, d = tiny_model(arch)
    src, lengths = _left_padded([[5, 6, 7, 8, 2], [9, 10, 2]], d.pad())
    prev = torch.tensor([[2, 11, 12, 13, 14], [2, 15, 16, 17, 18]])
    encoder_out = model.encoder(src, lengths)
    full, full_attn = model.decoder(prev, encoder_out)
    state = {}
    steps = [model.decoder(prev[:, :t + 1], encoder_out, incremental_state=state) for t in range(prev.size(1))]
    torch.testing.assert_close(torch.cat([s[0] for s in steps], 1), full, atol=1e-5, rtol=0)
    torch.testing.assert_close(torch.cat([s[1] for s in steps], 1), full_attn, atol=1e-5, rtol=0)


@pytest.mark.parametrize("arch", ["lstm_luong_tiny", "cky_lstm_tiny"])
def test_beam_search_scores_equal_forced_decoding(arch):
    """Beam 4 through fairseq's SequenceGenerator (reorders the encoder output and the decoder cache)."""
    from fairseq.sequence_generator import SequenceGenerator

    torch.manual_seed(3)
    model, d = tiny_model(arch)
    src, lengths = _left_padded([[5, 6, 7, 8, 2], [9, 10, 2], [11, 12, 13, 2]], d.pad())
    gen = SequenceGenerator([model], d, beam_size=4, max_len_b=6)
    hypos = gen.forward({"net_input": {"src_tokens": src, "src_lengths": lengths}})
    for b, beam in enumerate(hypos):
        assert len(beam) == 4
        for hyp in beam:
            tokens = hyp["tokens"].unsqueeze(0)
            prev = torch.cat([tokens.new_tensor([[d.eos()]]), tokens[:, :-1]], 1)
            logits, _ = model(src[b:b + 1], lengths[b:b + 1], prev)
            lprobs = torch.log_softmax(logits, -1)[0].gather(1, tokens[0].unsqueeze(1)).squeeze(1)
            torch.testing.assert_close(hyp["positional_scores"], lprobs, atol=1e-5, rtol=0)


def test_encoder_states_follow_eq_1_to_5():
    """h_i = (LSTM2(LSTM1(v)) + LSTM1(v))_i forward + the same read right to left, at word i (no packing)."""
    model, d = tiny_model("lstm_luong_tiny")
    src = torch.tensor([[5, 6, 7, 8, 2]])
    memory, _, _, _ = model.encoder(src, torch.tensor([5]))
    v = model.encoder.embed_tokens(src).transpose(0, 1)  # (T, 1, d)

    def direction(stack, x):
        h1, _ = stack.layers[0](x)  # Eq. 1 / 2
        return stack.layers[1](h1)[0] + h1  # Eq. 3 / 4 (residual)

    expected = direction(model.encoder.forward_lstm, v) + direction(model.encoder.backward_lstm, v.flip(0)).flip(0)
    torch.testing.assert_close(memory, expected)  # Eq. 5


def test_reverse_direction_final_states_start_the_decoder():
    model, d = tiny_model("lstm_luong_tiny")
    src = torch.tensor([[5, 6, 7, 2]])
    _, h, c, _ = model.encoder(src, torch.tensor([4]))
    emb = model.encoder.embed_tokens(src.flip(1))  # the reverse direction reads x_T .. x_1
    _, (h1, c1) = model.encoder.backward_lstm.layers[0](emb.transpose(0, 1))
    torch.testing.assert_close(h[0], h1[0])
    torch.testing.assert_close(c[0], c1[0])
    assert h.shape == (2, 1, 32)


def test_normalised_cells_stay_bounded_where_the_literal_du_explodes():
    """The failure seen on Multi30k: once training has grown the DU's weights (here: x4), the literal DU
    compounds them level by level; the normalised DU keeps every cell at the scale of a LayerNorm output."""
    torch.manual_seed(3)
    width, d = 24, 16
    h = torch.randn(2, width, d)
    norms = {}
    for norm in ("none", "layer"):
        torch.manual_seed(3)
        table = CKYTable(d, norm=norm)
        with torch.no_grad():
            for p in (table.du.cnn1.weight, table.du.cnn2.weight, table.du.cnn3.weight, table.du.cnn4.weight):
                p.mul_(4)
        cells, _, _ = table(h, torch.tensor([width, width]))
        norms[norm] = [cells[:, level_offset(i, width):level_offset(i, width) + width - i + 1].norm(dim=-1).max()
                       for i in range(1, width + 1)]
    assert norms["none"][-1] > 1e3 * norms["none"][0]  # the explosion (here 2e4x over 23 levels)
    assert max(norms["layer"][1:]) <= d ** 0.5 + 1e-4  # LN output, gamma 1, beta 0: norm sqrt(d)


def test_choices_are_ties_free_in_practice():
    """The fast selection picks the same split as the full DU outputs on a random batch (float32)."""
    torch.manual_seed(4)
    table = CKYTable(16)
    h = torch.randn(3, 7, 16)
    cells, _, splits = table(h, torch.tensor([7, 5, 3]))
    for b, n in enumerate([7, 5, 3]):
        for i, j in itertools.product(range(2, n + 1), range(n)):
            if j + i > n:
                continue
            cands = [table.du.raw(cells[b, level_offset(k, 7) + j], cells[b, level_offset(i - k, 7) + j + k]).sum()
                     for k in range(1, i)]
            assert splits[b, level_offset(i, 7) + j].item() == 1 + int(torch.stack(cands).argmax())


def test_subnormal_gradients_of_the_cells_are_dropped_before_the_deduction_unit():
    """Gradients below float32's smallest normal number (what the joint softmax gives the cells it all but
    ignores) reach the Deduction Unit's backward as 0: a CPU multiplies subnormal operands tens of times
    slower (docs/cky.md, "Speed on real text"). Passed through, they would leave subnormal gradients."""
    torch.manual_seed(5)
    width, d = 5, 8
    table = CKYTable(d)
    h = torch.randn(2, width, d, requires_grad=True)
    cells, _, _ = table(h, torch.tensor([width, width]))
    tiny = torch.finfo(torch.float32).tiny
    upstream = torch.zeros_like(cells)
    upstream[:, width:] = torch.empty_like(upstream[:, width:]).uniform_(0.1, 0.9) * tiny  # every cell above level 1
    assert ((upstream[:, width:] > 0) & (upstream[:, width:] < tiny)).all()
    grads = torch.autograd.grad(cells, [h, *table.parameters()], upstream, retain_graph=True)
    assert all(g.count_nonzero() == 0 for g in grads)
    # a normal gradient on the same cells still flows, to the states and to the DU
    grads = torch.autograd.grad(cells, [h, *table.parameters()], upstream / tiny)
    assert all(g.count_nonzero() > 0 for g in grads)


def test_deferred_memory_gradient_equals_plain_autograd(monkeypatch):
    """The per-step memory gradients summed in one product (training) equal autograd's own sum."""
    from fairseq_syntax.models import attention_lstm

    torch.manual_seed(5)
    model, d = tiny_model("cky_lstm_tiny", cky_dropout=0.0)
    model = model.double().train()
    src, lengths = _left_padded([[5, 6, 7, 8, 2], [9, 10, 2]], d.pad())
    prev = torch.tensor([[2, 11, 12, 13], [2, 15, 16, 17]])

    def grads():
        model.zero_grad()
        out, _ = model(src, lengths, prev)
        weights = torch.linspace(0.5, 2, 8, dtype=torch.double).view(2, 4)
        (out.log_softmax(-1)[..., 5] * weights).sum().backward()
        return {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}

    fast = grads()
    monkeypatch.setattr(attention_lstm, "defer_memory_grad", lambda memory: memory)
    plain = grads()
    assert fast.keys() == plain.keys() and "encoder.cky.du.cnn3.weight" in fast
    for name in fast:
        torch.testing.assert_close(fast[name], plain[name], msg=name)


def test_any_reorder_of_the_beam_rows_reads_the_right_memory():
    torch.manual_seed(6)
    model, d = tiny_model("cky_lstm_tiny")
    src, lengths = _left_padded([[5, 6, 7, 8, 2], [9, 10, 2], [11, 12, 2]], d.pad())
    enc = model.encoder(src, lengths)
    attn = model.decoder.attention
    for order in (torch.tensor([0, 0, 1, 1, 2, 2]), torch.tensor([2, 0, 1, 1, 0, 2]), torch.tensor([1, 1, 2, 2])):
        memory, h, _, padding = model.encoder.reorder_encoder_out(enc, order)
        assert h.size(1) == len(order)
        query = torch.randn(len(order), 32)
        out, alpha = attn(query, memory, padding)
        expanded = enc[0].index_select(1, order), enc[3].index_select(1, order)  # one memory row per query row
        ref_out, ref_alpha = attn(query, *expanded)
        torch.testing.assert_close(out, ref_out)
        torch.testing.assert_close(alpha, ref_alpha)
    grouped = model.encoder.reorder_encoder_out(enc, torch.tensor([0, 0, 1, 1, 2, 2]))
    assert grouped[0].size(1) == 3  # the memory is not copied per hypothesis


def test_training_under_autocast_and_with_frozen_parameters():
    torch.manual_seed(8)
    model, d = tiny_model("cky_lstm_tiny")
    model.train()
    src, lengths = _left_padded([[5, 6, 7, 8, 2], [9, 10, 2]], d.pad())
    prev = torch.tensor([[2, 11, 12, 13], [2, 15, 16, 17]])
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out, _ = model(src, lengths, prev)
        loss = out.float().log_softmax(-1)[..., 5].sum()
    loss.backward()
    grads = [p.grad for p in model.parameters()]
    assert all(g is not None and torch.isfinite(g).all() for g in grads)
    model.zero_grad()
    model.encoder.cky.du.cnn4.weight.requires_grad_(False)  # a frozen DU parameter
    out, _ = model(src, lengths, prev)
    out.sum().backward()
    assert model.encoder.cky.du.cnn4.weight.grad is None and model.encoder.cky.du.cnn3.weight.grad is not None


def test_a_partial_backward_pass_leaves_no_stale_memory_gradient():
    """autograd.grad on decoder parameters only (retain_graph), then a full backward: gradients as a single pass."""
    torch.manual_seed(9)
    model, d = tiny_model("cky_lstm_tiny", cky_dropout=0.0)
    model = model.double().train()
    src, lengths = _left_padded([[5, 6, 7, 8, 2], [9, 10, 2]], d.pad())
    prev = torch.tensor([[2, 11, 12, 13], [2, 15, 16, 17]])

    def loss():
        out, _ = model(src, lengths, prev)
        return out.log_softmax(-1)[..., 5].sum()

    loss().backward()
    once = model.encoder.embed_tokens.weight.grad.clone()
    model.zero_grad()
    value = loss()
    torch.autograd.grad(value, list(model.decoder.parameters()), retain_graph=True)
    value.backward()
    torch.testing.assert_close(model.encoder.embed_tokens.weight.grad, once)


def test_a_checkpoint_without_the_du_normalisation_names_the_override():
    plain, _ = tiny_model("cky_lstm_tiny", cky_norm="none")
    normed, _ = tiny_model("cky_lstm_tiny")
    with pytest.raises(RuntimeError, match="cky_norm': 'none'"):
        normed.load_state_dict(plain.state_dict())
    again, _ = tiny_model("cky_lstm_tiny", cky_norm="none")
    again.load_state_dict(plain.state_dict())  # the matching model loads it


def test_the_cpu_flushes_subnormals_inside_the_block_only():
    """The table's backward runs with the CPU's flush-to-zero mode on and leaves the mode as it found it."""
    from fairseq_syntax.modules.subnormal import cpu_flushes_subnormals, subnormals_flushed

    cpu = torch.device("cpu")
    assert not cpu_flushes_subnormals()
    with subnormals_flushed(cpu):
        assert cpu_flushes_subnormals()
        assert torch.tensor([1e-39]).mul(1.0).item() == 0.0
        with subnormals_flushed(cpu):
            assert cpu_flushes_subnormals()
        assert cpu_flushes_subnormals()  # an inner block does not turn off an outer one's mode
    assert not cpu_flushes_subnormals() and torch.tensor([1e-39]).mul(1.0).item() != 0.0
    seen = []
    table = CKYTable(8)
    du_forward = table.du.forward

    def forward(left, right):  # the DU runs in the backward's replay with autograd on
        if torch.is_grad_enabled() and left.requires_grad:
            seen.append(cpu_flushes_subnormals())
        return du_forward(left, right)

    table.du.forward = forward
    h = torch.randn(1, 4, 8, requires_grad=True)
    table(h, torch.tensor([4]))[0].sum().backward()
    assert seen == [True, True, True] and not cpu_flushes_subnormals()
    torch.set_flush_denormal(True)  # a mode the user chose stays on
    try:
        table(h, torch.tensor([4]))[0].sum().backward()
        assert cpu_flushes_subnormals()
    finally:
        torch.set_flush_denormal(False)


def test_pairwise_cosine_of_rows():
    from fairseq_syntax.analysis.cky_attention import pairwise_cosine

    assert pairwise_cosine(torch.tensor([[1.0, 2.0], [2.0, 4.0], [3.0, 6.0]])) == pytest.approx(1.0)
    assert pairwise_cosine(torch.eye(3)) == pytest.approx(0.0)
    assert pairwise_cosine(torch.tensor([[1.0, 0.0], [-1.0, 0.0]])) == pytest.approx(-1.0)
    # 3 rows, pairs (0,1) = 1, (0,2) = 0, (1,2) = 0: the mean over distinct pairs, not over N^2 entries
    assert pairwise_cosine(torch.tensor([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]])) == pytest.approx(1 / 3)
    with pytest.raises(ValueError):
        pairwise_cosine(torch.ones(1, 4))


def test_cell_statistics_read_states_level_one_and_upper_cells_apart(monkeypatch):
    """The memory is T states, then the T level-1 cells (equal to the states, Eq. 12), then levels >= 2:
    the level-1 cells score as the states do, so they take exactly the states' share of the joint weight."""
    from fairseq_syntax.analysis import cky_attention as analysis

    torch.manual_seed(4)
    model, d = tiny_model("cky_lstm_tiny")
    pairs = [(torch.tensor([5, 6, 7, 8, 2]), torch.tensor([9, 10, 11, 2])),
             (torch.tensor([12, 13, 2]), torch.tensor([14, 2])),
             (torch.tensor([15, 2]), torch.tensor([16, 17, 2]))]  # T = 2: one upper cell, no cell cosine
    stats = analysis.cell_statistics(model, pairs, d.eos())
    assert (stats.sentences, stats.target_tokens, stats.cosine_sentences) == (3, 9, 2)
    states_share = 1 - stats.attention_on_cells
    assert stats.attention_on_cells - stats.attention_on_upper_cells == pytest.approx(states_share, abs=1e-6)
    assert 0 < stats.attention_on_upper_cells < stats.attention_on_cells < 1
    assert -1 <= stats.cell_cosine <= 1 and -1 <= stats.state_cosine <= 1
    # collapsed cells (every cell of a sentence one vector) read as cosine 1
    table = model.encoder.cky.forward

    def collapsed(states, lengths):
        cells, padding, extra = table(states, lengths)
        t = states.size(1)
        cells = torch.cat([cells[:, :t], cells[:, t:t + 1].expand(-1, cells.size(1) - t, -1)], dim=1)
        return cells, padding, extra

    monkeypatch.setattr(model.encoder.cky, "forward", collapsed)
    assert analysis.cell_statistics(model, pairs[:1], d.eos()).cell_cosine == pytest.approx(1.0)
