"""fairseq-train's options for a torchrun (or any env://) launch, on CPUs as on GPUs.

fairseq reads a torchrun launch from the environment (RANK, WORLD_SIZE, ...) only when it sees CUDA devices:
on CPU its default world size is 1, so each process would train alone. :func:`launcher_options` turns the
launcher's environment into the options fairseq already has (docs/distributed.md); ``fairseq-syntax-train``
(:mod:`fairseq_syntax.cli.train`) adds them to its command line.
"""
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
