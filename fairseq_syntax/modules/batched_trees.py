"""A batch of parse-head attention decoded into trees and into the tree inputs of the layers above, in torch.

What a self-parsing encoder (:mod:`fairseq_syntax.models.syntax_transformer`, ``--self-parse``) does between
its parse-head layer and the layers that read a tree, for a whole batch in tensor operations (no Python
loop over sentences; loops over span widths only):

1. :func:`subword_word_index`: each source subword's word (subword-nmt's ``@@`` ends a non-final subword), in
   batch coordinates (left padding, EOS last);
2. :func:`word_arc_scores`: word-level arc scores from the parse head's subword log-attention, as
   ``fairseq-syntax-induce-parses`` scores them (:func:`fairseq_syntax.data.head_decoding.word_scores`): word
   w's representative subword (its last for ``chain``, its first otherwise) scores head word h by its
   attention to h's first subword, and the root by its attention to its own root position;
3. :func:`eisner_heads`: the best single-rooted *projective* tree of those scores (Eisner 1996, first-order,
   with exactly one word under the root), its arcs read off as the gradient of the best tree's score with
   respect to the arc scores (each max routes its gradient to its argmax: the arcs of the best tree get 1).
   ``induce-parses`` decodes the best non-projective tree (Chu-Liu-Edmonds, one sentence at a time); the two
   agree whenever the best tree is projective (tests/test_self_parse.py);
4. :func:`tree_inputs`: from the word heads, the inputs of the layers above in the collater's coordinates
   (:mod:`fairseq_syntax.data.syntax_dataset`): each subword's tree depth (its word's, root = 0; Omote et al.
   2019) and PASCAL's ``middle`` parent (the mean position of the head word's subwords, the root word's own;
   Bugliarello & Okazaki 2020, Eq. 4); EOS depth 0 and its own parent, padding depth 0 and parent -1.
"""
from typing import Tuple

import torch
from torch import Tensor

NEG = -1e9  # a score no tree takes (finite: its gradient stays finite)


def subword_word_index(tokens: Tensor, continues: Tensor, pad: int, eos: int) -> Tensor:
    """(B, T) token ids -> (B, T) 1-based word of each subword, 0 at padding and EOS. ``continues``: a bool
    tensor over the vocabulary, True for a symbol that continues into the next subword (``@@``)."""
    real = tokens.ne(pad) & tokens.ne(eos)
    cont = continues[tokens] & real
    prev_cont = torch.nn.functional.pad(cont[:, :-1], (1, 0), value=False)
    starts = real & ~prev_cont
    return torch.where(real, starts.long().cumsum(1), torch.zeros_like(tokens))


def _spans(word: Tensor, n_words: int) -> Tuple[Tensor, Tensor, Tensor]:
    """(first, last, exists) positions of words 1..n_words per row: (B, n_words) each."""
    bsz, width = word.shape
    pos = torch.arange(width, device=word.device).expand(bsz, width)
    w = torch.arange(1, n_words + 1, device=word.device).view(1, -1, 1)
    hit = word.unsqueeze(1).eq(w)  # (B, W, T)
    exists = hit.any(-1)
    big = torch.full_like(pos, width).unsqueeze(1)
    first = torch.where(hit, pos.unsqueeze(1), big).amin(-1)
    last = torch.where(hit, pos.unsqueeze(1), torch.full_like(big, -1)).amax(-1)
    return first.clamp_max(width - 1), last.clamp_min(0), exists


def word_arc_scores(logp: Tensor, word: Tensor, strategy: str) -> Tuple[Tensor, Tensor]:
    """(arcs (B, W, W): [b, h, m] the score of word h heading word m, root (B, W): [b, m] of the root heading
    m), over words 1..W (0-based here), from the parse head's (B, T, T) log-attention [b, child, parent]; a
    word that does not exist scores NEG."""
    n_words = int(word.max()) if word.numel() else 0
    first, last, exists = _spans(word, n_words)
    rep = last if strategy == "chain" else first
    rows = logp.gather(1, rep.unsqueeze(-1).expand(-1, -1, logp.size(-1)))  # (B, W, T): each word's row
    to_first = rows.gather(2, first.unsqueeze(1).expand(-1, n_words, -1))  # [b, m, h]
    root = rows.gather(2, (rep if strategy == "chain" else first).unsqueeze(-1)).squeeze(-1)  # [b, m]
    valid = exists.unsqueeze(1) & exists.unsqueeze(2)
    arcs = torch.where(valid, to_first.float(), torch.full_like(to_first, NEG, dtype=torch.float32)).transpose(1, 2)
    eye = torch.eye(n_words, dtype=torch.bool, device=logp.device)
    arcs = arcs.masked_fill(eye, NEG)
    root = torch.where(exists, root.float(), torch.full_like(root, NEG, dtype=torch.float32))
    return arcs, root


