"""fairseq models of the plugin."""
from fairseq_syntax.models import syntax_transformer  # noqa: F401  (first: presets register onto it)
from fairseq_syntax.models import presets  # noqa: F401,E402
from fairseq_syntax.models import attention_lstm  # noqa: F401,E402
