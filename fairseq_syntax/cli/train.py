"""``fairseq-syntax-train``: ``fairseq-train`` that also runs under ``torchrun`` without GPUs.

fairseq reads a torchrun launch from the environment (RANK, WORLD_SIZE, ...)
only when it sees CUDA devices: on CPU its default world size is 1, so each
process trains alone, and its launcher path divides by the GPU count. This
command takes the launcher's environment and passes it to fairseq as the
options fairseq already has (``--distributed-init-method env://``,
``--distributed-world-size``, ``--distributed-rank``,
``--distributed-no-spawn``, ``--device-id`` from LOCAL_RANK on GPUs), plus,
without CUDA, ``--distributed-backend gloo --ddp-backend legacy_ddp`` unless
given (NCCL and PyTorch's DDP wrapper need GPUs). Options given on the command
line win.

``--bf16`` and ``--memory-efficient-bf16`` train in bf16 on GPUs and on the CPU
(:mod:`fairseq_syntax.patches.precision`), where fairseq 0.12 turns them into ``--tpu``
(XLA); ``--tpu`` given keeps fairseq's meaning. Otherwise, without a
launcher environment, it is exactly ``fairseq-train``.

    torchrun --nproc_per_node 2 $(which fairseq-syntax-train) data-bin --user-dir fairseq_syntax --cpu ...
    torchrun --nproc_per_node 4 $(which fairseq-syntax-train) data-bin --user-dir fairseq_syntax --bf16 ...
"""
import os
import sys

from fairseq_syntax.patches import precision
from fairseq_syntax.launcher import launcher_options


def cli_main():
    # fairseq_cli.train first, as fairseq-train imports it: it configures logging (fairseq's format on stdout,
    # LOGLEVEL or INFO) before it imports fairseq, whose import would otherwise set the root logger to DEBUG in
    # Python's default format (fairseq/models/wav2vec/wav2vec2_classification.py calls logging.basicConfig)
    from fairseq_cli.train import cli_main as fairseq_train
    import torch

    # this module's import made fairseq_syntax a loaded module, so fairseq's --user-dir handling will not import
    # the plugin's tasks/ and models/ itself: register them here
    import fairseq_syntax.plugin  # noqa: F401
    from fairseq_syntax.patches.user_dir import complete_argv

    complete_argv()  # --user-dir from any folder (added when absent)
    sys.argv += launcher_options(sys.argv[1:], dict(os.environ), torch.cuda.is_available())
    with precision.bf16_without_xla():
        fairseq_train()


if __name__ == "__main__":
    cli_main()