def _eisner_score(arcs: Tensor, root: Tensor, lengths: Tensor) -> Tensor:
    """(B,) the score of each row's best single-rooted projective tree over its first ``lengths`` words."""
    bsz, n, _ = arcs.shape
    dev = arcs.device
    zeros = torch.zeros(bsz, n, n, device=dev, dtype=arcs.dtype)
    c_left = c_right = i_left = i_right = zeros  # [b, s, t]: spans s..t (complete / incomplete, head left/right)
    for w in range(1, n):
        s = torch.arange(n - w, device=dev)
        k = torch.arange(w, device=dev)
        S = s.view(-1, 1).expand(-1, w)
        Q = S + k.view(1, -1)  # split points s..t-1
        T = S + w
        inner = (c_right[:, S, Q] + c_left[:, Q + 1, T]).max(-1).values  # (B, n-w)
        il = inner + arcs[:, s + w, s]  # arc t -> s
        ir = inner + arcs[:, s, s + w]  # arc s -> t
        i_left = torch.diagonal_scatter(i_left, il, offset=w, dim1=1, dim2=2)
        i_right = torch.diagonal_scatter(i_right, ir, offset=w, dim1=1, dim2=2)
        cl = (c_left[:, S, Q] + i_left[:, Q, T]).max(-1).values  # head t, complete to the left
        cr = (i_right[:, S, Q + 1] + c_right[:, Q + 1, T]).max(-1).values  # head s, complete to the right
        c_left = torch.diagonal_scatter(c_left, cl, offset=w, dim1=1, dim2=2)
        c_right = torch.diagonal_scatter(c_right, cr, offset=w, dim1=1, dim2=2)
    r = torch.arange(n, device=dev)
    end = (lengths - 1).clamp_min(0)
    left = c_left[:, 0, :]  # [b, r]: words 0..r, head r
    right = c_right[:, r, :].gather(2, end.view(-1, 1, 1).expand(-1, n, 1)).squeeze(-1)  # [b, r]: r..end
    total = root + left + right
    total = total.masked_fill(r.view(1, -1) > end.view(-1, 1), NEG)
    return total.max(-1).values  # max(dim) routes its gradient to one argmax (amax would split ties)


def eisner_heads(arcs: Tensor, root: Tensor, lengths: Tensor) -> Tensor:
    """(B, W) 1-based head word of each word (0 = the root) of each row's best single-rooted projective tree
    over its ``lengths`` words; 0 beyond. ``arcs`` [b, h, m], ``root`` [b, m]: word_arc_scores'."""
    if arcs.size(-1) == 0:
        return torch.zeros(arcs.shape[:2], dtype=torch.long, device=arcs.device)
    with torch.enable_grad():
        a = arcs.detach().float().requires_grad_()
        rt = root.detach().float().requires_grad_()
        ga, gr = torch.autograd.grad(_eisner_score(a, rt, lengths).sum(), (a, rt), allow_unused=True)
    ga = torch.zeros_like(a) if ga is None else ga  # one word: no arc but the root's
    heads = ga.argmax(1) + 1  # the head h with the arc's gradient 1
    heads = torch.where(gr > 0.5, torch.zeros_like(heads), heads)
    n = arcs.size(-1)
    return heads.masked_fill(torch.arange(n, device=arcs.device).view(1, -1) >= lengths.view(-1, 1), 0)


def tree_inputs(heads: Tensor, word: Tensor, eos_col: Tensor) -> Tuple[Tensor, Tensor]:
    """(depths (B, T) long, middle parents (B, T) float) in batch coordinates from word heads (B, W) (1-based,
    0 = root), each subword's word (B, T; 0 at EOS and padding) and each row's EOS column."""
    bsz, width = word.shape
    n_words = heads.size(1)
    first, last, exists = _spans(word, n_words)
    # word depths by pointer jumping: after k rounds each word points 2**k steps up (the root at itself)
    up = torch.where(heads > 0, heads - 1, torch.arange(n_words, device=heads.device).expand(bsz, -1))
    dist = (heads > 0).long()
    for _ in range(max(1, n_words).bit_length()):
        dist = dist + dist.gather(1, up)
        up = up.gather(1, up)
    w0 = (word - 1).clamp_min(0)
    real = word > 0
    depths = torch.where(real, dist.gather(1, w0), torch.zeros_like(word))
    mean = (first + last).float() / 2
    head0 = torch.where(heads > 0, heads - 1, torch.arange(n_words, device=heads.device).expand(bsz, -1))
    parent_of_word = mean.gather(1, head0)  # [b, w]
    parents = torch.where(real, parent_of_word.gather(1, w0), torch.full_like(word, -1, dtype=torch.float32))
    cols = torch.arange(width, device=word.device).view(1, -1)
    parents = torch.where(cols.eq(eos_col.view(-1, 1)), eos_col.view(-1, 1).float().expand(-1, width), parents)
    return depths, parents
