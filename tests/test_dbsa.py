"""DBSA (Deguchi et al. 2019): bi-affine parse head, decoder supervision, loss, incremental decoding."""

import numpy as np
import pytest
import torch

from fairseq_syntax.criterions.dependency_loss import parse_head_nll, supervised_positions
from fairseq_syntax.data.trees.conllu import sentence_from_heads
from fairseq_syntax.data.alignment.parent_strategies import subword_parents
from fairseq_syntax.data.alignment.subword_align import align_sentence
from fairseq_syntax.modules.dependency_attention import BiaffineParseHead
from fairseq_syntax.modules.syntax_attention import SyntaxSelfAttention
from helpers import tiny_model


@pytest.mark.parametrize("bias", ["query", "key"])
def test_biaffine_scores_by_hand(bias):
    torch.manual_seed(0)
    att = SyntaxSelfAttention(4, 2, parse_head=BiaffineParseHead(2, bias))
    with torch.no_grad():
        att.parse_head.u1.copy_(torch.tensor([[1.0, 2.0], [0.0, -1.0]]))
        att.parse_head.u.copy_(torch.tensor([0.5, -2.0]))
    q = torch.tensor([[1.0, 0.0], [2.0, 1.0], [0.0, 3.0]])  # T = 3 queries
    k = torch.tensor([[1.0, 1.0], [0.0, 2.0], [-1.0, 0.5]])  # S = 3 keys
    got = att.parse_head(q, k)
    U1, u = att.parse_head.u1.detach(), att.parse_head.u.detach()
    want = torch.zeros(3, 3)
    for t in range(3):
        for s in range(3):
            bilinear = sum(q[t, a] * U1[a, b] * k[s, b] for a in range(2) for b in range(2))
            prior = (q[t] @ u) if bias == "query" else (k[s] @ u)  # Eq. 14: Q U2, U2 = (u ... u)
            want[t, s] = bilinear + prior
    # e.g. t=0, s=1: q0 U1 k1 = [1,2].[0,2] = 4; q0.u = 0.5
    assert want[0, 1] == pytest.approx(4.0 + (0.5 if bias == "query" else -4.0))
    assert torch.allclose(got, want, atol=1e-6)
    if bias == "query":  # the printed Eq. 14 bias is constant per row: the softmax ignores it
        assert torch.allclose(got.softmax(-1), (got - (q @ u).unsqueeze(-1)).softmax(-1), atol=1e-6)


def test_parse_head_replaces_the_last_head():
    torch.manual_seed(1)
    att = SyntaxSelfAttention(8, 2, parse_head=BiaffineParseHead(4)).eval()
    x = torch.randn(5, 3, 8)  # T x B x C
    out, w, logp = att(x, need_head_weights=True)
    assert out.shape == (5, 3, 8) and w.shape == (2, 3, 5, 5)
    q = att.q_proj(x).view(5, 3, 2, 4).permute(1, 2, 0, 3)
    k = att.k_proj(x).view(5, 3, 2, 4).permute(1, 2, 0, 3)
    v = att.v_proj(x).view(5, 3, 2, 4).permute(1, 2, 0, 3)
    ordinary = torch.softmax(q[:, 0] * att.scaling @ k[:, 0].transpose(1, 2), -1)
    parse = torch.softmax(att.parse_head(q[:, 1], k[:, 1]), -1)
    assert torch.allclose(w[0], ordinary, atol=1e-6) and torch.allclose(w[1], parse, atol=1e-6)
    assert logp.dtype == torch.float32 and torch.allclose(logp.exp(), parse, atol=1e-6)
    heads = torch.cat([ordinary @ v[:, 0], parse @ v[:, 1]], dim=-1)  # [M_1; M_parse] (Eq. 16-17)
    assert torch.allclose(out, att.out_proj(heads.transpose(0, 1)), atol=1e-5)


FIG3 = ["Objects", "and", "methods", "of", "surveillance", "are", "explained", "."]
# Stanford-style basic dependencies (Fig. 3a): Objects <-nsubjpass- explained, and/methods/of -> Objects,
# surveillance -> of, are <-auxpass- explained, . -> explained
FIG3_HEADS = [7, 1, 1, 1, 4, 7, 0, 7]


