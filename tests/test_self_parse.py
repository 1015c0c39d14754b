"""A self-parsing encoder's tree, batched (fairseq_syntax/data/trees/decoding.py): word indices from the BPE
markers, word-level arc scores as induce-parses scores them, Eisner's best single-rooted projective tree
(against every such tree enumerated, and against Chu-Liu-Edmonds where the best tree is projective), and the
depths and middle parents of a hand-worked tree in batch coordinates (left padding, a word of two subwords)."""
import functools
import itertools
import os
import re

import numpy as np
import pytest
import torch

from fairseq_syntax.data.trees import decoding as bt


@functools.lru_cache(maxsize=None)
def _projective_single_rooted(n):
    """Every head vector (1-based, 0 = root) over n words that is a single-rooted projective tree."""
    return tuple(_enumerate_trees(n))


def _enumerate_trees(n):
    for heads in itertools.product(range(n + 1), repeat=n):
        if sum(h == 0 for h in heads) != 1 or any(h == i + 1 for i, h in enumerate(heads)):
            continue
        ok = True
        for i in range(n):  # reaches the root
            seen, j = set(), i
            while heads[j] != 0:
                if j in seen:
                    ok = False
                    break
                seen.add(j)
                j = heads[j] - 1
            if not ok:
                break
        if not ok:
            continue
        arcs = [(min(h, i + 1), max(h, i + 1)) for i, h in enumerate(heads)]  # the root's arc (0, r) too
        if any(a < c < b < d for (a, b), (c, d) in itertools.permutations(arcs, 2)):
            continue  # crossing arcs
        yield heads


def _score(heads, arcs, root):
    return sum(root[m] if h == 0 else arcs[h - 1, m] for m, h in enumerate(heads))


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5])
def test_eisner_finds_the_best_single_rooted_projective_tree(n):
    g = torch.Generator().manual_seed(n)
    for _ in range(8):
        arcs = torch.randn(2, n, n, generator=g)
        root = torch.randn(2, n, generator=g)
        lengths = torch.tensor([n, max(1, n - 1)])
        heads = bt.eisner_heads(arcs, root, lengths)
        for b in range(2):
            m = int(lengths[b])
            best = max(_projective_single_rooted(m), key=lambda h: _score(h, arcs[b].numpy(), root[b].numpy()))
            got = tuple(heads[b, :m].tolist())
            assert _score(got, arcs[b].numpy(), root[b].numpy()) == pytest.approx(
                _score(best, arcs[b].numpy(), root[b].numpy()), abs=1e-5), (b, got, best)
            assert heads[b, m:].eq(0).all()


def test_eisner_agrees_with_chu_liu_edmonds_on_projective_best_trees():
    """induce-parses decodes with Chu-Liu-Edmonds (non-projective); where its tree is projective, Eisner's is
    the same tree."""
    from fairseq_syntax.data.trees.decoding import max_spanning_tree

    g = torch.Generator().manual_seed(7)
    agree = compared = 0
    n = 6
    distance = (torch.arange(n).view(-1, 1) - torch.arange(n).view(1, -1)).abs().float()
    for _ in range(60):  # scores that favour near heads, as a parse head's do: mostly projective best trees
        arcs, root = torch.randn(1, n, n, generator=g) - 1.5 * distance, torch.randn(1, n, generator=g)
        s = np.full((n + 1, n + 1), -np.inf)
        s[1:, 1:] = arcs[0].numpy().T  # [child, head]
        s[1:, 0] = root[0].numpy()
        cle = tuple(max_spanning_tree(s))
        if cle not in set(_projective_single_rooted(n)):
            continue
        compared += 1
        agree += tuple(bt.eisner_heads(arcs, root, torch.tensor([n]))[0].tolist()) == cle
    assert compared >= 20 and agree == compared


