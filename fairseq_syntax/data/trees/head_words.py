"""Each word's head word in batch coordinates, from the collated ``words`` and ``parents`` of any parent strategy:
the table a mechanism that walks the tree (ancestors, tree distances, the head's representation) starts from.

It rests on the head-word invariant of :mod:`fairseq_syntax.data.alignment.parent_strategies` (docs/design.md,
"Index conventions"): the rounded-down parent of a word's final subword lies in the word's head word, or in the
word itself when it is the root. The collater shifts parents by whole columns, so the invariant holds in every
coordinate system it writes (left or right padding, source or decoder input). Tensor operations over the batch,
no host round trip: the table's width is the batch's (a row never has more words than columns).
"""
import torch
from torch import Tensor


def head_words(words: Tensor, parents: Tensor) -> Tensor:
    """(B, T + 1) long: ``[b, w]`` the 1-based head word of row b's word w, 0 when w is the root; 0 at index 0
    and beyond the row's words. ``words``: (B, T) the collated ``words`` field (1-based word of each subword,
    0 at EOS and padding); ``parents``: (B, T) the collated ``parents`` of the same rows and coordinates (any
    strategy, float or integer columns). ``head_words(words, parents).gather(1, words)`` gives each subword its
    word's head word (0 at EOS and padding)."""
    bsz, width = words.shape
    following = torch.nn.functional.pad(words[:, 1:], (0, 1), value=0)
    final = words.gt(0) & words.ne(following)  # each word's last subword
    at = parents.floor().long().clamp(0, max(width - 1, 0))
    head = words.gather(1, at)
    head = torch.where(head.eq(words), torch.zeros_like(head), head)
    table = words.new_zeros(bsz, width + 1)
    return table.scatter_(1, torch.where(final, words, torch.zeros_like(words)),
                          torch.where(final, head, torch.zeros_like(head)))
