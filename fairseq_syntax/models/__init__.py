"""fairseq models of the plugin (registered on import; fairseq's ``--user-dir`` imports this package).

Loading a checkpoint needs the allow-list of :mod:`fairseq_syntax.checkpoint_safety` (torch's
``weights_only=True``), and a training's prefetch threads must end before the interpreter
(:mod:`fairseq_syntax.prefetch_shutdown`): both are installed here, where every fairseq program that
loads the plugin passes.
"""
from fairseq_syntax import checkpoint_safety, prefetch_shutdown

checkpoint_safety.allow_fairseq_checkpoint_globals()
prefetch_shutdown.install()

from fairseq_syntax.models import (
    attention_lstm,  # noqa: F401,E402
    presets,  # noqa: F401,E402
    syntax_transformer,  # noqa: F401,E402  (first: presets register onto it)
)