def test_word_index_scores_and_tree_inputs_of_a_hand_worked_tree():
    """Two rows, left-padded: row 0 'the dog@@ gy barks' (4 subwords, 3 words: the <- doggy <- barks <- root),
    row 1 'hi' (1 word). Columns: row 0 subwords at 0..3, EOS at 4; row 1 padding at 0..2, 'hi' at 3, EOS at 4.
    Depths: the 2, dog@@ 1, gy 1, barks 0. Middle parents: the -> doggy's mean (1 + 2) / 2 = 1.5, dog@@ and gy
    -> barks at 3, barks (root) -> its own 3; EOS its own column 4; row 1: 'hi' (root) 3, padding -1."""
    pad, eos = 1, 2
    vocab = {"the": 4, "dog@@": 5, "gy": 6, "barks": 7, "hi": 8}
    continues = torch.zeros(10, dtype=torch.bool)
    continues[vocab["dog@@"]] = True
    tokens = torch.tensor([[4, 5, 6, 7, eos], [pad, pad, pad, 8, eos]])
    word = bt.subword_word_index(tokens, continues, pad, eos)
    assert word.tolist() == [[1, 2, 2, 3, 0], [0, 0, 0, 1, 0]]
    heads = torch.tensor([[2, 3, 0], [0, 0, 0]])
    depths, parents = bt.tree_inputs(heads, word, eos_col=torch.tensor([4, 4]))
    assert depths.tolist() == [[2, 1, 1, 0, 0], [0, 0, 0, 0, 0]]
    assert parents.tolist() == [[1.5, 3.0, 3.0, 3.0, 4.0], [-1.0, -1.0, -1.0, 3.0, 4.0]]
    # the collater computes the same from the aligned data (parent_strategies, in sentence positions)
    from fairseq_syntax.data.alignment.parent_strategies import subword_depths, subword_parents

    w, h = np.array([1, 2, 2, 3]), np.array([2, 3, 3, 0])
    assert subword_depths(w, h).tolist() == depths[0, :4].tolist()
    assert subword_parents(w, h, "middle").tolist() == parents[0, :4].tolist()
    # arc scores: 'chain' scores word w from its last subword, 'first' from its first
    logp = torch.log_softmax(torch.randn(2, 5, 5), -1)
    arcs, root = bt.word_arc_scores(logp, word, "chain")
    assert arcs[0, 2, 1] == logp[0, 2, 3] and arcs[0, 1, 0] == logp[0, 0, 1]  # doggy <- ... gy's row
    assert root[0, 1] == logp[0, 2, 2] and root[1, 0] == logp[1, 3, 3]
    arcs_f, root_f = bt.word_arc_scores(logp, word, "first")
    assert arcs_f[0, 2, 1] == logp[0, 1, 3] and root_f[0, 1] == logp[0, 1, 1]
    assert arcs[1, 1:].max() <= bt.NEG and root[1, 1:].max() <= bt.NEG  # row 1 has one word


def _reference_word_scores(logp, word_idx, strategy, offset):
    """One sentence's word scores (W+1 x W+1, [child, head], index 0 = the root) written out as the decoder's
    docstring states them, with numpy indexing: the representative subword's row, read at each head word's
    first subword and at the representative's own root position."""
    word_idx = np.asarray(word_idx)
    first = np.flatnonzero(np.r_[True, word_idx[1:] != word_idx[:-1]])
    last = np.r_[first[1:] - 1, len(word_idx) - 1]
    rep = (last if strategy == "chain" else first) + offset
    s = np.full((len(first) + 1, len(first) + 1), -np.inf)
    s[1:, 1:] = logp[np.ix_(rep, first + offset)]
    s[1:, 0] = logp[rep, rep if strategy == "chain" else first + offset]
    return s


def test_word_arc_scores_are_the_stated_scores_and_induce_heads_decodes_them():
    """The batched scores of every row equal the stated per-sentence scores, and induce_heads (one sentence,
    in its row's coordinates) gives Chu-Liu-Edmonds' tree of them."""
    g = torch.Generator().manual_seed(3)
    word = torch.tensor([[0, 1, 1, 2, 3, 3, 3, 0], [0, 0, 0, 0, 1, 2, 2, 0]])
    logp = torch.log_softmax(torch.randn(2, 8, 8, generator=g), -1)
    for strategy in ("chain", "first"):
        arcs, root = bt.word_arc_scores(logp, word, strategy)
        for b in range(2):
            real = word[b] > 0
            offset = int(real.nonzero()[0])
            widx = word[b][real].numpy()
            ref = _reference_word_scores(logp[b].numpy(), widx, strategy, offset)
            nw = int(widx.max())
            off = ~np.eye(nw, dtype=bool)  # a word heading itself is no arc (NEG here)
            assert np.allclose(ref[1:, 1:][off], arcs[b, :nw, :nw].T.numpy()[off], atol=1e-6)
            assert np.allclose(ref[1:, 0], root[b, :nw].numpy())
            assert bt.induce_heads(logp[b], widx, strategy, offset) == bt.max_spanning_tree(ref)


