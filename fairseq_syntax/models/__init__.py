"""fairseq models of the plugin."""
from fairseq_syntax.models import syntax_transformer  # noqa: F401  (first: presets register onto it)
from fairseq_syntax.models import presets  # noqa: F401,E402
