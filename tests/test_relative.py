"""Relative positions (Shaw et al. 2018; Omote et al. 2019): Table 1, buckets vs. materialised tensors."""
import io

import numpy as np
import pytest
import torch
from fairseq.data import Dictionary, LanguagePairDataset

from fairseq_syntax.data.trees.conllu import read_conllu, sentence_from_heads
from fairseq_syntax.data.alignment.subword_align import align_sentence
from fairseq_syntax.data.datasets.syntax_dataset import SideSyntax, SyntaxLanguagePairDataset, SyntaxRequest
from fairseq_syntax.modules.dependency_attention import BiaffineParseHead
from fairseq_syntax.modules.relative_positions import RelativePositionTerms, depth_buckets, linear_buckets
from fairseq_syntax.modules.syntax_attention import AttentionInputs, SyntaxSelfAttention
from helpers import TensorList, tiny_model

# Omote et al. (2019) Fig. 2: My -> father -> bought (root); a, red -> car -> bought; . -> bought
FIG2_CONLLU = """# text = My father bought a red car .
1\tMy\tmy\tPRON\t_\t_\t2\tnmod:poss\t_\t_
2\tfather\tfather\tNOUN\t_\t_\t3\tnsubj\t_\t_
3\tbought\tbuy\tVERB\t_\t_\t0\troot\t_\t_
4\ta\ta\tDET\t_\t_\t6\tdet\t_\t_
5\tred\tred\tADJ\t_\t_\t6\tamod\t_\t_
6\tcar\tcar\tNOUN\t_\t_\t3\tobj\t_\t_
7\t.\t.\tPUNCT\t_\t_\t3\tpunct\t_\t_

"""
# Table 1 of the paper, row i, column j: dist_ij = depth(n_j) - depth(n_i)
TABLE1 = [
    [0, -1, -2, 0, 0, -1, -1],
    [1, 0, -1, 1, 1, 0, 0],
    [2, 1, 0, 2, 2, 1, 1],
    [0, -1, -2, 0, 0, -1, -1],
    [0, -1, -2, 0, 0, -1, -1],
    [1, 0, -1, 1, 1, 0, 0],
    [1, 0, -1, 1, 1, 0, 0],
]


@pytest.mark.parametrize("bpe", ["My father bought a red car .", "My fa@@ ther bou@@ g@@ ht a red car ."])
def test_table1_relative_depths_from_conllu(bpe):
    sent = next(read_conllu(io.StringIO(FIG2_CONLLU), path="<fig2>"))
    words, heads, _ = align_sentence(sent, bpe, "<fig2>")
    # a longer second sentence makes the first one left-padded: depths must move with the tokens
    w2, h2, _ = align_sentence(sentence_from_heads(["w"] * 12, [0] + [1] * 11), " ".join(["w"] * 12), "<other>")
    d = Dictionary()
    toks = [[d.add_symbol(f"a{i}") for i in range(len(words))] + [d.eos()],
            [d.add_symbol(f"b{i}") for i in range(len(w2))] + [d.eos()]]
    base = LanguagePairDataset(TensorList(toks), np.array([len(t) for t in toks]), d, left_pad_source=True)
    ds = SyntaxLanguagePairDataset(base, SyntaxRequest(source=frozenset({"depths"}), inputs=frozenset({"src_depths"})),
                                   SideSyntax(TensorList([words, w2]), TensorList([heads, h2]), name="src"))
    batch = ds.collater([ds[0], ds[1]])
    row = batch["id"].tolist().index(0)
    depths = batch["net_input"]["src_depths"]
    assert torch.equal(batch["syntax"]["src_depths"], depths)
    buckets = depth_buckets(depths, max_distance=10)[row] - 10  # no clipping: the raw distances
    width = depths.size(1)
    pad = width - len(words) - 1
    first = [pad + words.index(w) for w in range(1, 8)]  # first subword of each word, in batch coordinates
    got = buckets[first][:, first].tolist()
    assert got == TABLE1
    # every subword of a word carries the word's depth; EOS (last column) has depth 0 like the root
    assert depths[row, pad:].tolist() == [[2, 1, 0, 2, 2, 1, 1][w - 1] for w in words] + [0]
    # clipping at l = 1 (Eq. 19-20): bucket = clip(dist, 1) + 1
    assert (depth_buckets(depths, 1)[row][first][:, first] - 1).tolist() == \
        [[max(-1, min(1, x)) for x in r] for r in TABLE1]


