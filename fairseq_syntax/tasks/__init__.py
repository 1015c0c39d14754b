"""fairseq tasks of the plugin, and the criterions that go with them (registered on import). fairseq's
``--user-dir fairseq_syntax`` loads the plugin through this package: the plugin's start-up
(:mod:`fairseq_syntax.patches.startup`: the checkpoint allow-list, named checkpoint errors, prefetch threads that end,
one-line failures) happens here, once."""
from fairseq_syntax import criterions  # noqa: F401
from fairseq_syntax.patches import startup  # noqa: F401
from fairseq_syntax.tasks import syntax_translation  # noqa: F401

startup.install()
