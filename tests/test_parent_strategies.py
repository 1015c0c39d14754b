"""Subword parent strategies and depths on hand-made trees (docs/design.md, "Index conventions")."""
import numpy as np
import pytest

from fairseq_syntax.data.trees.conllu import sentence_from_heads
from fairseq_syntax.data.alignment.parent_strategies import subword_depths, subword_parents
from fairseq_syntax.data.alignment.subword_align import align_sentence


def aligned(words, heads, bpe):
    w, h, _ = align_sentence(sentence_from_heads(words, heads), bpe, "<test>")
    return np.array(w), np.array(h)


def test_dbsa_fig4_chain():
    # Deguchi et al. (2019) Fig. 4: "Fingerprint" -> Fing@@ er@@ print, head "input".
    # Sentence: "Fingerprint input is required" (input -> required is root).
    words = ["Fingerprint", "input", "is", "required"]
    heads = [2, 4, 4, 0]
    w, h = aligned(words, heads, "Fing@@ er@@ print input is required")
    par = subword_parents(w, h, "chain")
    # positions: 0 Fing@@ 1 er@@ 2 print 3 input 4 is 5 required
    assert par.tolist() == [1, 2, 3, 5, 5, 5]
    # er@@ = head(Fing@@), print = head(er@@), input = head(print); root points to itself
    assert par[0] == 1 and par[1] == 2 and par[2] == 3 and par[5] == 5


def test_chain_final_subword_points_to_first_subword_of_split_head():
    words = ["a", "Fingerprint"]
    heads = [2, 0]
    w, h = aligned(words, heads, "a Fing@@ er@@ print")
    # a -> first subword of its head (position 1), root word: chain then self-loop
    assert subword_parents(w, h, "chain").tolist() == [1, 2, 3, 3]


def test_pascal_middle_position_example():
    # Bugliarello & Okazaki (2020) Sec. 3: a word split into positions 6, 7, 8 has middle position 7.
    words = ["w0", "w1", "w2", "w3", "w4", "head", "dep"]
    heads = [6, 6, 6, 6, 6, 0, 6]
    bpe = "w0 w1 w2 w3 w4 he@@ a@@ d de@@ p"  # positions 5,6,7 = head; shift by one more word below
    w, h = aligned(words, heads, bpe)
    mid = subword_parents(w, h, "middle")
    assert mid[0] == 6.0  # mean(5, 6, 7)
    # exactly the paper's positions: prepend one word so 'head' sits at 6, 7, 8
    words2 = ["x"] + words
    heads2 = [7] + [x + 1 if x else 0 for x in heads]
    w2, h2 = aligned(words2, heads2, "x " + bpe)
    mid2 = subword_parents(w2, h2, "middle")
    assert mid2[0] == 7.0
    # even split: 'dep' (2 subwords at 9, 10) is its own? no: its head is 'head' -> 7.0;
    # the root word's subwords get their own mean
    assert mid2[6:9].tolist() == [7.0, 7.0, 7.0]
    assert mid2[9:11].tolist() == [7.0, 7.0]


def test_middle_even_split_gives_half_positions():
    words = ["big", "dog"]
    heads = [2, 0]
    w, h = aligned(words, heads, "big do@@ g")
    mid = subword_parents(w, h, "middle")
    assert mid.tolist() == [1.5, 1.5, 1.5]


def test_first_strategy_sisa():
    words = ["the", "Fingerprint", "works"]
    heads = [2, 3, 0]
    w, h = aligned(words, heads, "the Fing@@ er@@ print wor@@ ks")
    first = subword_parents(w, h, "first")
    # the -> Fing@@ (1); Fing@@/er@@/print -> wor@@ (4); root word -> its own first subword
    assert first.tolist() == [1, 4, 4, 4, 4, 4]


def test_depths_root_zero_subwords_inherit():
    # the(1)->dog(2)->barks(3 root); loudly(4)->barks
    words = ["the", "dog", "barks", "loudly"]
    heads = [2, 3, 0, 3]
    w, h = aligned(words, heads, "the do@@ g bar@@ ks loud@@ ly")
    assert subword_depths(w, h).tolist() == [2, 1, 1, 0, 0, 1, 1]


def test_depths_long_chain():
    n = 30
    heads = [i + 2 for i in range(n - 1)] + [0]
    words = [f"w{i}" for i in range(n)]
    w, h = aligned(words, heads, " ".join(words))
    assert subword_depths(w, h).tolist() == list(range(n - 1, -1, -1))


def test_unknown_strategy():
    with pytest.raises(ValueError, match="unknown parent strategy"):
        subword_parents(np.array([1]), np.array([0]), "last")


def _random_aligned(rng, n_words):
    """(word, head) per subword of a random tree over ``n_words`` words (non-projective arcs allowed, mostly
    short, as parsers' trees are), about half the words split into 2-4 subwords, through the real alignment."""
    order = rng.permutation(n_words)  # order[0] is the root; every other word hangs from a word before it
    heads = [0] * n_words
    for k in range(1, n_words):
        near = sorted(order[:k], key=lambda j: abs(int(j) - int(order[k])))  # mostly a nearby word
        heads[order[k]] = int(near[min(int(rng.geometric(0.5)) - 1, k - 1)]) + 1
    words, pieces = [], []
    for i in range(n_words):
        parts = [f"w{i}p{p}" for p in range(rng.choice([1, 1, 2, 3, 4]))]
        words.append("".join(parts))
        pieces.append(" ".join(p + "@@" for p in parts[:-1]) + (" " if len(parts) > 1 else "") + parts[-1])
    return aligned(words, heads, " ".join(pieces))


@pytest.mark.parametrize("strategy", ["chain", "middle", "first"])
def test_a_rounded_down_parent_lies_in_the_own_word_or_the_head_word(strategy):
    """The invariant a tree-walking mechanism relies on (docs/design.md, "Index conventions"): under every
    strategy, floor(parent) of a subword lies in its own word or its head word (the root word: its own), and the
    head word of every word is the word of its final subword's rounded-down parent; one sentence at a time and in
    the collater's concatenated batch."""
    from fairseq_syntax.data.alignment.parent_strategies import ConcatenatedTrees, word_spans

    rng = np.random.default_rng(7)
    sentences = [_random_aligned(rng, int(n)) for n in rng.integers(1, 25, size=120)]
    assert sum(len(w) > w[-1] for w, _ in sentences) > 100  # multi-subword words in nearly every sentence
    for w, h in sentences:
        hw = np.where(h > 0, h, w)  # the head word of each subword's word (the root word: its own)
        at = np.floor(subword_parents(w, h, strategy)).astype(np.int64)
        assert ((w[at] == w) | (w[at] == hw)).all(), (w.tolist(), h.tolist(), at.tolist())
        _, last = word_spans(w)
        assert (w[at[last]] == hw[last]).all()  # word-level head from the final subword's parent
        if strategy != "chain":  # every subword of a word points into its head word
            assert (w[at] == hw).all()
    trees = ConcatenatedTrees(np.concatenate([w for w, _ in sentences]), np.concatenate([h for _, h in sentences]),
                              np.array([len(w) for w, _ in sentences]))
    at = np.floor(trees.parents(strategy)).astype(np.int64)
    own, head = trees.gword, trees.ghead
    assert ((trees.gword[at] == own) | (trees.gword[at] == head)).all()
    assert (trees.gword[at[trees.last]] == head[trees.last]).all()
