"""The CKY-CNN table of CKY-based convolutional attention (Watanabe et al. 2017, Sec. 3, Eq. 12).

* A **Deduction Unit** (DU) maps the d-dim states of two cells to one:
  ``DU(a, b) = CNN3(relu(CNN2(relu(CNN1 a), relu(CNN1 b)))) + CNN4(a, b)``, CNN1 1x1 (d/2) on each cell,
  CNN2 1x2 (d/2) over the pair, CNN3 1x1 (d), CNN4 1x2 (d) the residual shortcut. A 1x1 filter over a cell is
  a linear map of its state and a 1x2 filter one of the two states side by side, so the CNNs are
  ``nn.Linear`` layers; the paper names no activation after the sum, so there is none.
* ``h^cky_{1,j} = h_j`` (the encoder states) and ``h^cky_{i,j} = Max_k DU(h^cky_{k,j}, h^cky_{i-k,j+k})``:
  of the i-1 split candidates, a cell keeps the DU output whose elements have the largest sum (Fig. 3).
* ``norm="layer"`` (the default) layer-normalises the winner, as every convolution of the residual unit
  the paper cites is normalised; without it (``norm="none"``, the literal DU) a cell over i tokens is i - 1
  nested linear maps and its norm can grow level by level until the joint softmax saturates (docs/cky.md).
  The split is chosen on the un-normalised sums, so the choice is the paper's.

Level i (span length i) is one batched operation over its T-i+1 cells and i-1 splits. A DU output's sum is
linear in CNN3 and CNN4, so it is computed exactly from per-cell vectors (``DeductionUnit.selection_
features``) in O(d) per candidate and only each cell's winner runs the DU, with gradients (the max passes
its gradient to the winner, as max-pooling does): equal to evaluating every candidate, much cheaper.

The table is flat and level-major: level i starts at ``level_offset(i, T)`` and its cell j covers source
positions j..j+i-1 (right-padded coordinates); a cell is padding for sentence b when j + i > len_b. Dropout
(the paper's CNN dropout) is applied to every DU output. The levels are written into one preallocated table
by a custom autograd function whose backward replays them top-down (``_CKYFunction``), since growing the
table by concatenation would copy O(T^3 d) per sentence.
"""
import torch
from torch import Tensor, nn
from torch.nn import functional as F

from fairseq_syntax.errors import OptionError
from fairseq_syntax.modules.subnormal import flush_subnormal, subnormals_flushed


def level_offset(level, width: int):
    """Flat index of cell (level, 0) in a table over ``width`` positions (levels 1-based; ints or tensors)."""
    return (level - 1) * width - (level - 1) * (level - 2) // 2


def table_size(width: int) -> int:
    """Number of cells of a full CKY table over ``width`` positions: T(T+1)/2."""
    return width * (width + 1) // 2


def cell_coordinates(width: int, device=None):
    """(level, start) of every flat cell, each a (N,) long tensor (level 1-based, start 0-based)."""
    levels = torch.arange(1, width + 1, device=device)
    sizes = width - levels + 1
    level = torch.repeat_interleave(levels, sizes)
    start = torch.arange(level.numel(), device=device) - level_offset(level, width)
    return level, start


def split_candidates(level: int, width: int, device=None):
    """Flat indices of the left and right operands of every (cell, split) of a level: two (T-i+1, i-1) tensors.

    Cell (i, j), split k (1 <= k <= i-1): left = (k, j), right = (i-k, j+k) (Eq. 12).
    """
    j = torch.arange(width - level + 1, device=device).unsqueeze(1)
    k = torch.arange(1, level, device=device).unsqueeze(0)
    return level_offset(k, width) + j, level_offset(level - k, width) + j + k


NORMS = ["layer", "none"]