# --- the self-parsing encoder (--self-parse) ---------------------------------------------------------------------
def _self_parsing_model(**overrides):
    import argparse

    from fairseq.data import Dictionary
    from fairseq.models import ARCH_CONFIG_REGISTRY, ARCH_MODEL_REGISTRY

    import fairseq_syntax.plugin  # noqa: F401

    d = Dictionary()
    for sym in ("the", "dog@@", "gy", "barks", "a", "cat@@", "s", "sleep", "hi"):
        d.add_symbol(sym)
    args = argparse.Namespace(arch="transformer_dep_rel_self_tiny", dropout=0.0, attention_dropout=0.0,
                              share_all_embeddings=True, encoder_layers=3, decoder_layers=1, **overrides)
    ARCH_CONFIG_REGISTRY[args.arch](args)
    task = argparse.Namespace(source_dictionary=d, target_dictionary=d)
    torch.manual_seed(5)
    return ARCH_MODEL_REGISTRY[args.arch].build_model(args, task), d


def _batch(d):
    rows = [["the", "dog@@", "gy", "barks"], ["a", "cat@@", "s", "sleep"], ["hi"]]
    width = 5
    toks = torch.full((3, width), d.pad())
    for b, r in enumerate(rows):
        ids = [d.index(w) for w in r] + [d.eos()]
        toks[b, width - len(ids):] = torch.tensor(ids)
    return toks, torch.tensor([len(r) + 1 for r in rows])


def _own_depths(model, toks, logp):
    word = bt.subword_word_index(toks, model.encoder.bpe_continues, model.encoder.padding_idx, model.encoder.dictionary.eos())
    arcs, root = bt.word_arc_scores(logp, word, "chain")
    heads = bt.eisner_heads(arcs, root, word.amax(1))
    return bt.tree_inputs(heads, word, toks.eq(model.encoder.dictionary.eos()).long().argmax(1))[0]


def test_a_self_parsing_encoder_reads_its_own_tree_above_its_parse_head():
    """Without a tree in the batch (parser-free decoding) the layers above the parse head read the head's decoded
    tree: the same output as given that tree as src_depths; the layers up to the head have no dependency terms;
    given a parser's tree, it reads that one."""
    model, d = _self_parsing_model()
    model.eval()
    enc = model.encoder
    assert enc.dbsa_layer == 1
    assert "dependency" not in enc.layers[0].self_attn.relative and "linear" in enc.layers[0].self_attn.relative
    assert all("dependency" in layer.self_attn.relative for layer in enc.layers[1:])
    toks, lengths = _batch(d)
    with torch.no_grad():
        own = enc(toks, lengths)
        depths = _own_depths(model, toks, own["encoder_parse_logprobs"][0])
        fed = enc(toks, lengths, src_depths=depths)
        parser = enc(toks, lengths, src_depths=torch.zeros_like(depths))
    assert torch.equal(own["encoder_out"][0], fed["encoder_out"][0])
    assert not torch.equal(own["encoder_out"][0], parser["encoder_out"][0]) or depths.eq(0).all()
    assert depths[2].tolist()[:3] == [0, 0, 0]  # padding: depth 0


@pytest.mark.parametrize("p", [0.0, 1.0])
def test_what_the_tree_layers_receive_in_training(p, monkeypatch):
    """In training the tree layers read the parser's tree (src_depths) unless --self-parse-train draws the head's:
    with p = 0 the head's tree is never decoded; with p = 1 always, and no gradient flows through the decoded
    tree into the parse head (the gradients equal those of feeding that tree as src_depths)."""
    model, d = _self_parsing_model(self_parse_train=p)
    model.train()
    enc = model.encoder
    calls = []
    real = enc.own_tree
    monkeypatch.setattr(enc, "own_tree", lambda *a: calls.append(1) or real(*a))
    toks, lengths = _batch(d)
    parser_depths = torch.tensor([[2, 1, 1, 0, 0], [1, 1, 1, 0, 0], [0, 0, 0, 0, 0]])
    out = enc(toks, lengths, src_depths=parser_depths)
    assert len(calls) == (1 if p == 1.0 else 0)
    out["encoder_out"][0].sum().backward()
    grads = {n: q.grad.clone() for n, q in enc.named_parameters() if q.grad is not None}
    if p == 1.0:
        depths = _own_depths(model, toks, out["encoder_parse_logprobs"][0].detach())
        enc.zero_grad()
        enc.self_parse_train = 0.0
        enc(toks, lengths, src_depths=depths)["encoder_out"][0].sum().backward()
        for n, q in enc.named_parameters():
            if q.grad is not None:
                torch.testing.assert_close(q.grad, grads[n], msg=n)