def test_linear_buckets_are_clipped_offsets():
    b = linear_buckets(4, 4, 2) - 2
    assert b.tolist() == [[0, 1, 2, 2], [-1, 0, 1, 2], [-2, -1, 0, 1], [-2, -2, -1, 0]]
    # incremental decoding: the last query of 5 positions
    assert (linear_buckets(1, 5, 2) - 2).tolist() == [[-2, -2, -2, -1, 0]]


def _attention(kinds, terms, parse=False, impl="buckets", seed=0, heads=4, dim=16):
    torch.manual_seed(seed)
    keys, values = "key" in terms, "value" in terms
    rel = {kind: RelativePositionTerms(dim // heads, clip, keys, values, impl) for kind, clip in kinds.items()}
    att = SyntaxSelfAttention(dim, heads, parse_head=BiaffineParseHead(dim // heads) if parse else None,
                              relative=rel)
    return att.eval()


def _naive(att, x, depths, pad_mask):
    """Eq. 21-22 by explicit loops over (i, j): the paper's formulas, no buckets."""
    T, B, C = x.shape
    H, d = att.num_heads, att.head_dim
    q = att.q_proj(x).view(T, B, H, d)
    k = att.k_proj(x).view(T, B, H, d)
    v = att.v_proj(x).view(T, B, H, d)

    def plus_relative(vec, table_name, b, i, j):  # vec + a_ij (+ b_ij): one clipped vector per kind
        for kind, terms in att.relative.items():
            table = getattr(terms, table_name)
            if table is not None:
                dist = j - i if kind == "linear" else int(depths[b, j] - depths[b, i])
                c = terms.max_distance
                vec = vec + table[max(-c, min(c, dist)) + c]
        return vec

    out = torch.zeros(T, B, H, d)
    probs = torch.zeros(B, H, T, T)
    for b in range(B):
        for h in range(H):
            e = torch.empty(T, T)
            for i in range(T):
                for j in range(T):
                    e[i, j] = q[i, b, h] @ plus_relative(k[j, b, h], "key_table", b, i, j) / d ** 0.5
            a = e.masked_fill(pad_mask[b].view(1, T), float("-inf")).softmax(-1)
            probs[b, h] = a
            for i in range(T):
                for j in range(T):
                    out[i, b, h] += a[i, j] * plus_relative(v[j, b, h], "value_table", b, i, j)
    return att.out_proj(out.reshape(T, B, C)), probs


def _inputs(seed=1, T=6, B=3):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(T, B, 16, generator=g)
    depths = torch.randint(0, 5, (B, T), generator=g)
    pad_mask = torch.zeros(B, T, dtype=torch.bool)
    pad_mask[1, :2] = True  # left padding
    pad_mask[2, :4] = True
    depths[pad_mask] = 0
    return x, depths, pad_mask


KINDS = [{"linear": 2}, {"dependency": 2}, {"linear": 2, "dependency": 1}]


@pytest.mark.parametrize("kinds", KINDS, ids=["rel", "dep", "dep+rel"])
@pytest.mark.parametrize("terms", ["key+value", "key", "value"])
def test_buckets_equal_the_equations(kinds, terms):
    x, depths, pad_mask = _inputs()
    att = _attention(kinds, terms)
    syntax = AttentionInputs(dependency_buckets=depth_buckets(depths, kinds.get("dependency", 1)))
    out, w, _ = att(x, key_padding_mask=pad_mask, syntax=syntax, need_head_weights=True)
    want_out, want_probs = _naive(att, x, depths, pad_mask)
    real = ~pad_mask.t()  # padded query rows are not used by the model
    assert torch.allclose(w.transpose(0, 1), want_probs, atol=1e-5)
    assert torch.allclose(out[real], want_out[real], atol=1e-5)


@pytest.mark.parametrize("kinds", KINDS, ids=["rel", "dep", "dep+rel"])
def test_buckets_equal_materialised_scores_outputs_and_gradients(kinds):
    x, depths, pad_mask = _inputs(seed=2, T=9, B=4)
    outs = {}
    for impl in ("buckets", "materialised"):
        att = _attention(kinds, "key+value", impl=impl, seed=5)
        syntax = AttentionInputs(dependency_buckets=depth_buckets(depths, kinds.get("dependency", 1)))
        xx = x.clone().requires_grad_()
        scores, _ = att(xx, key_padding_mask=pad_mask, syntax=syntax, before_softmax=True)
        out, _, _ = att(xx, key_padding_mask=pad_mask, syntax=syntax)
        out[~pad_mask.t()].pow(2).sum().backward()
        grads = [p.grad.clone() for p in att.parameters()] + [xx.grad]
        outs[impl] = (scores.masked_fill(torch.isinf(scores), 0), out[~pad_mask.t()], grads)
    a, b = outs["buckets"], outs["materialised"]
    assert torch.allclose(a[0], b[0], atol=1e-5) and torch.allclose(a[1], b[1], atol=1e-5)
    for ga, gb in zip(a[2], b[2]):
        assert torch.allclose(ga, gb, atol=1e-4)


def test_relative_terms_change_the_output():
    """Guard against a test that cannot fail: zeroing the tables changes the result."""
    x, depths, pad_mask = _inputs()
    att = _attention({"linear": 2, "dependency": 2}, "key+value")
    syntax = AttentionInputs(dependency_buckets=depth_buckets(depths, 2))
    out, _, _ = att(x, key_padding_mask=pad_mask, syntax=syntax)
    with torch.no_grad():
        att.relative["dependency"].value_table.zero_()
    out2, _, _ = att(x, key_padding_mask=pad_mask, syntax=syntax)
    assert not torch.allclose(out, out2, atol=1e-4)


def test_parse_head_composes_with_relative_positions():
    """DBSA + relative in one layer: relative terms act on the ordinary heads, Eq. 14 stays exact."""
    x, depths, pad_mask = _inputs()
    att = _attention({"dependency": 2}, "key+value", parse=True)
    syntax = AttentionInputs(dependency_buckets=depth_buckets(depths, 2))
    out, w, logp = att(x, key_padding_mask=pad_mask, syntax=syntax, need_head_weights=True)
    k = att.k_proj(x).view(6, 3, 4, 4).permute(1, 2, 0, 3)
    q = att.q_proj(x).view(6, 3, 4, 4).permute(1, 2, 0, 3)
    parse = att.parse_head(q[:, -1], k[:, -1]).masked_fill(pad_mask.view(3, 1, 6), float("-inf")).softmax(-1)
    assert torch.allclose(logp.exp(), parse, atol=1e-6)
    plain = _attention({"dependency": 2}, "key+value", parse=True)
    plain.load_state_dict(att.state_dict())
    with torch.no_grad():
        plain.relative["dependency"].key_table.zero_()
    _, w0, _ = plain(x, key_padding_mask=pad_mask, syntax=syntax, need_head_weights=True)
    assert torch.allclose(w0[-1], w[-1]) and not torch.allclose(w0[0], w[0])


def test_dependency_terms_without_depths_fail_clearly():
    x, _, pad_mask = _inputs()
    att = _attention({"dependency": 2}, "key")
    with pytest.raises(RuntimeError, match="src_depths"):
        att(x, key_padding_mask=pad_mask)


def test_presets_layers_and_needs():
    from fairseq.modules.transformer_layer import TransformerEncoderLayerBase

    rel, _ = tiny_model("transformer_rel_tiny")
    assert all(set(layer.self_attn.relative) == {"linear"} for layer in rel.encoder.layers)
    assert rel.syntax_needs().inputs == set() and rel.syntax_needs().source == set()
    dep, _ = tiny_model("transformer_dep_tiny")
    assert dep.syntax_needs().source == {"depths"} and dep.syntax_needs().inputs == {"src_depths"}
    both, _ = tiny_model("transformer_dep_rel_tiny", rel_encoder_layers="2", rel_dep_terms="key")
    assert type(both.encoder.layers[0]) is TransformerEncoderLayerBase  # no mechanism: fairseq's layer
    terms = both.encoder.layers[1].self_attn.relative
    assert set(terms) == {"linear", "dependency"} and terms["dependency"].value_table is None
    assert terms["linear"].max_distance == 2 and terms["dependency"].max_distance == 2
    # Shaw et al.'s decoder: linear relative positions in every decoder self-attention (rel, dep+rel), none in dep
    for model in (rel, both):
        assert all(set(layer.self_attn.relative) == {"linear"} for layer in model.decoder.layers)
        assert all(layer.self_attn.relative["linear"].max_distance == 2 for layer in model.decoder.layers)
    assert all(type(layer.self_attn).__name__ == "MultiheadAttention" for layer in dep.decoder.layers)
    noabs, _ = tiny_model("transformer_rel_tiny", rel_no_absolute_positions=True)
    assert noabs.encoder.embed_positions is None and noabs.decoder.embed_positions is not None
    with pytest.raises(ValueError, match="out of range"):
        tiny_model("transformer_rel_tiny", rel_encoder_layers="3")


def test_model_uses_the_depths():
    torch.manual_seed(0)
    model, d = tiny_model("transformer_dep_rel_tiny")
    pad, eos = d.pad(), d.eos()
    src = torch.tensor([[pad, pad, 5, 6, 7, eos], [4, 5, 6, 7, 8, eos]])
    prev = torch.tensor([[eos, 9, 10], [eos, 14, 15]])
    lengths = src.ne(pad).sum(1)
    depths = torch.tensor([[0, 0, 1, 0, 1, 0], [1, 2, 0, 1, 1, 0]])
    with torch.no_grad():
        a, _ = model(src, lengths, prev, src_depths=depths)
        b, _ = model(src, lengths, prev, src_depths=depths.flip(1))
        with pytest.raises(ValueError, match="src_depths"):
            model(src, lengths, prev)
    assert not torch.allclose(a, b)


def test_decoder_relative_positions_incremental_and_beam_reorder():
    """Shaw et al.'s decoder self-attention: step-by-step decoding = the full forward, also after a beam
    reorder of the cached keys; the relative tables are used (zeroing them changes the output)."""
    torch.manual_seed(0)
    model, d = tiny_model("transformer_rel_tiny")
    pad, eos = d.pad(), d.eos()
    src = torch.tensor([[4, 5, 6, 7, eos], [4, 5, 6, 7, eos]])  # two hypotheses of one sentence in a beam
    prev = torch.tensor([[eos, 9, 10, 11, 12, 13, 14], [eos, 15, 16, 17, 18, 19, 20]])
    lengths = src.ne(pad).sum(1)
    with torch.no_grad():
        full, _ = model(src, lengths, prev)
        swapped, _ = model(src.flip(0), lengths.flip(0), prev.flip(0))
        enc = model.encoder(src, src_lengths=lengths)
        state = {}
        for t in range(prev.size(1)):
            if t == 4:  # beam search reorders hypotheses: swap the two rows of every cache
                order = torch.tensor([1, 0])
                model.decoder.reorder_incremental_state_scripting(state, order)
                enc = model.encoder.reorder_encoder_out(enc, order)
                prev, full = prev.flip(0), swapped
            step, _ = model.decoder(prev[:, : t + 1], encoder_out=enc, incremental_state=state)
            assert torch.allclose(step[:, -1], full[:, t], atol=1e-5), t
        for layer in model.decoder.layers:
            layer.self_attn.relative["linear"].key_table.zero_()
            layer.self_attn.relative["linear"].value_table.zero_()
        plain, _ = model(src.flip(0), lengths.flip(0), prev)
    assert not torch.allclose(plain, swapped, atol=1e-4)
