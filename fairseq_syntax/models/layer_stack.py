"""How the syntax transformer's encoder and decoder build and run their layer stacks: fairseq's LayerDrop with
the supervised layers kept (:class:`LayerDrop`), fairseq's activation checkpointing and FSDP wrapping of a
layer (:func:`wrap_layer`), and the parse heads' form (:func:`parse_form`)."""
from typing import Tuple

import torch
from fairseq.distributed import fsdp_wrap
from fairseq.modules import LayerDropModuleList
from fairseq.modules.checkpoint_activations import checkpoint_wrapper


class LayerDrop:
    """fairseq's LayerDrop (Fan et al. 2020; its ``LayerDropModuleList``: one uniform draw per layer and
    forward, the layer kept when the draw exceeds p), except for the layers in ``keep`` (0-based): the parse-head
    layers and the SyncAttn layer produce what the criterion supervises, so they always run."""

    def __init__(self, layers, keep):
        self.p = layers.p if isinstance(layers, LayerDropModuleList) else 0.0
        self.keep = frozenset(keep)

    def kept(self, n: int, training: bool):
        """Which of the n layers run in this forward (all of them without LayerDrop)."""
        if not self.p:
            return [True] * n
        draws = torch.empty(n).uniform_()  # drawn in eval mode too, as fairseq does
        return [not training or i in self.keep or float(draws[i]) > self.p for i in range(n)]


def wrap_layer(layer, cfg):
    """fairseq's activation checkpointing and FSDP wrapping of a layer (as its build_*_layer does)."""
    if cfg.checkpoint_activations:
        layer = checkpoint_wrapper(layer, offload_to_cpu=cfg.offload_activations)
    return fsdp_wrap(layer, min_num_params=cfg.min_params_to_wrap if not cfg.checkpoint_activations else 0)


def parse_form(args) -> Tuple[str, bool]:
    """The parse heads' bias form and scaling (--dbsa-bias, --dbsa-scaled)."""
    return str(getattr(args, "dbsa_bias", "query")), bool(getattr(args, "dbsa_scaled", False))
