"""PASCAL (Bugliarello & Okazaki 2020) parent-scaled heads, parent ignoring, and the S&H label embeddings."""
import math

import numpy as np
import pytest
import torch
from fairseq.data import Dictionary, LanguagePairDataset

from fairseq_syntax.data.trees.conllu import sentence_from_heads
from fairseq_syntax.data.alignment.parent_strategies import subword_parents
from fairseq_syntax.data.alignment.subword_align import align_sentence
from fairseq_syntax.data.datasets.syntax_dataset import SideSyntax, SyntaxLanguagePairDataset, SyntaxRequest
from fairseq_syntax.data.alignment.syntax_io import build_label_dictionary
from fairseq_syntax.modules.parent_scaled_attention import ParentScaledHeads, parent_gaussian
from fairseq_syntax.modules.syntax_attention import AttentionInputs, SyntaxSelfAttention
from helpers import TensorList, tiny_model

# unequal lengths, BPE splits (x.5 middles), different roots
SENTS = [
    (["The", "monkey", "eats", "a", "banana"], [2, 3, 0, 5, 3], "The mon@@ key eats a ban@@ an@@ a"),
    (["Fingerprints", "help"], [2, 0], "Fing@@ er@@ prints help"),
    (["it", "rains", "today", "in", "Kyoto", "again"], [2, 0, 2, 5, 2, 2], "it ra@@ ins today in Ky@@ oto again"),
]


def _batch(fields=("parents",), inputs=("src_parents",)):
    d = Dictionary()
    toks, words, heads, labels = [], [], [], []
    for s, (ws, hs, bpe) in enumerate(SENTS):
        w, h, lab = align_sentence(sentence_from_heads(ws, hs, [f"rel{x}" for x in hs]), bpe, "<test>")
        toks.append([d.add_symbol(f"s{s}_{i}") for i in range(len(w))] + [d.eos()])
        words.append(w)
        heads.append(h)
        labels.append(lab)
    ld = build_label_dictionary([x for lab in labels for x in lab])
    base = LanguagePairDataset(TensorList(toks), np.array([len(t) for t in toks]), d, left_pad_source=True)
    req = SyntaxRequest(strategy="middle", source=frozenset(fields), inputs=frozenset(inputs))
    side = SideSyntax(TensorList(words), TensorList(heads), TensorList([[ld.index(x) for x in lab] for lab in labels]), ld, "src")
    ds = SyntaxLanguagePairDataset(base, req, side)
    return ds.collater([ds[i] for i in range(len(SENTS))]), words, heads, d, ld


def test_middle_parents_in_batch_coordinates():
    batch, words, heads, d, _ = _batch()
    parents = batch["net_input"]["src_parents"]
    assert parents.dtype == torch.float64  # exact through fairseq's fp16 / bf16 casts of float32 tensors
    width = parents.size(1)
    for row, sid in enumerate(batch["id"].tolist()):
        n = len(words[sid])
        pad = width - n - 1
        want = subword_parents(np.array(words[sid]), np.array(heads[sid]), "middle") + pad
        assert parents[row, pad:pad + n].tolist() == want.tolist()
        assert parents[row, -1].item() == width - 1  # EOS is its own parent
        assert (parents[row, :pad] == -1).all()
    # "mon@@ key" (positions 1, 2 of sentence 0) is the parent of "The": middle 1.5
    row0 = batch["id"].tolist().index(0)
    pad0 = width - len(words[0]) - 1
    assert parents[row0, pad0].item() == pad0 + 1.5


def test_gaussian_is_the_normal_density():
    p = torch.tensor([[0.0, 2.5, 4.0]])
    d = parent_gaussian(p, 5, variance=2.0)
    for t in range(3):
        for j in range(5):
            want = math.exp(-((j - p[0, t].item()) ** 2) / 4.0) / math.sqrt(4.0 * math.pi)
            assert d[0, t, j].item() == pytest.approx(want, rel=1e-6)