def test_fig3_decoder_supervision_in_decoder_input_coordinates():
    w, h, _ = align_sentence(sentence_from_heads(FIG3, FIG3_HEADS), " ".join(FIG3), "<fig3>")
    parents = subword_parents(np.array(w), np.array(h), "chain")
    # decoder input: position 0 = EOS (starts decoding), position j = word j
    dec = torch.tensor([[0] + (parents + 1).tolist()])
    real = torch.tensor([[False] + [True] * len(FIG3)])
    sup = supervised_positions(dec, real, causal=True)[0].tolist()
    assert dec[0].tolist() == [0, 7, 1, 1, 1, 4, 7, 7, 7]
    # masked: Objects -> explained and are -> explained point to a later word; the root's self-loop stays
    assert sup == [False, False, True, True, True, True, False, True, True]
    # the encoder side (not causal) supervises every word
    enc_sup = supervised_positions(torch.tensor([parents.tolist() + [8]]),
                                   torch.tensor([[True] * 8 + [False]]), causal=False)[0]
    assert enc_sup.tolist() == [True] * 8 + [False]


def test_fully_masked_row_gives_finite_loss_and_gradient():
    torch.manual_seed(0)
    scores = torch.randn(2, 4, 4, requires_grad=True)
    causal = torch.full((4, 4), float("-inf")).triu(1)
    logp = torch.log_softmax(scores + causal, -1)  # -inf at the masked positions
    # row 0: every real token's gold parent is later (masked) or it is padding (-1)
    # row 1: position 1 -> 2 and 2 -> 3 are masked, position 3 -> 3 (root self-loop) is supervised
    parents = torch.tensor([[0, 2, 3, -1], [0, 2, 3, 3]])
    supervised = torch.tensor([[False, True, True, False], [False, True, True, True]])
    nll, n = parse_head_nll(logp, parents, supervised, causal=True)
    assert n.item() == 1
    assert torch.isfinite(nll) and nll.item() == pytest.approx(-logp[1, 3, 3].item(), rel=1e-5)
    nll.backward()
    assert torch.isfinite(scores.grad).all()
    assert scores.grad[0].abs().sum() == 0  # the fully masked row contributes nothing


def test_incremental_decoding_equals_full_forward():
    torch.manual_seed(0)
    model, d = tiny_model("transformer_dbsa_tiny")
    pad, eos = d.pad(), d.eos()
    src = torch.tensor([[pad, pad, 5, 6, 7, eos], [4, 5, 6, 7, 8, eos]])
    prev = torch.tensor([[eos, 9, 10, 11, 12, 13], [eos, 14, 15, 16, 17, 18]])
    lengths = src.ne(pad).sum(1)
    with torch.no_grad():
        logits, extra = model(src, lengths, prev)
        full_parse = extra["parse_logprobs"][0].exp()
        assert extra["encoder_parse_logprobs"][0].shape == (2, 6, 6)
        enc = model.encoder(src, src_lengths=lengths)
        state = {}
        for t in range(prev.size(1)):
            step, step_extra = model.decoder(prev[:, : t + 1], encoder_out=enc, incremental_state=state)
            parse_row = step_extra["parse_logprobs"][0].exp()
            assert torch.allclose(step[:, -1], logits[:, t], atol=1e-5)
            assert torch.allclose(parse_row[:, 0], full_parse[:, t, : t + 1], atol=1e-5)
            assert torch.all(full_parse[:, t, t + 1:] == 0)  # future-masked in the full forward


def test_syntax_needs_of_presets():
    from fairseq_syntax.data.datasets.syntax_request import SyntaxNeeds

    assert tiny_model("transformer_dbsa_tiny")[0].syntax_needs() == SyntaxNeeds(
        source={"parents"}, target={"parents"}, inputs=set(), strategy="chain", target_strategy="chain",
        target_coordinates="target")
    needs = tiny_model("transformer_sisa_tiny")[0].syntax_needs()
    assert needs.source == {"parents"} and needs.target == set() and needs.strategy == "first"


@pytest.mark.parametrize("strategy", ["chain", "first"])
@pytest.mark.parametrize("offset", [0, 1, 3])
def test_gold_parents_map_back_to_gold_word_heads(strategy, offset):
    import torch

    from fairseq_syntax.data.trees.decoding import induce_heads

    words = ["a", "Fingerprint", "input", "is", "required", "."]
    heads = [2, 3, 5, 5, 0, 5]
    w, h, _ = align_sentence(sentence_from_heads(words, heads), "a Fing@@ er@@ print in@@ put is re@@ quired .", "x")
    pos = subword_parents(np.array(w), np.array(h), strategy) + offset  # model coordinates
    # a head that puts all its mass on the gold parents gives the gold tree, decoded either way
    logp = np.full((len(w) + offset + 1, len(w) + offset + 1), np.log(1e-6))
    logp[np.arange(len(w)) + offset, pos.astype(int)] = 0.0
    assert induce_heads(torch.tensor(logp), w, strategy, offset, "argmax") == heads
    assert induce_heads(torch.tensor(logp), w, strategy, offset, "mst") == heads


