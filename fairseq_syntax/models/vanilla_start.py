"""A syntax model started from a vanilla transformer's checkpoint (fairseq's ``--finetune-from-model`` or
``--restore-file``): every parameter the two share is loaded as it is, and each mechanism's own parameters start
where the model computes the pretrained function wherever the mechanism allows it (docs/models.md, "Starting
from a pretrained model"):

* relative key and value terms (Shaw et al. 2018; Omote et al. 2019, Eq. 17-22: transformer_rel, _dep,
  _dep_rel): zero, so that e_ij = x_i W^Q (x_j W^K)^T / sqrt(d_z) and z_i = sum_j alpha_ij x_j W^V, the
  pretrained attention, until training moves them;
* DBSA's parse heads and S&H's label embeddings: their own initialisation (the parse head replaces a head's
  output, the labels replace embedding dimensions: the function changes at update 0; docs/models.md says how
  much).

A checkpoint that holds none of the model's mechanism parameters is a vanilla one; one that holds some is a
syntax model's and loads strictly, as before. A shared parameter of another shape (another dictionary, another
size) stops the load with one line naming it and both shapes (:func:`fairseq_syntax.patches.checkpoint_reading.
mismatched_checkpoint`).
"""
from __future__ import annotations

import logging
from typing import Dict, List, Tuple

logger = logging.getLogger(__name__)

#: the module names that hold a mechanism's own parameters (everything else is the vanilla transformer's)
MECHANISM_PARTS = ("relative", "parse_head", "label_embedding")
#: the mechanisms whose parameters start at zero: the pretrained function at update 0
ZERO_PARTS = ("relative",)


def mechanism_keys(keys) -> List[str]:
    """The keys of a state dict that belong to a syntax mechanism."""
    return [k for k in keys if any(part in k.split(".") for part in MECHANISM_PARTS)]


def complete_from_vanilla(own: Dict, given: Dict) -> Tuple[Dict, Dict[str, str]]:
    """``given`` (a checkpoint's model state) completed with the mechanism parameters of ``own`` (the model's
    state dict) when it is a vanilla checkpoint, and how each of those started (``{key: "zero" | "its own
    initialisation"}``; empty for a checkpoint of a syntax model, returned as it is)."""
    mine = mechanism_keys(own)
    if not mine or mechanism_keys(given):
        return given, {}
    out, started = dict(given), {}
    for key in mine:
        zero = any(part in key.split(".") for part in ZERO_PARTS)
        out[key] = own[key].detach().clone().zero_() if zero else own[key].detach().clone()
        started[key] = "zero" if zero else "its own initialisation"
    return out, started


def log_start(started: Dict[str, str]) -> None:
    """One line per way the mechanism parameters started, with how many and which modules."""
    for how in sorted(set(started.values())):
        keys = [k for k, v in started.items() if v == how]
        modules = sorted({".".join(k.split(".")[-3:-1]) for k in keys})
        logger.info("started from a vanilla checkpoint: %d mechanism parameter(s) (%s) at %s, every other "
                    "parameter as the checkpoint holds it", len(keys), ", ".join(modules), how)
