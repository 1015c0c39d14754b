"""A data-bin of random sentences with random valid dependency trees, for timing training steps.

What a step costs depends on the batch's shape (sentences, their lengths, the
vocabulary) and not on what the tokens mean, so the timing runs need no real
corpus: each split holds seeded random token ids of a given length range on
both sides, and each side a random tree over random word groupings of its
subwords (every word's head an earlier-placed word, so no cycles; one root).
The files are the ones ``fairseq-syntax-prepare`` writes (tokens with EOS,
``words`` / ``heads`` / ``labels`` next to them, the dictionaries), so the
``syntax_translation`` task loads and batches them as it does a real corpus.
"""
import os
from array import array

import numpy as np

#: UD's relations: the label dictionary's symbols (their number sets the label embedding's size)
LABELS = ("acl advcl advmod amod appos aux case cc ccomp clf compound conj cop csubj dep det discourse dislocated "
          "expl fixed flat goeswith iobj list mark nmod nsubj nummod obj obl orphan parataxis punct reparandum root "
          "vocative xcomp").split()


def random_side(rng, n):
    """(words, heads) of one side of n subwords: 1-based word indices in order (a word spans 1 to 3 subwords)
    and each subword's head word (0 for the root word)."""
    spans = []
    left = n
    while left:
        k = min(left, int(rng.choice((1, 1, 1, 2, 3))))
        spans.append(k)
        left -= k
    w = len(spans)
    words = np.repeat(np.arange(1, w + 1), spans)
    order = rng.permutation(w) + 1  # the order words join the tree: each attaches to one placed before it
    head_of = np.zeros(w + 1, dtype=np.int64)
    for i in range(1, w):
        head_of[order[i]] = order[rng.integers(0, i)]
    return words, head_of[words]


def write_split(destdir, split, src, tgt, n_sentences, lengths, vocab, seed):
    """Write split ``split`` of n_sentences random pairs whose source and target lengths are drawn uniformly from
    ``lengths`` (inclusive pair), token ids from the vocabulary's real symbols."""
    from fairseq_syntax.data.alignment.syntax_io import syntax_prefix, write_mmap

    rng = np.random.default_rng(seed)
    lo, hi = lengths
    for side, lang in (("source", src), ("target", tgt)):
        sizes = rng.integers(lo, hi + 1, size=n_sentences)
        tokens = array("i")
        words, heads, labels = array("i"), array("i"), array("i")
        for n in sizes.tolist():
            ids = rng.integers(vocab.nspecial, len(vocab), size=n)
            tokens.extend(ids.tolist() + [vocab.eos()])
            w, h = random_side(rng, n)
            words.extend(w.tolist())
            heads.extend(h.tolist())
            labels.extend(rng.integers(4, 4 + len(LABELS), size=n).tolist())  # after the 4 special symbols
        prefix = syntax_prefix(destdir, split, src, tgt, lang)
        write_mmap(prefix, tokens, [n + 1 for n in sizes.tolist()])
        for field, data in (("words", words), ("heads", heads), ("labels", labels)):
            write_mmap(prefix + "." + field, data, sizes.tolist())


def write_data_bin(destdir, splits, vocab_size=32000, src="src", tgt="tgt", seed=1):
    """A data-bin in ``destdir`` with one shared dictionary of ``vocab_size`` symbols (specials included), the
    label dictionaries and ``splits``: {name: (sentences, (shortest, longest))}."""
    from fairseq.data import Dictionary

    os.makedirs(destdir, exist_ok=True)
    vocab = Dictionary()
    for i in range(vocab_size - vocab.nspecial):
        vocab.add_symbol(f"w{i}", n=vocab_size - i)
    labels = Dictionary()
    for x in LABELS:
        labels.add_symbol(x)
    for lang in (src, tgt):
        vocab.save(os.path.join(destdir, f"dict.{lang}.txt"))
        labels.save(os.path.join(destdir, f"dict.{lang}.labels.txt"))
    for k, (name, (n, lengths)) in enumerate(sorted(splits.items())):
        write_split(destdir, name, src, tgt, n, lengths, vocab, seed + k)
    return destdir