def test_the_head_s_own_tree_only_after_the_warm_up_updates(monkeypatch):
    """--self-parse-train-after N: before update N (the count fairseq's task gives the model each step) the tree
    layers read the parser's tree; from N on they draw the head's; in evaluation never the head's when a tree
    is given."""
    model, d = _self_parsing_model(self_parse_train=1.0, self_parse_train_after=10)
    enc = model.encoder
    calls = []
    real = enc.own_tree
    monkeypatch.setattr(enc, "own_tree", lambda *a: calls.append(enc.num_updates) or real(*a))
    toks, lengths = _batch(d)
    parser_depths = torch.tensor([[2, 1, 1, 0, 0], [1, 1, 1, 0, 0], [0, 0, 0, 0, 0]])
    model.train()
    for step in (0, 9, 10, 11):
        model.set_num_updates(step)
        enc(toks, lengths, src_depths=parser_depths)
    assert calls == [10, 11]
    model.eval()
    enc(toks, lengths, src_depths=parser_depths)
    assert calls == [10, 11]
    from fairseq_syntax.errors import OptionError

    with pytest.raises(OptionError, match="--self-parse-train-after must be >= 0"):
        _self_parsing_model(self_parse_train_after=-1)
    # a training too short ever to switch (a shortened run of the recipe's settings) is refused, not run
    with pytest.raises(OptionError, match="--self-parse-train-after 10 is not before --max-update 10"):
        _self_parsing_model(self_parse_train=0.5, self_parse_train_after=10, max_update=10)
    _self_parsing_model(self_parse_train=0.5, self_parse_train_after=10, max_update=11)
    _self_parsing_model(self_parse_train=0.0, self_parse_train_after=10, max_update=10)  # nothing to switch


def test_self_parse_needs_a_parse_head_below_the_tree_layers():
    from fairseq_syntax.errors import OptionError

    with pytest.raises(OptionError, match="--self-parse feeds"):
        _self_parsing_model(dbsa_encoder_layer=0)
    with pytest.raises(OptionError, match="must be below the last encoder layer"):
        _self_parsing_model(dbsa_encoder_layer=3)


# --- decoding without a parser: fairseq-generate, the hub, a fresh process without parser packages ----------------
@pytest.fixture(scope="module")
def self_parsing_checkpoint(data_bin, tmp_path_factory):
    from helpers import USER_DIR, run, tool

    save = tmp_path_factory.mktemp("selfparse")
    run([tool("fairseq-train"), data_bin, "--user-dir", USER_DIR, "--task", "syntax_translation", "--arch",
         "transformer_dep_rel_self_tiny", "--criterion", "label_smoothed_cross_entropy_with_dependency",
         "--label-smoothing", "0.1", "--dependency-lambda-enc", "0.5", "--optimizer", "adam", "--lr", "1e-3",
         "--max-tokens", "1000", "--max-update", "3", "--cpu", "--save-dir", str(save), "--no-epoch-checkpoints",
         "--num-workers", "0", "--seed", "2", "--share-all-embeddings"])
    return save / "checkpoint_last.pt"


def test_generate_decodes_with_its_own_tree_or_the_datas(data_bin, self_parsing_checkpoint):
    import re

    from helpers import generate_cmd, run

    own = run(generate_cmd(data_bin, str(self_parsing_checkpoint), ["--inference-parser", "self"]))
    data = run(generate_cmd(data_bin, str(self_parsing_checkpoint)))
    n_own, n_data = (len(re.findall(r"^H-\d+\t", p.stdout, flags=re.M)) for p in (own, data))
    assert n_own == n_data == 21


def test_generate_decodes_parser_free_a_split_binarized_without_any_parse(data_bin, self_parsing_checkpoint,
                                                                         tmp_path):
    """A new test set binarized without syntax files (no parser anywhere): fairseq-generate with
    --inference-parser self decodes it with the model's own tree; without it the missing files are named."""
    import glob
    import shutil

    from helpers import generate_cmd, run

    bare = tmp_path / "bare"
    shutil.copytree(data_bin, bare)
    syntax = [f for f in glob.glob(str(bare / "test.*")) if any(f".{k}." in os.path.basename(f)
                                                               for k in ("words", "heads", "labels"))]
    assert syntax
    for f in syntax:
        os.remove(f)
    own = run(generate_cmd(str(bare), str(self_parsing_checkpoint), ["--inference-parser", "self"]))
    assert len(re.findall(r"^H-\d+\t", own.stdout, flags=re.M)) == 21
    refused = run(generate_cmd(str(bare), str(self_parsing_checkpoint)), check=False)
    assert refused.returncode != 0 and "syntax datasets are missing" in refused.stderr