def test_induce_parses_command(data_bin, tmp_path):
    import os

    from helpers import run, train_cmd

    from fairseq_syntax.cli.induce_parses import main

    save = str(tmp_path / "ck")
    run(train_cmd(data_bin, save, updates=2, arch=["--arch", "transformer_dbsa_tiny"],
                  extra=["--criterion", "label_smoothed_cross_entropy_with_dependency"]))
    report = main([data_bin, "--path", os.path.join(save, "checkpoint_last.pt"), "--split", "test",
                   "--output-prefix", str(tmp_path / "pred" / "test")])
    assert set(report) == {"src", "tgt", "tgt_attainable"} and all(0 <= v <= 1 for v in report.values())
    from fairseq_syntax.data.trees.conllu import read_conllu

    pred = list(read_conllu(str(tmp_path / "pred" / "test.src.conllu")))  # the reader checks every tree
    gold = open(os.path.join(data_bin, "work", "test.tok.src")).read().splitlines()
    assert [" ".join(s.words) for s in pred] == gold


@pytest.mark.parametrize("normalization", ["arcs", "supervised", "sum"])
def test_parse_loss_normalizations_by_hand(normalization):
    """fairseq divides the loss by the target tokens T. arcs (the authors' code): lambda * sum * T / (all gold
    arcs of the side); supervised: ... / (supervised arcs); sum (the papers' text): lambda * sum."""
    import argparse

    from fairseq_syntax.criterions.label_smoothed_cross_entropy_with_dependency import (
        LabelSmoothedCrossEntropyWithDependencyCriterion,
    )

    torch.manual_seed(0)
    model, d = tiny_model("transformer_dbsa_tiny")
    pad, eos = d.pad(), d.eos()
    src = torch.tensor([[pad, 5, 6, 7, eos], [4, 5, 6, 7, eos]])
    target = torch.tensor([[9, 10, 11, eos, pad], [12, 13, 14, 15, eos]])
    prev = torch.tensor([[eos, 9, 10, 11, pad], [eos, 12, 13, 14, 15]])
    syntax = {  # target coordinates; row 0: tokens 0 and 1 point to the later token 2 (not supervised)
        "src_parents": torch.tensor([[-1, 2, 2, 2, 4], [1, 1, 1, 1, 4]]),
        "src_supervised": torch.tensor([[False, True, True, True, False], [True, True, True, True, False]]),
        "tgt_parents": torch.tensor([[2, 2, 2, 3, -1], [0, 0, 1, 0, 4]]),
        "tgt_supervised": torch.tensor([[True, True, True, False, False], [True, True, True, True, False]]),
    }
    sample = {"net_input": {"src_tokens": src, "src_lengths": src.ne(pad).sum(1), "prev_output_tokens": prev},
              "target": target, "ntokens": int(target.ne(pad).sum()), "syntax": syntax}
    task = argparse.Namespace(target_dictionary=d)
    crit = LabelSmoothedCrossEntropyWithDependencyCriterion(task, False, 0.0, dependency_lambda_enc=0.5,
                                                            dependency_lambda_dec=2.0,
                                                            dependency_normalization=normalization)
    plain = LabelSmoothedCrossEntropyWithDependencyCriterion(task, False, 0.0, dependency_lambda_enc=0.0,
                                                             dependency_lambda_dec=0.0)
    model.train()
    loss, size, log = crit(model, sample)
    ce, _, _ = plain(model, sample)
    T = sample["ntokens"]
    assert size == T == 9
    s_enc, s_dec = log["dep_enc_loss"], log["dep_dec_loss"]
    assert log["dep_enc_tokens"] == 7 and log["dep_dec_tokens"] == 5  # supervised: 7 source, 1 + 4 target
    n_enc, n_dec = {"arcs": (7, 7), "supervised": (7, 5), "sum": (None, None)}[normalization]
    if normalization == "sum":
        want = ce + 0.5 * s_enc + 2.0 * s_dec
    else:
        want = ce + 0.5 * s_enc * T / n_enc + 2.0 * s_dec * T / n_dec
    assert loss.item() == pytest.approx(want.item(), rel=1e-5)