@pytest.mark.parametrize("h_pascal", [1, 3])
def test_weights_land_on_the_right_sentence_head_and_token(h_pascal):
    """A left-padded batch of unequal lengths vs each sentence alone, unpadded, by direct evaluation."""
    torch.manual_seed(0)
    batch, words, heads, d, _ = _batch()
    parents = batch["net_input"]["src_parents"]
    tokens = batch["net_input"]["src_tokens"]
    H, C = 4, 16
    att = SyntaxSelfAttention(C, H, parent_scaling=ParentScaledHeads(h_pascal, variance=1.0)).eval()
    emb = torch.nn.Embedding(len(d), C)
    x = emb(tokens).transpose(0, 1)
    pad_mask = tokens.eq(d.pad())
    syntax = AttentionInputs(parents=parents)
    _, w, _ = att(x, key_padding_mask=pad_mask, syntax=syntax, need_head_weights=True)  # (H, B, T, S)
    width = tokens.size(1)
    for row, sid in enumerate(batch["id"].tolist()):
        n = len(words[sid]) + 1  # with EOS
        pad = width - n
        xs = x[pad:, row]  # this sentence alone, no padding
        p = list(subword_parents(np.array(words[sid]), np.array(heads[sid]), "middle")) + [n - 1]
        q = att.q_proj(xs).view(n, H, -1)
        k = att.k_proj(xs).view(n, H, -1)
        for h in range(H):
            s = (q[:, h] @ k[:, h].t()) / math.sqrt(C // H)
            if h < h_pascal:  # Eq. 5-6, evaluated entry by entry
                dens = torch.tensor([[math.exp(-((j - p[t]) ** 2) / 2) / math.sqrt(2 * math.pi) for j in range(n)]
                                     for t in range(n)])
                s = s * dens
            assert torch.allclose(w[h, row, pad:, pad:], s.softmax(-1), atol=1e-5), (sid, h)
            assert torch.all(w[h, row, pad:, :pad] == 0)


def test_too_many_pascal_heads_is_an_error():
    with pytest.raises(ValueError, match="parent-scaled heads"):
        SyntaxSelfAttention(16, 4, parent_scaling=ParentScaledHeads(5))
    from fairseq_syntax.modules.dependency_attention import BiaffineParseHead

    with pytest.raises(ValueError, match="parse head"):
        SyntaxSelfAttention(16, 4, parse_head=BiaffineParseHead(4), parent_scaling=ParentScaledHeads(4))


def test_parent_ignoring_rate_and_off_at_inference():
    torch.manual_seed(0)
    m = ParentScaledHeads(2, variance=1.0, ignore_prob=0.3)
    parents = torch.randint(0, 40, (500, 40)).float()
    m.train()
    w = m.weights(parents, 40)
    ignored = (w == 1.0).all(-1)
    assert ignored.float().mean().item() == pytest.approx(0.3, abs=0.01)  # 20,000 rows
    kept = w[~ignored]
    assert torch.allclose(kept, parent_gaussian(parents, 40, 1.0)[~ignored])
    m.eval()
    assert torch.equal(m.weights(parents, 40), parent_gaussian(parents, 40, 1.0))


def test_sh_embedding_layout():
    torch.manual_seed(0)
    ld = build_label_dictionary(["nsubj", "obj", "root"])
    model, d = tiny_model("transformer_sh_tiny", task_extra={"src_label_dict": ld})
    assert model.syntax_needs().inputs == {"src_labels"} and model.syntax_needs().source == {"labels"}
    enc = model.encoder
    pad, eos = d.pad(), d.eos()
    src = torch.tensor([[pad, 5, 6, eos], [4, 5, 6, eos]])
    labels = torch.tensor([[ld.pad(), ld.index("nsubj"), ld.index("root"), ld.eos()],
                           [ld.index("obj"), ld.index("nsubj"), ld.index("root"), ld.eos()]])
    out = enc(src, src_lengths=src.ne(pad).sum(1), src_labels=labels)
    emb = out["encoder_embedding"][0] / enc.embed_scale  # (B, T, 32) before scaling and positions
    tok = enc.embed_tokens(src)
    assert torch.allclose(emb[..., :22], tok[..., :22])  # first d - 10 dimensions: the token embedding
    assert torch.allclose(emb[..., 22:], enc.label_embedding(labels))  # last 10: the label embedding
    assert torch.equal(emb[0, 0, 22:], torch.zeros(10))  # padding label
    assert not torch.allclose(emb[1, 0, 22:], emb[1, 1, 22:])  # obj vs nsubj
    with pytest.raises(ValueError, match="label dictionary"):
        tiny_model("transformer_sh_tiny")


def test_pascal_presets_and_needs():
    model, _ = tiny_model("transformer_pascal_tiny")
    needs = model.syntax_needs()
    assert needs.inputs == {"src_parents"} and needs.strategy == "middle"
    att = model.encoder.layers[0].self_attn
    assert att.parent_scaling.num_heads == 2 and att.parent_scaling.variance == 1.0
    assert type(model.encoder.layers[1].self_attn).__name__ == "MultiheadAttention"
    # PASCAL encoder + DBSA decoder: middle parents for the source, chain for the target
    both, _ = tiny_model("transformer_pascal_tiny", dbsa_decoder_layer=1)
    assert both.syntax_needs().strategy == "middle" and both.syntax_needs().target_strategy == "chain"
    with pytest.raises(ValueError, match="one parent strategy per side"):
        tiny_model("transformer_pascal_tiny", dbsa_encoder_layer=1)


def test_parent_only_weights_table_7b():
    """Table 7b's "parent-only": weights only on the parent's positions (the authors' uniform window of
    width 0: |j - p_t| < 1), so a middle position x.5 covers both middle subwords of the parent word."""
    from fairseq_syntax.modules.parent_scaled_attention import parent_only

    p = torch.tensor([[2.0, 1.5, 0.0]])
    assert parent_only(p, 5)[0].tolist() == [[0, 0, 1, 0, 0], [0, 1, 1, 0, 0], [1, 0, 0, 0, 0]]
    m = ParentScaledHeads(2, weights="parent-only").eval()
    assert torch.equal(m.weights(p, 5), parent_only(p, 5))
    scores = torch.ones(1, 3, 3, 5)
    scaled = m.scale(scores, m.weights(p, 5))
    assert torch.equal(scaled[0, 0], parent_only(p, 5)[0]) and torch.equal(scaled[0, 2], scores[0, 2])
    model, _ = tiny_model("transformer_pascal_tiny", pascal_weights="parent-only")
    heads = model.encoder.layers[model.encoder.pascal_layer - 1].self_attn.parent_scaling
    assert heads.weight_function == "parent-only"
    assert tiny_model("transformer_pascal_tiny")[0].encoder.layers[0].self_attn.parent_scaling.weight_function == "gaussian"
    with pytest.raises(ValueError, match="parent weights"):
        ParentScaledHeads(2, weights="uniform")
