"""Everything the plugin registers with fairseq, in one import.

fairseq's ``--user-dir fairseq_syntax`` imports the package and its ``tasks``
and ``models`` subpackages; this module imports the same (and the
criterions, which ``tasks`` imports). Import it where fairseq is driven from
Python (the analysis commands, the hub interface, tests), or when
``fairseq_syntax`` was imported before fairseq's ``--user-dir`` handling ran
(fairseq then skips the subpackages).

On import, ``models`` also allow-lists the globals fairseq checkpoints pickle
(:mod:`fairseq_syntax.checkpoint_safety`: torch's ``weights_only=True`` stays
on) and makes fairseq's prefetching threads end before the interpreter does
(:mod:`fairseq_syntax.prefetch_shutdown`).
"""
from fairseq_syntax import criterions, models, tasks  # noqa: F401
