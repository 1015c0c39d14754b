"""The head-word table (fairseq_syntax/data/trees/head_words.py): from the collated words and parents of every
parent strategy, in right- and left-padded source and in decoder-input coordinates, each word's head is the
parse's own (the word-level heads the syntax files hold)."""
import numpy as np
import pytest
import torch

from fairseq_syntax.data.alignment.parent_strategies import STRATEGIES
from fairseq_syntax.data.datasets.syntax_dataset import SideSyntax, _collate_side, _read_side
from fairseq_syntax.data.trees.head_words import head_words


def sentences(seed: int, n: int = 12):
    """(word, head) per subword of random trees over random subword splits; one single-word sentence."""
    rng = np.random.default_rng(seed)
    out = [(np.array([1]), np.array([0]))]
    for _ in range(n):
        n_words = int(rng.integers(2, 9))
        heads = [0] * n_words
        order = rng.permutation(n_words)
        for i, w in enumerate(order[1:], 1):  # a random tree: each word under one placed before it
            heads[w] = int(order[rng.integers(0, i)]) + 1
        sizes = rng.integers(1, 4, n_words)
        word = np.repeat(np.arange(1, n_words + 1), sizes)
        out.append((word, np.array(heads)[word - 1]))
    return out


@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize("left_pad, decoder_input", [(False, False), (True, False), (False, True)])
def test_each_word_gets_its_parse_head(strategy, left_pad, decoder_input):
    sents = sentences(seed=len(strategy) * 7 + left_pad + 2 * decoder_input)
    side = SideSyntax([torch.from_numpy(w) for w, _ in sents], [torch.from_numpy(h) for _, h in sents])
    rows = [_read_side(side, i, False) for i in range(len(side))]
    width = max(len(w) for w, _ in sents) + 2
    out = _collate_side(rows, range(len(side)), side, "src_", {"words", "parents"}, strategy, width, left_pad,
                        decoder_input=decoder_input)
    table = head_words(out["src_words"], out["src_parents"])
    assert table.shape == (len(sents), width + 1)
    for b, (word, head) in enumerate(sents):
        n_words = int(word[-1])
        expected = [0] + [int(head[list(word).index(w)]) for w in range(1, n_words + 1)]
        assert table[b, :n_words + 1].tolist() == expected, (strategy, b)
        assert not table[b, n_words + 1:].any()
    per_subword = table.gather(1, out["src_words"])
    assert per_subword[out["src_words"].eq(0)].eq(0).all()  # EOS and padding
