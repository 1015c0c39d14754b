"""A parse head's attention over subwords, decoded into a tree over words.

DBSA / SISA parse heads (Deguchi et al. 2019; the PASCAL paper's SISA) attend from each subword to its
predicted parent subword. Subword parents map back to words with the strategy the model was trained for (the
parent of a word's final subword for ``chain``, of its first subword for ``first``). :func:`induce_heads`
decodes one sentence's word heads: by default the best single-rooted spanning tree of the word-level scores
(:func:`word_scores`, Chu-Liu-Edmonds: :func:`fairseq_syntax.data.tree.max_spanning_tree`), or each word's most
attended head (``argmax``, which need not form a tree). ``fairseq-syntax-induce-parses``, the hub interface's
``parse`` and the plots use it.
"""
import math

import numpy as np

from fairseq_syntax.data.parent_strategies import word_spans
from fairseq_syntax.data.tree import max_spanning_tree


def words_from_subwords(subwords, word_idx):
    """Word forms: the subwords of each word joined, subword-nmt markers removed."""
    forms = {}
    for s, w in zip(subwords, word_idx):
        forms.setdefault(int(w), []).append(s[:-2] if s.endswith("@@") else s)
    return ["".join(forms[w]) for w in sorted(forms)]


def bpe_word_index(subwords):
    """1-based word of each subword from the subword-nmt markers (``@@`` continues a word)."""
    return np.cumsum([0] + [not s.endswith("@@") for s in subwords[:-1]]) + 1


def word_heads(pred_pos, word_idx, strategy, offset):
    """Word-level heads (1-based, 0 = root) from per-subword predicted positions.

    ``pred_pos[i]`` is the predicted parent position of subword i in model
    coordinates; ``offset`` turns subword i into its model position.
    """
    word_idx = np.asarray(word_idx)
    first, last = word_spans(word_idx)
    rep = last if strategy == "chain" else first
    n = len(word_idx)
    heads = []
    for w, i in enumerate(rep, 1):
        k = int(pred_pos[i]) - offset  # predicted parent as a subword index
        if k < 0 or k >= n:  # EOS, the decoder's start symbol, padding: root
            heads.append(0)
            continue
        h = int(word_idx[k])
        heads.append(0 if h == w else h)
    return heads


def word_scores(logp, word_idx, strategy, offset):
    """Word-level arc scores (W+1 x W+1, index 0 = root) from a parse head's log-attention.

    Word w's representative subword (final for chain, first otherwise) scores
    head word h by its log-attention to h's first subword (where both
    strategies put the gold parent) and the root by its attention to its own
    root position (itself for chain, its word's first subword for first).
    """
    word_idx = np.asarray(word_idx)
    first, last = word_spans(word_idx)
    rep = (last if strategy == "chain" else first) + offset
    s = np.full((len(first) + 1, len(first) + 1), -np.inf)
    s[1:, 1:] = logp[np.ix_(rep, first + offset)]
    s[1:, 0] = logp[rep, rep if strategy == "chain" else first + offset]
    return s


def induce_heads(logp, word_idx, strategy, offset, decode="mst"):
    """Word-level heads (1-based, 0 = root) of one sentence from its parse head's log-attention ``logp``.

    ``logp`` (positions x positions, model coordinates of this sentence's
    row), ``word_idx`` the 1-based word of each subword, ``offset`` the model
    position of subword 0; ``decode``: ``mst`` or ``argmax`` (see --decode).
    """

    if decode == "mst":
        scores = logp.float().clamp_min(math.log(1e-30)).cpu().numpy()
        return max_spanning_tree(word_scores(scores, word_idx, strategy, offset))
    n = len(word_idx)
    pred_pos = logp.argmax(-1)[offset : offset + n].cpu().numpy()
    return word_heads(pred_pos, word_idx, strategy, offset)
