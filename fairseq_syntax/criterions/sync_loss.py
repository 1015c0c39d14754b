"""The synchronous syntactic attention loss L_sync.

Deguchi, Tamura & Ninomiya (2021), "Synchronous Syntactic Attention for
Transformer Neural Machine Translation", Sec. 4:

* D_mapped = C E C^T (Eq. 7): the encoder's parse attention E (I x I), mapped
  into the target space by the encoder-decoder attention C (J x I) of decoder
  layer l_sync;
* D' = softmax(mask(D_mapped)) (Eq. 8), future positions (q > t) masked as in
  the decoder's self-attention;
* L_sync = sum_{t,q} (D'_tq - D_tq)^2 (Eq. 9) against the decoder's parse
  attention D (J x J); masked elements of D' and D count as zero, so only
  unmasked (q <= t), unpadded (t and q real decoder inputs) pairs contribute.

A matrix product, not a diagonal: the only public precursor took the diagonal
of E in its einsum. Rows and columns are decoder positions: row j of C is
the encoder-decoder attention of the state that predicts target token j, so
with the default ``--dbsa-decoder-rows predicting`` row j and column l of D
and of C E C^T stand for the same target tokens (j, and the parent l). With
``input`` rows, D's row j is the state whose input is target token j - 1
(position 0: the EOS that starts decoding), one position away from C's.
Rows are the decoder's non-padding positions.
"""
from typing import Tuple

import torch
from torch import Tensor


def synchronous_attention_loss(enc_parse: Tensor, dec_parse: Tensor, cross: Tensor,
                               tgt_real: Tensor) -> Tuple[Tensor, Tensor]:
    """(sum of squared differences, number of real target rows).

    enc_parse: (B, I, I) E; dec_parse: (B, J, J) D; cross: (B, J, I) C;
    tgt_real: (B, J) bool, decoder-input positions that hold a token (not pad).
    """
    mapped = torch.matmul(torch.matmul(cross.float(), enc_parse.float()), cross.float().transpose(1, 2))  # Eq. 7
    J = mapped.size(1)
    future = torch.ones(J, J, dtype=torch.bool, device=mapped.device).triu(1)
    hidden = future.unsqueeze(0) | ~tgt_real.unsqueeze(1)  # masked columns: the future and padding
    rows = tgt_real & (~hidden).any(-1)  # a real row always sees itself
    logits = mapped.masked_fill(hidden, float("-inf")).masked_fill(~rows.unsqueeze(-1), 0.0)
    d_prime = torch.softmax(logits, dim=-1)  # Eq. 8
    keep = ~hidden & rows.unsqueeze(-1)
    diff = (d_prime - dec_parse.float()).masked_fill(~keep, 0.0)
    return diff.pow(2).sum(), rows.sum()  # Eq. 9
