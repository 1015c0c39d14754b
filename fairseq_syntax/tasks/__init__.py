"""fairseq tasks of the plugin, and the criterions that go with them (registered on import; fairseq's
``--user-dir`` imports this package)."""
from fairseq_syntax import criterions  # noqa: F401
from fairseq_syntax.tasks import syntax_translation  # noqa: F401