class DeductionUnit(nn.Module):
    """DU(a, b) of Fig. 2: bottleneck CNN1 -> CNN2 -> CNN3 with a CNN4 shortcut over the cell pair.

    ``raw(a, b)`` is the output whose sum chooses a cell's split (Eq. 12); ``forward(a, b)`` is the cell state
    stored in the table: the raw output, layer-normalised with ``norm="layer"`` (see the module docstring).
    """

    def __init__(self, dim: int, norm: str = "layer"):
        super().__init__()
        if dim % 2:
            raise OptionError(f"--embed-dim {dim}: the CKY-CNN needs an even state size (CNN1/CNN2 have d/2 channels)")
        if norm not in NORMS:
            raise OptionError(f"--cky-norm: unknown Deduction Unit normalisation {norm!r}: one of {NORMS}")
        half = dim // 2
        self.cnn1 = nn.Linear(dim, half)  # 1x1, d/2 channels, on each cell
        self.cnn2 = nn.Linear(2 * half, half)  # 1x2, d/2 channels, over the pair
        self.cnn3 = nn.Linear(half, dim)  # 1x1, d channels
        self.cnn4 = nn.Linear(2 * dim, dim)  # 1x2, d channels, residual branch over the pair
        self.norm = nn.LayerNorm(dim) if norm == "layer" else nn.Identity()

    def raw(self, left: Tensor, right: Tensor) -> Tensor:
        pair = torch.cat([F.relu(self.cnn1(left)), F.relu(self.cnn1(right))], dim=-1)
        return self.cnn3(F.relu(self.cnn2(pair))) + self.cnn4(torch.cat([left, right], dim=-1))

    def forward(self, left: Tensor, right: Tensor) -> Tensor:
        return self.norm(self.raw(left, right))

    def cell_terms(self, states: Tensor):
        """Per-cell terms (za, zb, pl, pr) with DU(a, b) = CNN3(relu(za_a + zb_b)) + pl_a + pr_b.

        za = W2_left relu(CNN1 a), zb = W2_right relu(CNN1 b) + b2 (CNN2 split by the cell it reads),
        pl = W4_left a, pr = W4_right b + b4 (CNN4 likewise). Only CNN3 and the ReLU act on the pair.
        """
        half = self.cnn1.out_features
        dim = self.cnn4.out_features
        a = F.relu(self.cnn1(states))
        w2, w4 = self.cnn2.weight, self.cnn4.weight
        return (a @ w2[:, :half].t(), a @ w2[:, half:].t() + self.cnn2.bias,
                states @ w4[:, :dim].t(), states @ w4[:, dim:].t() + self.cnn4.bias)

    def combine(self, za: Tensor, zb: Tensor, pl: Tensor, pr: Tensor) -> Tensor:
        """raw(a, b) from the cell terms of a (za, pl) and b (zb, pr)."""
        return self.cnn3(F.relu(za + zb)) + pl + pr

    def score_weights(self):
        """(u3, c): sum(raw(a, b)) = u3 . relu(za_a + zb_b) + sum(pl_a) + sum(pr_b) + c, u3 = 1^T W3, c = sum(b3)."""
        return self.cnn3.weight.sum(0), self.cnn3.bias.sum()


class CKYTable(nn.Module):
    """The CKY-CNN (Eq. 12) over a batch of right-padded encoder states, level by level."""

    def __init__(self, dim: int, dropout: float = 0.0, norm: str = "layer"):
        super().__init__()
        self.du = DeductionUnit(dim, norm)
        self.dropout = dropout

    def forward(self, states: Tensor, lengths: Tensor):
        """states (B, T, d) right-padded, lengths (B,) -> cells (B, N, d) level-major, padding (B, N) bool.

        Also returns the chosen split point k of every cell (B, N) (0 on level 1), for inspection and tests.
        """
        bsz, width, _ = states.shape
        level, start = cell_coordinates(width, states.device)
        padding = (start + level).unsqueeze(0) > lengths.unsqueeze(1)
        p = self.dropout if self.training else 0.0
        params = tuple(self.du.parameters())
        # the table is built in the parameters' dtype, outside autocast (its backward replays the DU and
        # must see the same dtypes as the forward did); autocast resumes on the cells
        with torch.autocast(states.device.type, enabled=False):
            cells, splits = _CKYFunction.apply(states.to(params[0].dtype), self.du, p, *params)
        return cells, padding, splits


