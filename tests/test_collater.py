"""Collater coordinates: left-padded sources, EOS, target / decoder-input coordinates (docs/design.md, "Index conventions")."""
import numpy as np
import pytest
import torch
from fairseq.data import Dictionary, LanguagePairDataset

from fairseq_syntax.data.trees.conllu import sentence_from_heads
from fairseq_syntax.data.alignment.parent_strategies import subword_depths, subword_parents
from fairseq_syntax.data.alignment.subword_align import align_sentence
from fairseq_syntax.data.datasets.syntax_dataset import SideSyntax, SyntaxLanguagePairDataset, SyntaxRequest
from fairseq_syntax.data.alignment.syntax_io import build_label_dictionary
from helpers import TensorList

SRC = [
    (["the", "dog", "barks"], [2, 3, 0], "the do@@ g bar@@ ks"),
    (["hi"], [0], "hi"),
    (["a", "Fingerprint", "input", "works", "well"], [2, 3, 4, 0, 4], "a Fing@@ er@@ print in@@ put works well"),
    (["no", "way"], [2, 0], "no way"),
]
TGT = [
    (["der", "Hund", "bellt"], [2, 3, 0], "der Hu@@ nd bel@@ lt"),
    (["hallo", "du"], [0, 1], "hal@@ lo du"),
    (["ein", "Fingerabdruck", "geht"], [2, 3, 0], "ein Fin@@ ger@@ ab@@ druck geht"),
    (["nein"], [0], "nein"),
]


def build(side_data, d, tag):
    """Token items with a unique symbol per (sentence, subword) + aligned syntax."""
    toks, words, heads, labels, aligned = [], [], [], [], []
    for s, (ws, hs, bpe) in enumerate(side_data):
        sent = sentence_from_heads(ws, hs, [f"rel{h}" for h in hs])
        w, h, lab = align_sentence(sent, bpe, "<test>")
        ids = [d.add_symbol(f"{tag}{s}_{i}") for i in range(len(w))]
        toks.append(ids + [d.eos()])
        words.append(w)
        heads.append(h)
        labels.append(lab)
        aligned.append((np.array(w), np.array(h)))
    return toks, words, heads, labels, aligned


def make_dataset(strategy, left_pad_source=True, left_pad_target=False, fields=("parents", "depths", "labels", "words"),
                 target_coordinates="target"):
    d = Dictionary()
    s_toks, s_w, s_h, s_l, s_al = build(SRC, d, "s")
    t_toks, t_w, t_h, t_l, t_al = build(TGT, d, "t")
    ld = build_label_dictionary([x for lab in s_l + t_l for x in lab])
    lab_ids = lambda L: [[ld.index(x) for x in lab] for lab in L]  # noqa: E731
    base = LanguagePairDataset(
        TensorList(s_toks), np.array([len(x) for x in s_toks]), d,
        TensorList(t_toks), np.array([len(x) for x in t_toks]), d,
        left_pad_source=left_pad_source, left_pad_target=left_pad_target,
    )
    req = SyntaxRequest(strategy=strategy, source=frozenset(fields), target=frozenset(fields), inputs=frozenset({"src_parents"}),
                        target_coordinates=target_coordinates)
    ds = SyntaxLanguagePairDataset(
        base, req,
        SideSyntax(TensorList(s_w), TensorList(s_h), TensorList(lab_ids(s_l)), ld, "src"),
        SideSyntax(TensorList(t_w), TensorList(t_h), TensorList(lab_ids(t_l)), ld, "tgt"),
    )
    return ds, d, ld, s_al, t_al, s_l, t_l


def sym_of(d, idx):
    return d[int(idx)]


