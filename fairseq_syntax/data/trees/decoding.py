"""A parse head's attention decoded into dependency trees over words: the package's one tree decoder.

DBSA / SISA parse heads (Deguchi et al. 2019; the PASCAL paper's SISA) attend from each subword to its
predicted parent subword; the words' arcs are scored one way for every user (:func:`word_arc_scores`): word w's
representative subword (its last under ``chain``, its first otherwise: where the parent strategy puts the
word's arc) scores head word h by its log-attention to h's first subword, and the root by its attention to its
own root position. Two decoders read those scores:

* :func:`eisner_heads`, a whole batch in tensor operations (Eisner 1996, first order, one word under the root):
  the best *projective* tree, its arcs read off as the gradient of the best score. A self-parsing encoder
  (``--self-parse``) runs it between its parse head and the layers above, then :func:`tree_inputs` turns the
  heads into the collater's depths and PASCAL's middle parents (Bugliarello & Okazaki 2020, Eq. 4);
* :func:`induce_heads`, one sentence: the best single-rooted tree, projective or not (Chu-Liu-Edmonds,
  :func:`max_spanning_tree`), or each word's most attended head (``argmax``, which need not be a tree), for
  ``fairseq-syntax-induce-parses``, the hub interface's ``parse`` and the plots.

The two trees agree whenever the best tree is projective (tests/test_self_parse.py).
"""
import math
from typing import List, Tuple

import numpy as np
import torch
from torch import Tensor

from fairseq_syntax.data.trees.depths import jump_to_roots

NEG = -1e9  # a score no tree takes (finite: its gradient stays finite); also what a non-finite score becomes


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
    # word depths (depths.py), the batch's words as one forest: row b's word w is node b * n_words + w
    own = torch.arange(n_words, device=heads.device).expand(bsz, -1)
    up = torch.where(heads > 0, heads - 1, own) + (torch.arange(bsz, device=heads.device) * n_words).view(-1, 1)
    dist, _ = jump_to_roots(up.reshape(-1), (heads > 0).long().reshape(-1), longest=n_words, settle=False)
    dist = dist.view(bsz, n_words)
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


def induce_heads(logp: Tensor, word_idx, strategy: str, offset: int, decode: str = "mst") -> List[int]:
    """Word-level heads (1-based, 0 = root) of one sentence from its parse head's log-attention ``logp``.

    ``logp`` (positions x positions, model coordinates of this sentence's row), ``word_idx`` the 1-based word
    of each subword, ``offset`` the model position of subword 0; ``decode``: ``mst`` (the best single-rooted
    tree of :func:`word_arc_scores`) or ``argmax`` (each word's representative subword's most attended
    position, mapped to its word; outside the sentence, e.g. EOS: the root).
    """
    word_idx = torch.as_tensor(np.asarray(word_idx), dtype=torch.long, device=logp.device)
    n = len(word_idx)
    word = torch.zeros(1, logp.size(-1), dtype=torch.long, device=logp.device)
    word[0, offset:offset + n] = word_idx
    if decode == "mst":
        arcs, root = word_arc_scores(logp.float().clamp_min(math.log(1e-30)).unsqueeze(0), word, strategy)
        n_words = arcs.size(-1)
        scores = np.full((n_words + 1, n_words + 1), -np.inf)
        scores[1:, 1:] = arcs[0].transpose(0, 1).double().cpu().numpy()  # [m, h]
        scores[1:, 0] = root[0].double().cpu().numpy()
        return max_spanning_tree(scores)
    first, last, _ = _spans(word, int(word_idx.max()))
    rep = (last if strategy == "chain" else first)[0]
    k = logp[rep].argmax(-1) - offset  # each word's predicted parent as a subword index
    inside = (k >= 0) & (k < n)
    head = torch.where(inside, word_idx[k.clamp(0, n - 1)], torch.zeros_like(k))
    own = torch.arange(1, len(rep) + 1, device=logp.device)
    return torch.where(head.eq(own), torch.zeros_like(head), head).tolist()


_NEVER = -1e18  # an arc no tree may use (self-loops, arcs into the root)


def _find_cycle(heads):
    n = len(heads)
    color = [0] * n  # 0 new, 1 on the current path, 2 done
    for start in range(1, n):
        path = []
        v = start
        while v > 0 and color[v] == 0:
            color[v] = 1
            path.append(v)
            v = heads[v]
        if v > 0 and color[v] == 1:
            return path[path.index(v):]
        for u in path:
            color[u] = 2
    return None


def _chu_liu_edmonds(s):
    """Maximum spanning arborescence rooted at node 0 of a dense score matrix s[dep, head]."""
    n = len(s)
    heads = s.argmax(axis=1)
    heads[0] = -1
    cycle = _find_cycle(heads)
    if cycle is None:
        return heads
    in_cycle = set(cycle)
    rest = [v for v in range(n) if v not in in_cycle]  # keeps the root first
    idx = {v: k for k, v in enumerate(rest)}
    c = len(rest)
    cyc = np.array(cycle)
    kept = s[cyc, heads[cyc]]
    sub = np.full((c + 1, c + 1), _NEVER)
    enter, leave = {}, {}
    for h in rest:  # arcs into the contracted cycle: break the cycle where it costs least
        gain = s[cyc, h] - kept
        k = int(gain.argmax())
        sub[c, idx[h]] = gain[k] + kept.sum()
        enter[h] = cycle[k]
    for d in rest[1:]:  # arcs out of the cycle, and arcs among the other nodes
        k = int(s[d, cyc].argmax())
        sub[idx[d], c] = s[d, cycle[k]]
        leave[d] = cycle[k]
        for h in rest:
            sub[idx[d], idx[h]] = s[d, h]
    np.fill_diagonal(sub, _NEVER)
    sub[0] = _NEVER
    sub_heads = _chu_liu_edmonds(sub)
    out = heads.copy()
    for d in rest[1:]:
        hd = sub_heads[idx[d]]
        out[d] = leave[d] if hd == c else rest[hd]
    h_cycle = rest[sub_heads[c]]
    out[enter[h_cycle]] = h_cycle
    return out


def max_spanning_tree(scores: np.ndarray) -> List[int]:
    """Highest-scoring dependency tree with exactly one root (Chu-Liu-Edmonds).

    ``scores[w, h]`` (shape (n+1, n+1), index 0 = the root) is the score of h
    being the head of word w (rows and columns 1..n are words; column 0 is
    "w is the root"). Non-finite scores are treated as ruled out. Returns the
    1-based heads of words 1..n (0 = root).
    """
    s = np.where(np.isfinite(scores), scores, NEG).astype(np.float64)
    np.fill_diagonal(s, _NEVER)
    s[0] = _NEVER
    n = len(s) - 1
    if n == 1:
        return [0]
    best, best_score = None, -np.inf
    first = _chu_liu_edmonds(s.copy())
    roots = [w for w in range(1, n + 1) if first[w] == 0]
    candidates = roots if len(roots) == 1 else range(1, n + 1)
    for r in candidates:  # one root: try each word as the root's only dependent
        t = s.copy()
        t[1:, 0] = _NEVER
        t[r, 0] = s[r, 0]
        heads = first if len(roots) == 1 else _chu_liu_edmonds(t)
        total = sum(s[w, heads[w]] for w in range(1, n + 1))
        if total > best_score:
            best, best_score = heads, total
    return [int(h) for h in best[1:]]