class _CKYFunction(torch.autograd.Function):
    """Eq. 12 level by level into one preallocated table; the backward replays the levels top-down.

    Forward (no autograd graph): per level, choose every cell's split from the per-cell terms
    (O(d) per candidate), run the DU (and its normalisation) on the winners only, apply dropout,
    write the level. Backward:
    from the top level down, recompute the level's DU on its saved winners with autograd, pass the
    level's gradient through it, and scatter-add the input gradients into the cells that were
    chosen (each cell's gradient is complete before its level is reached: only higher levels use
    it). Memory: the table, the winners' indices and the dropout masks; no per-level copies.
    Subnormal gradients (:mod:`fairseq_syntax.modules.subnormal`) are dropped: each level's gradient
    loses its subnormal entries, and on the CPU the loop runs with subnormals flushed to zero.
    """

    @staticmethod
    def forward(ctx, states, du, p, *params):
        bsz, width, dim = states.shape
        n = table_size(width)
        table = states.new_empty(bsz, n, dim)
        table[:, :width] = states
        splits = states.new_zeros(bsz, n, dtype=torch.long)
        batch = torch.arange(bsz, device=states.device).unsqueeze(1)
        half = du.cnn1.out_features
        # Per-cell terms, filled level by level. The split candidates of level i are read as plain slices:
        # za and sa by (level, start): the left operands (k, j), k = 1..i-1, are rows 0..i-2, starts j;
        # zb and sb by (T - level, end): the right operands (i-k, j+k) all end at j + i - 1 and their
        # rows T-i+k run with k. pl, pr (d wide, read for the winners only) are flat like the table.
        za, zb = (states.new_zeros(bsz, width, width, half) for _ in range(2))
        sa, sb = (states.new_zeros(bsz, width, width) for _ in range(2))
        pl, pr = (states.new_empty(bsz, n, dim) for _ in range(2))
        u3, const = du.score_weights()

        def store(level, terms):
            w = width - level + 1
            lo = level_offset(level, width)
            za[:, level - 1, :w], pl[:, lo:lo + w] = terms[0], terms[2]
            zb[:, width - level, level - 1:], pr[:, lo:lo + w] = terms[1], terms[3]
            sa[:, level - 1, :w] = terms[2].sum(-1)
            sb[:, width - level, level - 1:] = terms[3].sum(-1) + const

        store(1, du.cell_terms(states))
        chosen, masks = [], []  # per level: winners' flat indices, dropout mask (empty: none)
        for i in range(2, width + 1):
            w = width - i + 1  # cells of the level; also the row of its first right operands in zb, sb
            left_z, left_s = za[:, :i - 1, :w], sa[:, :i - 1, :w]  # (B, K, W, d/2), (B, K, W), K = i - 1 splits
            right_z, right_s = zb[:, w:, i - 1:], sb[:, w:, i - 1:]
            score = F.relu(left_z + right_z) @ u3 + left_s + right_s  # (B, K, W): sum(DU) per candidate
            best = score.argmax(dim=1)  # (B, W): k - 1 of the winning split
            j = torch.arange(w, device=states.device)
            k = best + 1
            li = level_offset(k, width) + j  # (B, W) flat cells (k, j) and (i-k, j+k)
            ri = level_offset(i - k, width) + j + k
            new = du.norm(du.combine(za[batch, best, j], zb[batch, w + best, i - 1 + j], pl[batch, li], pr[batch, ri]))
            mask = None
            if p > 0:  # a bool mask (uniform draws: faster than bernoulli_ on CPU), scaled by 1 / (1 - p)
                mask = torch.rand_like(new) < 1 - p
                new = new * mask * (1 / (1 - p))
            lo = level_offset(i, width)
            table[:, lo:lo + w] = new
            splits[:, lo:lo + w] = k
            store(i, du.cell_terms(new))
            chosen += [li, ri]
            masks.append(mask if mask is not None else li.new_empty(0))
        ctx.du, ctx.width, ctx.p = du, width, p
        ctx.save_for_backward(table, *chosen, *masks)
        ctx.mark_non_differentiable(splits)
        return table, splits

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, grad_table, _grad_splits):
        table, *saved = ctx.saved_tensors
        table = table.detach()  # an output of this function: cut it from the graph
        du, width = ctx.du, ctx.width
        chosen, masks = saved[:2 * (width - 1)], saved[2 * (width - 1):]
        params = tuple(du.parameters())
        wanted = [q for q, need in zip(params, ctx.needs_input_grad[3:]) if need]  # frozen parameters: none
        grad = grad_table.clone()
        param_grads = [torch.zeros_like(q) for q in wanted]
        batch = torch.arange(table.size(0), device=table.device).unsqueeze(1)
        with subnormals_flushed(table.device):
            for i in range(width, 1, -1):
                li, ri, mask = chosen[2 * (i - 2)], chosen[2 * (i - 2) + 1], masks[i - 2]
                lo = level_offset(i, width)
                g = flush_subnormal(grad[:, lo:lo + li.size(1)])
                if mask.numel():
                    g = g * mask * (1 / (1 - ctx.p))
                with torch.enable_grad():
                    left = table[batch, li].requires_grad_()
                    right = table[batch, ri].requires_grad_()
                    out = du(left, right)
                    gl, gr, *gp = torch.autograd.grad(out, (left, right, *wanted), g)
                grad.index_put_((batch, li), gl, accumulate=True)
                grad.index_put_((batch, ri), gr, accumulate=True)
                for acc, gq in zip(param_grads, gp):
                    acc += gq
        grads = iter(param_grads)
        return (grad[:, :width], None, None, *(next(grads) if need else None for need in ctx.needs_input_grad[3:]))
