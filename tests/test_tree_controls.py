"""Tree controls (fairseq_syntax/data/trees/tree_controls.py): every kind keeps a tree a tree, the random tree is
uniform over rooted trees, the chains are the chains, noise:P moves about P of the arcs, labels follow arcs, and
each sentence's draw depends on the seed and its place alone."""
import itertools
import random
from collections import Counter

import pytest

from fairseq_syntax.data.trees.tree import check_tree, unlabeled_attachment
from fairseq_syntax.data.trees.tree_controls import TreeControl, noisy_tree, random_tree
from fairseq_syntax.errors import OptionError

KINDS = ["random", "left-chain", "right-chain", "noise:0.15", "noise:0.3", "noise:1"]


def _parse(rng, n):
    """A random projective-or-not tree as a parser might give: each word headed by an earlier one, permuted."""
    order = list(range(n))
    rng.shuffle(order)
    heads = [0] * n
    for i in range(1, n):
        heads[order[i]] = order[rng.randrange(i)] + 1
    return heads


@pytest.mark.parametrize("kind", KINDS)
def test_every_kind_keeps_a_tree_a_tree_over_many_seeds_and_lengths(kind):
    rng = random.Random(0)
    for seed in range(1, 6):
        control = TreeControl.parse(kind, seed)
        for k in range(300):
            n = rng.randint(1, 40)
            heads = _parse(rng, n)
            new, labels = control.apply(heads, ["x"] * n, f"train:source:{k}")
            check_tree(new, f"{kind} seed {seed} sentence {k}")  # one root, no cycle, heads in range
            assert len(new) == n and new.count(0) == 1
            assert all(lab == ("x" if h == old else "root" if h == 0 else "dep")
                       for h, old, lab in zip(new, heads, labels))


def test_the_random_tree_is_uniform_over_rooted_trees():
    """n = 3 has 3^2 = 9 rooted trees: each drawn about a ninth of the time."""
    rng = random.Random(1)
    counts = Counter(tuple(random_tree(3, rng)) for _ in range(9000))
    trees = {h for h in itertools.product(range(4), repeat=3) if h.count(0) == 1 and _is_tree(h)}
    assert set(counts) == trees and len(trees) == 9
    assert all(800 < c < 1200 for c in counts.values()), counts


def _is_tree(heads):
    try:
        check_tree(list(heads), "t")
        return True
    except Exception:
        return False


def test_the_chains():
    assert TreeControl.parse("left-chain").heads([0, 1, 1, 3], "s") == [0, 1, 2, 3]
    assert TreeControl.parse("right-chain").heads([0, 1, 1, 3], "s") == [2, 3, 4, 0]
    assert TreeControl.parse("right-chain").heads([0], "s") == [0]


def test_noise_moves_about_p_of_the_arcs_and_the_root_stays():
    rng = random.Random(2)
    gold, noisy = [], []
    for k in range(400):
        heads = _parse(rng, 25)
        new = noisy_tree(heads, 0.3, random.Random(k))
        assert new.index(0) == heads.index(0)
        gold.append(heads)
        noisy.append(new)
    correct, total = unlabeled_attachment(gold, noisy)
    assert 0.68 < correct / total < 0.74  # 1 - 0.3 of the 24 non-root words, the root always kept


def test_a_draw_depends_on_the_seed_and_the_sentences_place_alone():
    heads = _parse(random.Random(3), 30)
    a = TreeControl.parse("random", 7)
    assert a.heads(heads, "train:source:5") == a.heads(heads, "train:source:5")
    assert a.heads(heads, "train:source:5") != a.heads(heads, "train:source:6")
    assert a.heads(heads, "train:source:5") != TreeControl.parse("random", 8).heads(heads, "train:source:5")


@pytest.mark.parametrize("text", ["noise", "noise:0", "noise:1.5", "noise:x", "chain", "random:1"])
def test_a_control_not_of_the_kinds_is_one_line_naming_them(text):
    with pytest.raises(OptionError, match="tree-control"):
        TreeControl.parse(text)


def test_the_names_read_back():
    for kind in KINDS:
        assert TreeControl.parse(kind).name == kind
