"""Decoder attention of the LSTM models: Luong dot attention and CKY-based attention.

Watanabe et al. (2017), Sec. 2 and 3 (after Luong et al. 2015):

* ``DotAttention`` (Eq. 8-10): alpha_j(i) = softmax_i(h_i . s_j^(2)),
  c_j = sum_i alpha_j(i) h_i, s^_j = tanh(W_c [s_j^(2); c_j]). fairseq's
  ``AttentionLayer`` with the identity in place of its input projection
  (fairseq's is Luong's "general" score; the paper uses "dot").
* ``CKYAttention`` (Eq. 13-16): one softmax jointly over the T encoder states
  and every cell of the CKY table (alpha' over states, alpha'' over cells),
  c'_j = sum alpha' h + sum alpha'' h^cky (Eq. 15), and
  s^_j = tanh(W^ [s_j^(2); c_j; c'_j]) with c_j the states-only context of
  Eq. 9 (Eq. 16). As Eq. 13-14 are written, the joint softmax runs over the T
  states *and* the T level-1 cells (which equal the states).

The encoder hands CKY attention one memory, ``[states; cells]`` along the
source axis (T + T(T+1)/2 rows, fairseq's time-major layout), so that
fairseq's LSTM decoder, its beam search and ``reorder_encoder_out`` carry it
unchanged: the table is computed once per source sentence and reused at
every decoding step. ``memory_states`` recovers T from the memory length.
The attention weights returned to fairseq are the word-level alpha of Eq. 8
(over the states; what ``--print-alignment`` reads); within
``CKYAttention.joint_weights()`` (the Fig. 4 plot command) they are the joint alpha', alpha'' over the
whole memory.
"""
import math
from contextlib import contextmanager

import torch
from fairseq.models.lstm import AttentionLayer, Linear
from torch import Tensor, nn
from torch.nn import functional as F

from fairseq_syntax.modules.cky_table import table_size


def memory_size(num_states: int) -> int:
    """Rows of a CKY memory over ``num_states`` encoder states: T + T(T+1)/2."""
    return num_states + table_size(num_states)


def memory_states(memory_len: int) -> int:
    """T such that T + T(T+1)/2 == memory_len (the inverse of ``memory_size``)."""
    t = int(round((math.sqrt(9 + 8 * memory_len) - 3) / 2))
    if memory_size(t) != memory_len:
        raise ValueError(f"a CKY attention memory of {memory_len} rows is not T states + T(T+1)/2 cells")
    return t


class DotAttention(AttentionLayer):
    """Luong's global dot attention (Eq. 8-10): fairseq's attention layer without the query projection."""

    def __init__(self, dim: int):
        super().__init__(dim, dim, dim, bias=False)
        self.input_proj = nn.Identity()


