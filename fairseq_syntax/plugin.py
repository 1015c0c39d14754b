"""Everything the plugin registers with fairseq, in one import.

fairseq's ``--user-dir fairseq_syntax`` imports the package and its ``tasks``
and ``models`` subpackages; this module imports the same (and the
criterions, which ``tasks`` imports). Import it where fairseq is driven from
Python (the analysis commands, the hub interface, tests), or when
``fairseq_syntax`` was imported before fairseq's ``--user-dir`` handling ran
(fairseq then skips the subpackages).

Importing it also runs the plugin's start-up (:func:`fairseq_syntax.patches.startup.install`: the checkpoint
allow-list for torch's ``weights_only=True``, named checkpoint errors, prefetch threads that end before the
interpreter, one-line failures of fairseq's commands), as fairseq's ``--user-dir`` import does.
"""
from fairseq_syntax import criterions, models, tasks  # noqa: F401
from fairseq_syntax.patches import startup  # noqa: F401

startup.install()
