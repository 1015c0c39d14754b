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
line win. Without a launcher environment it is exactly ``fairseq-train``.

    torchrun --nproc_per_node 2 $(which fairseq-syntax-train) data-bin --user-dir fairseq_syntax --cpu ...
"""
import os
import sys
from typing import Dict, List


def launcher_options(argv: List[str], env: Dict[str, str], cuda: bool) -> List[str]:
    """The options to add to ``argv`` for the launcher described by ``env`` (empty without one)."""
    if not all(k in env for k in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")):
        return []
    given = {a.split("=", 1)[0] for a in argv if a.startswith("--")}
    wanted = [("--distributed-init-method", "env://"), ("--distributed-world-size", env["WORLD_SIZE"]),
              ("--distributed-rank", env["RANK"])]
    if cuda:
        wanted.append(("--device-id", env.get("LOCAL_RANK", "0")))
    else:
        wanted += [("--distributed-backend", "gloo"), ("--ddp-backend", "legacy_ddp")]
    extra = [x for opt, value in wanted if opt not in given for x in (opt, value)]
    if "--distributed-no-spawn" not in given:
        extra.append("--distributed-no-spawn")
    return extra


def cli_main():
    import torch

    # this module's import made fairseq_syntax a loaded module, so fairseq's --user-dir handling will not import
    # the plugin's tasks/ and models/ itself: register them here
    import fairseq_syntax.plugin  # noqa: F401

    sys.argv += launcher_options(sys.argv[1:], dict(os.environ), torch.cuda.is_available())
    from fairseq_cli.train import cli_main as fairseq_train

    fairseq_train()


if __name__ == "__main__":
    cli_main()
