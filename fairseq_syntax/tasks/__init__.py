"""fairseq tasks of the plugin."""
from fairseq_syntax.tasks import syntax_translation  # noqa: F401