def test_raw_text_without_any_parser_package(data_bin, self_parsing_checkpoint):
    """A fresh process in which stanza, spaCy and UDPipe cannot be imported translates raw text with the model's
    own tree (the synthetic data-bin's text is given tokenised: nothing but BPE stands between)."""
    import os
    import subprocess
    import sys

    from helpers import ROOT, env

    code = ("import sys\nfor name in ('stanza', 'spacy', 'ufal', 'ufal.udpipe', 'ginza', 'ja_ginza'):\n"
            "    sys.modules[name] = None  # importing any of them fails\n"
            "from fairseq_syntax.inference.hub import from_pretrained\n"
            f"m = from_pretrained({os.path.dirname(str(self_parsing_checkpoint))!r}, 'checkpoint_last.pt', "
            f"{data_bin!r}, inference_parser='self')\n"
            "print(len(m.translate(['a finu goke', 'near every judufi'], beam=2, max_len_b=4)))\n"
            "print(sorted(k for k in sys.modules if k.split('.')[0] in ('stanza', 'spacy', 'ufal') "
            "and sys.modules[k] is not None))\n")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env(), cwd=ROOT)
    assert p.returncode == 0, p.stderr[-3000:]
    assert p.stdout.split("\n")[:2] == ["2", "[]"], p.stdout


def test_japanese_raw_text_is_tokenised_by_ginzas_tokenizer_alone():
    """A side whose tokens GiNZA made is tokenised without parsing (no component of the pipeline loaded): the
    full pipeline's tokens."""
    pytest.importorskip("ja_ginza")
    import spacy

    from fairseq_syntax.parsing.spacy_backend import doc_to_sentence, load_tokenizer_only

    lines = ["私は学校に行きました。", "猫が好きです", "東京　大阪"]
    tokenize = load_tokenizer_only("ja_ginza")
    full = spacy.load("ja_ginza")
    assert tokenize(lines) == [doc_to_sentence(doc).words for doc in full.pipe(lines)]


@pytest.mark.parametrize("needs_tree,parser,alone,expected", [
    (False, "auto", True, True),    # rel / transformer on GiNZA's tokens: the tokenizer alone
    (True, "auto", True, False),    # dep_rel fed by the parser: the whole pipeline
    (False, "udpipe", True, False),  # a parser the user names: it makes the tokens as asked
    (False, "auto", False, False),  # tokens given, Moses, or a parser without a tokenizer-only mode
    (True, "self", True, True),     # parser-free decoding
])
def test_raw_text_is_only_tokenised_where_no_tree_is_read(needs_tree, parser, alone, expected):
    """Raw text is parsed only when a tree is read from the parse: a model that needs no source tree, whose
    side's tokens the record's spaCy pipeline (GiNZA) made, gets them from that pipeline's tokenizer alone
    (the full pipeline's tokens: test above), as parser-free decoding does."""
    from types import SimpleNamespace

    from fairseq_syntax.inference.raw_input import RawInput

    calls = []

    class Encoder:
        tokenizes_alone = alone

        def encode(self, lines, first_line, with_syntax, max_positions, tokenize_only=False):
            calls.append((with_syntax, tokenize_only))

    task = SimpleNamespace(cfg=SimpleNamespace(data="DATA", inference_parser=parser, max_source_positions=64),
                           syntax_request=SimpleNamespace(required=lambda side: {"parents"} if needs_tree else set()))
    raw = RawInput(task)
    raw._record, raw._encoder = object(), Encoder()
    raw.encode(["猫が好きです"])
    assert calls == [(False, True)] if expected else calls == [(needs_tree, False)]


def test_the_raw_text_benchmark_decodes_parser_free(data_bin, self_parsing_checkpoint, tmp_path):
    """examples/benchmark/translate_raw.py: the same model parser-fed (the record names no parser for the
    synthetic data-bin: its tokens are given) and parser-free, each row's time split by stage."""
    import json
    import os
    import sys

    from helpers import ROOT

    sys.path.insert(0, os.path.join(ROOT, "examples", "benchmark"))
    import translate_raw

    sentences = tmp_path / "raw.txt"
    sentences.write_text("a finu goke\nnear every judufi\nfor every nusiba\n", encoding="utf-8")
    folder = os.path.dirname(str(self_parsing_checkpoint))
    out = tmp_path / "speed.json"
    translate_raw.main(["--models", f"own={folder}", "--parser-free", "own", "--checkpoint", "checkpoint_last.pt",
                        "--data", data_bin, "--sentences", str(sentences), "--n", "3", "--batch-sizes", "1", "3",
                        "--beam", "2", "--json", str(out)])
    rows = json.load(open(out))["models"]["own"]
    assert [r["batch"] for r in rows] == [1, 3] and all(r["parse_seconds"] == 0 for r in rows)
    assert all(r["sentences_per_second"] > 0 and "tokenize_seconds" in r for r in rows)
