"""A self-parsing encoder's tree, batched (fairseq_syntax/modules/batched_trees.py): word indices from the BPE
markers, word-level arc scores as induce-parses scores them, Eisner's best single-rooted projective tree
(against every such tree enumerated, and against Chu-Liu-Edmonds where the best tree is projective), and the
depths and middle parents of a hand-worked tree in batch coordinates (left padding, a word of two subwords)."""
import functools
import itertools

import numpy as np
import pytest
import torch

from fairseq_syntax.modules import batched_trees as bt


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
    from fairseq_syntax.data.tree import max_spanning_tree

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
    from fairseq_syntax.data.parent_strategies import subword_depths, subword_parents

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


def test_word_arc_scores_are_induce_parses_scores():
    """Per sentence, the batched scores equal head_decoding.word_scores (what induce-parses decodes)."""
    from fairseq_syntax.data.head_decoding import word_scores

    g = torch.Generator().manual_seed(3)
    word = torch.tensor([[0, 1, 1, 2, 3, 3, 3, 0], [0, 0, 0, 0, 1, 2, 2, 0]])
    logp = torch.log_softmax(torch.randn(2, 8, 8, generator=g), -1)
    for strategy in ("chain", "first"):
        arcs, root = bt.word_arc_scores(logp, word, strategy)
        for b in range(2):
            real = word[b] > 0
            offset = int(real.nonzero()[0])
            widx = word[b][real].numpy()
            ref = word_scores(logp[b].numpy(), widx, strategy, offset)
            nw = int(widx.max())
            off = ~np.eye(nw, dtype=bool)  # a word heading itself is no arc (NEG here)
            assert np.allclose(ref[1:, 1:][off], arcs[b, :nw, :nw].T.numpy()[off], atol=1e-6)
            assert np.allclose(ref[1:, 0], root[b, :nw].numpy())
