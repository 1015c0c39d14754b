"""Which target token each decoder parse row (D) and cross-attention row (C) stands for.

The authors' DBSA code (de9uch1/dbsa) supervises decoder row i, the state that *predicts* target token i
(its input is token i - 1), with the state that predicts the parent: target coordinates. fairseq's
encoder-decoder attention row i is the same state, so SyncAttn's D and C E C^T compare the same tokens.
"""
import numpy as np
import pytest
import torch

from fairseq_syntax.criterions.dependency_loss import supervised_positions
from fairseq_syntax.criterions.sync_loss import synchronous_attention_loss
from fairseq_syntax.data.trees.conllu import sentence_from_heads
from fairseq_syntax.data.alignment.parent_strategies import subword_parents
from fairseq_syntax.data.alignment.subword_align import align_sentence
from fairseq_syntax.modules.dependency_attention import BiaffineParseHead
from helpers import tiny_model

# Deguchi et al. 2019, Fig. 3: "Objects and methods of surveillance are explained ."
FIG3 = ["Objects", "and", "methods", "of", "surveillance", "are", "explained", "."]
FIG3_HEADS = [7, 1, 1, 1, 4, 7, 0, 7]


def test_fig3_rows_in_target_coordinates():
    w, h, _ = align_sentence(sentence_from_heads(FIG3, FIG3_HEADS), " ".join(FIG3), "<fig3>")
    parents = subword_parents(np.array(w), np.array(h), "chain")
    # target coordinates: position j = word j (what decoder state j predicts), EOS last and its own parent
    tgt = torch.tensor([parents.tolist() + [8]])
    assert tgt[0].tolist() == [6, 0, 0, 0, 3, 6, 6, 6, 8]
    real = torch.tensor([[True] * 8 + [False]])
    sup = supervised_positions(tgt, real, causal=True)[0].tolist()
    # row 0 ("Objects") and row 5 ("are") point to the later "explained": masked; the root's self-loop
    # (row 6) is supervised: the state that predicts "explained" attends to itself
    assert sup == [False, True, True, True, True, False, True, True, False]


def _batch(d):
    pad, eos = d.pad(), d.eos()
    src = torch.tensor([[pad, 5, 6, 7, eos], [4, 5, 6, 7, eos]])
    target = torch.tensor([[9, 10, 11, eos, pad], [12, 13, 14, 15, eos]])
    prev = torch.tensor([[eos, 9, 10, 11, pad], [eos, 12, 13, 14, 15]])
    return src, target, prev


def test_row_j_of_d_and_c_is_the_state_that_predicts_target_j():
    """Step j of incremental decoding, fed target[:j], predicts target[j]; its parse row and its
    cross-attention row are row j of D and of C in the full forward."""
    torch.manual_seed(0)
    model, d = tiny_model("transformer_syncattn_tiny")
    src, target, prev = _batch(d)
    lengths = src.ne(d.pad()).sum(1)
    with torch.no_grad():
        logits, extra = model(src, lengths, prev, alignment_layer=model.sync_layer - 1)
        enc = model.encoder(src, src_lengths=lengths)
        state = {}
        # the decoder input at step j: EOS, target[0], ..., target[j - 1]
        assert torch.equal(prev[:, 1:], target[:, :-1].masked_fill(target[:, :-1] == d.eos(), d.pad()))
        for j in range(prev.size(1)):
            step, step_extra = model.decoder(prev[:, : j + 1], encoder_out=enc, incremental_state=state,
                                             alignment_layer=model.sync_layer - 1)
            r = prev[:, j].ne(d.pad())  # sentences that have a decoder input at step j
            assert torch.allclose(step[r, -1], logits[r, j], atol=1e-5)  # scores for target[j]
            assert torch.allclose(step_extra["parse_logprobs"][0][r, 0].exp(),
                                  extra["parse_logprobs"][0][r, j, : j + 1].exp(), atol=1e-5)
            assert torch.allclose(step_extra["attn"][0][r, 0], extra["attn"][0][r, j], atol=1e-5)
    # and the task collates row j's gold parent in the same coordinates
    assert model.syntax_needs().target_coordinates == "target"
    assert tiny_model("transformer_syncattn_tiny", dbsa_decoder_rows="input")[0].syntax_needs() \
        .target_coordinates == "decoder_input"


def test_sync_target_is_the_gold_target_tree_only_in_target_coordinates():
    """Same tree on both sides, aligned 1:1 (target j <-> source j), C and E one-hot: the rows of
    softmax(mask(C E C^T)) peak on the gold target parents in target coordinates, and L_sync against the
    gold D is smallest there; the decoder-input pairing of D (one position later) is off by one."""
    heads = [2, 0, 2, 3]  # 1-based word heads of a 4-word sentence, word 2 the root
    n = len(heads)
    parents = [h - 1 if h else i for i, h in enumerate(heads)]  # subword = word
    E = torch.zeros(1, n + 1, n + 1)  # source: n words + EOS (its own parent)
    for i, p in enumerate(parents + [n]):
        E[0, i, p] = 1.0
    C = torch.eye(n + 1).unsqueeze(0)  # decoder row j aligns target j (EOS row to source EOS)
    real = torch.ones(1, n + 1, dtype=torch.bool)
    mapped = (C @ E @ C.transpose(1, 2))[0]
    target_coords = torch.tensor(parents + [n])
    future = torch.arange(n + 1).unsqueeze(0) > torch.arange(n + 1).unsqueeze(1)
    d_prime = mapped.masked_fill(future, float("-inf")).softmax(-1)
    visible = target_coords <= torch.arange(n + 1)
    assert torch.equal(d_prime.argmax(-1)[visible], target_coords[visible])

    def gold_d(par):
        D = torch.zeros(1, n + 1, n + 1)
        for j, p in enumerate(par):
            D[0, j, min(p, j)] = 1.0  # future parents are masked: the row keeps its mass on itself
        return D

    # decoder-input coordinates: row j + 1 holds token j, parent p at p + 1, position 0 the start symbol
    input_coords = [0] + [p + 1 for p in parents]
    right, _ = synchronous_attention_loss(E, gold_d(target_coords.tolist()), C, real)
    shifted, _ = synchronous_attention_loss(E, gold_d(input_coords), C, real)
    assert right < shifted


def test_2021_form_is_scaled_without_bias():
    torch.manual_seed(0)
    q, k = torch.randn(3, 4), torch.randn(5, 4)
    head = BiaffineParseHead(4, "none", scaled=True)
    assert head.u is None and [n for n, _ in head.named_parameters()] == ["u1"]
    assert torch.allclose(head(q, k), q @ head.u1 @ k.t() / 2.0, atol=1e-6)  # sqrt(d_k) = 2
    model, _ = tiny_model("transformer_syncattn_tiny")
    for side in (model.encoder, model.decoder):
        parse = side.layers[side.dbsa_layer - 1].self_attn.parse_head
        assert parse.bias == "none" and parse.scaling == pytest.approx(8 ** -0.5)  # d_head 8 in the tiny preset
    dbsa, _ = tiny_model("transformer_dbsa_tiny")
    parse = dbsa.encoder.layers[dbsa.encoder.dbsa_layer - 1].self_attn.parse_head
    assert parse.bias == "query" and parse.scaling == 1.0  # the 2019 form stays the DBSA presets'