@pytest.mark.parametrize("strategy", ["chain", "first", "middle"])
@pytest.mark.parametrize("left_pad_target", [False, True])
@pytest.mark.parametrize("coordinates", ["target", "decoder_input"])
def test_every_parent_points_at_the_right_token(strategy, left_pad_target, coordinates):
    ds, d, ld, s_al, t_al, s_l, t_l = make_dataset(strategy, left_pad_target=left_pad_target,
                                                   target_coordinates=coordinates)
    batch = ds.collater([ds[i] for i in range(len(ds))])
    src = batch["net_input"]["src_tokens"]
    prev = batch["net_input"]["prev_output_tokens"]
    syn = batch["syntax"]
    assert syn["src_parents"].shape == src.shape and syn["tgt_parents"].shape == prev.shape
    assert torch.equal(batch["net_input"]["src_parents"], syn["src_parents"])
    lengths = {len(SRC[i][2].split()) for i in range(len(SRC))}
    assert len(lengths) > 1  # unequal lengths: real left padding happens
    for b, sid in enumerate(batch["id"].tolist()):
        # ---- source: left-padded, EOS last, EOS is its own parent -------------
        w, h = s_al[sid]
        n = len(w)
        off = src.size(1) - (n + 1)
        assert (src[b, :off] == d.pad()).all() and (syn["src_parents"][b, :off] == -1).all()
        expect = subword_parents(w, h, strategy)
        depths = subword_depths(w, h)
        for i in range(n):
            p = off + i
            assert sym_of(d, src[b, p]) == f"s{sid}_{i}"
            par = syn["src_parents"][b, p].item()
            if strategy == "middle":
                assert par - off == pytest.approx(expect[i])
            else:
                assert sym_of(d, src[b, int(par)]) == f"s{sid}_{int(expect[i])}"
            assert syn["src_depths"][b, p].item() == depths[i]
            assert ld[syn["src_labels"][b, p].item()] == s_l[sid][i]
            assert syn["src_words"][b, p].item() == w[i]
            assert syn["src_supervised"][b, p]
        eos = off + n
        assert src[b, eos] == d.eos() and syn["src_parents"][b, eos] == eos and not syn["src_supervised"][b, eos]
        assert syn["src_labels"][b, eos] == ld.eos() and syn["src_depths"][b, eos] == 0
        w, h = t_al[sid]
        m = len(w)
        expect = subword_parents(w, h, strategy)
        toff = prev.size(1) - (m + 1) if left_pad_target else 0
        if coordinates == "decoder_input":
            # ---- target in decoder-input coordinates (position j holds y_j) -------
            assert prev[b, toff] == d.eos() and syn["tgt_parents"][b, toff] == toff
            assert not syn["tgt_supervised"][b, toff]
            for j in range(1, m + 1):
                p = toff + j
                assert sym_of(d, prev[b, p]) == f"t{sid}_{j - 1}"
                par = syn["tgt_parents"][b, p].item()
                if strategy == "middle":
                    assert par - toff - 1 == pytest.approx(expect[j - 1])
                else:
                    assert sym_of(d, prev[b, int(par)]) == f"t{sid}_{int(expect[j - 1])}"
                assert syn["tgt_supervised"][b, p]
            real = range(toff, toff + m + 1)
        else:
            # ---- target coordinates: position j is target token j, what decoder state j predicts ----
            tgt = batch["target"]
            assert syn["tgt_parents"].shape == tgt.shape
            for j in range(m):
                p = toff + j
                assert sym_of(d, tgt[b, p]) == f"t{sid}_{j}"
                if j > 0:  # the decoder state at p predicts token j and has token j - 1 as its input
                    assert sym_of(d, prev[b, p]) == f"t{sid}_{j - 1}"
                par = syn["tgt_parents"][b, p].item()
                if strategy == "middle":
                    assert par - toff == pytest.approx(expect[j])
                else:
                    assert sym_of(d, tgt[b, int(par)]) == f"t{sid}_{int(expect[j])}"
                assert syn["tgt_supervised"][b, p]
            eos = toff + m
            assert tgt[b, eos] == d.eos() and syn["tgt_parents"][b, eos] == eos and not syn["tgt_supervised"][b, eos]
            real = range(toff, toff + m + 1)
        for p in [p for p in range(prev.size(1)) if p not in real]:
            assert prev[b, p] == d.pad() and syn["tgt_parents"][b, p] == -1 and not syn["tgt_supervised"][b, p]


def test_right_padded_source():
    ds, d, *_ = make_dataset("chain", left_pad_source=False)
    batch = ds.collater([ds[i] for i in range(len(ds))])
    src = batch["net_input"]["src_tokens"]
    par = batch["syntax"]["src_parents"]
    for b in range(src.size(0)):
        real = src[b].ne(d.pad())
        n = int(real.sum())
        assert real[:n].all()  # right padded
        assert par[b, n - 1] == n - 1  # EOS
        assert (par[b, n:] == -1).all()


def test_dbsa_fig3_future_arcs_visible_to_the_masker():
    # "are -> explained": the parent lies later in decoder-input coordinates; the
    # collater keeps it so the model can mask it (Deguchi et al. 2019, Fig. 3).
    ds, d, *_ = make_dataset("chain")
    batch = ds.collater([ds[0]])
    par = batch["syntax"]["tgt_parents"][0]
    pos = torch.arange(par.numel())
    future = (par > pos) & batch["syntax"]["tgt_supervised"][0]
    assert future.any()


def test_only_requested_fields_are_collated():
    ds, d, *_ = make_dataset("chain", fields=("depths",))
    batch = ds.collater([ds[i] for i in range(2)])
    assert set(batch["syntax"]) == {"src_depths", "tgt_depths", "src_supervised", "tgt_supervised"}
    assert "src_parents" not in batch["net_input"]


def test_no_request_means_plain_translation_batches():
    ds, *_ = make_dataset("chain", fields=())
    batch = ds.collater([ds[i] for i in range(2)])
    assert "syntax" not in batch


def test_last_batch_is_not_dropped():
    ds, *_ = make_dataset("chain")
    batches = ds.batch_by_size(ds.ordered_indices(), max_sentences=8, required_batch_size_multiple=8)
    assert sum(len(b) for b in batches) == len(ds)


def test_malformed_binary_syntax_names_the_sentence():
    from fairseq_syntax.errors import SyntaxDataError

    ds, *_ = make_dataset("chain")
    ds.src_syntax.heads.items[2] = torch.tensor([9] * len(ds.src_syntax.heads.items[2]))
    with pytest.raises(SyntaxDataError, match=r"src, sentence 2: malformed syntax data: .*heads lie in 0..W"):
        ds[2]