class CKYAttention(nn.Module):
    """Joint attention over encoder states and CKY cells (Eq. 13-16), fairseq's attention-layer interface.

    The memory may hold one row per sentence while the queries hold ``k`` consecutive rows per sentence
    (beam search: see ``AttentionLSTMEncoder.reorder_encoder_out``): each sentence's memory is then read
    once for its k hypotheses (a matrix product) instead of being copied k times.
    """

    def __init__(self, dim: int):
        super().__init__()
        self.output_proj = Linear(3 * dim, dim, bias=False)  # W^ in R^{d x 3d}
        # fairseq's LSTMDecoder calls the attention with (query, memory, padding) only: which weights it returns
        # is set for the duration of a `with joint_weights():` block (the analysis's Fig. 4), never left set
        self.return_joint = False

    @contextmanager
    def joint_weights(self):
        """Within the block, return the joint weights over states and cells (Eq. 13-14) instead of Eq. 8's."""
        before, self.return_joint = self.return_joint, True
        try:
            yield self
        finally:
            self.return_joint = before

    def forward(self, query: Tensor, memory: Tensor, padding_mask: Tensor):
        """query s_j^(2) (R, d); memory (M, B, d) = [states; cells], R = k B; padding_mask (M, B).

        Returns s^_j (R, d) and weights (M, R): Eq. 8's alpha on the state rows and zeros on the cell
        rows, or within :meth:`joint_weights` the joint alpha', alpha'' (Eq. 13-14).
        """
        num_states = memory_states(memory.size(0))
        ledger = getattr(memory, "_cky_ledger", None) if torch.is_grad_enabled() else None
        mem = memory.transpose(0, 1)  # (B, M, d), a view
        rows, dim = query.shape
        bsz = mem.size(0)
        q = query.view(bsz, rows // bsz, dim)  # (B, k, d)
        scores = _memory_product(mem, q, ledger, "scores").transpose(1, 2).float()  # (B, k, M)
        if padding_mask is not None:
            scores = scores.masked_fill(padding_mask.t().unsqueeze(1), float("-inf"))
        joint = F.softmax(scores, dim=-1).type_as(query)  # alpha' and alpha'' (Eq. 13-14)
        states_only = F.softmax(scores[..., :num_states], dim=-1).type_as(query)  # alpha of Eq. 8
        context = _memory_product(mem, states_only, ledger, "read")  # c_j, Eq. 9
        cky_context = _memory_product(mem, joint, ledger, "read")  # c'_j, Eq. 15
        out = torch.cat([query, context.reshape(rows, dim), cky_context.reshape(rows, dim)], dim=1)
        weights = joint if self.return_joint else F.pad(states_only, (0, memory.size(0) - num_states))
        return torch.tanh(self.output_proj(out)), weights.reshape(rows, -1).t()  # Eq. 16


def defer_memory_grad(memory: Tensor) -> Tensor:
    """The memory for one decoder pass whose per-step gradients are summed in one product at the end.

    Each decoding step reads the whole memory twice (scores, context); letting autograd add up a
    (B, M, d) gradient per step would move T x M x d floats per sentence through memory. Instead
    every step records its two factors (the memory gradient of a batched product is an outer
    product) and the backward of this wrapper forms their sum with one batched matrix product.
    """
    if not (torch.is_grad_enabled() and memory.requires_grad):
        return memory
    ledger = []
    wrapped = _DeferredMemory.apply(memory, ledger)
    wrapped._cky_ledger = ledger
    return wrapped


def _product(mem, x, kind):
    """kind "scores": memory (B, M, d) x queries (B, k, d) -> (B, M, k);
    kind "read": weights (B, k, m) over the first m memory rows -> (B, k, d)."""
    if kind == "scores":
        return torch.bmm(mem, x.transpose(1, 2))
    return torch.bmm(x, mem[:, :x.size(-1)])


def _memory_product(mem, x, ledger, kind):
    """``_product``, its memory gradient deferred to the ledger when there is one (training)."""
    return _product(mem, x, kind) if ledger is None else _MemoryProduct.apply(mem, x, ledger, kind)


def _graph_task():
    """The id of the backward pass being run (entries of passes that never reached the memory are dropped)."""
    current = getattr(torch._C, "_current_graph_task_id", None)
    return current() if current is not None else None


class _MemoryProduct(torch.autograd.Function):
    """One step's product with the memory; its memory gradient goes to the ledger, not to autograd.

    Computed in the memory's dtype outside autocast, so that forward and backward see the same dtypes.
    """

    @staticmethod
    def forward(ctx, mem, x, ledger, kind):
        ctx.ledger, ctx.kind, ctx.x_dtype = ledger, kind, x.dtype
        with torch.autocast(mem.device.type, enabled=False):
            x = x.to(mem.dtype)
            ctx.save_for_backward(mem, x)
            return _product(mem, x, kind)

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, grad):
        mem, x = ctx.saved_tensors
        grad = grad.to(mem.dtype)
        if ctx.kind == "scores":  # y = mem x^T: d mem = g x, d x = g^T mem
            ctx.ledger.append((_graph_task(), grad, x))
            return None, torch.bmm(grad.transpose(1, 2), mem).to(ctx.x_dtype), None, None
        rows = x.size(-1)  # y = x mem[:rows]: d mem[:rows] = x^T g, d x = g mem[:rows]^T
        ctx.ledger.append((_graph_task(), x.transpose(1, 2), grad))
        return None, torch.bmm(grad, mem[:, :rows].transpose(1, 2)).to(ctx.x_dtype), None, None


class _DeferredMemory(torch.autograd.Function):
    """Identity on the memory; its backward adds the ledger's per-step outer products in one product."""

    @staticmethod
    def forward(ctx, memory, ledger):
        ctx.ledger = ledger
        return memory.view_as(memory)

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, grad):
        total = grad.transpose(0, 1).contiguous()  # (B, M, d): gradient from any ordinary use
        by_rows = {}
        task = _graph_task()
        for entry_task, left, right in ctx.ledger:  # left (B, m, k), right (B, k, d)
            if entry_task == task:  # (an earlier pass that stopped short of the memory left stale entries)
                by_rows.setdefault(left.size(1), []).append((left, right))
        for rows, parts in by_rows.items():
            total[:, :rows].baddbmm_(torch.cat([p[0] for p in parts], 2), torch.cat([p[1] for p in parts], 1))
        ctx.ledger.clear()
        return total.transpose(0, 1), None
