"""fairseq models of the plugin (registered on import; fairseq's ``--user-dir`` imports this package).

Loading a checkpoint needs the allow-list of :mod:`fairseq_syntax.checkpoint_safety` (torch's
``weights_only=True``), and a training's prefetch threads must end before the interpreter
(:mod:`fairseq_syntax.prefetch_shutdown`): both are installed here, where every fairseq program that
loads the plugin passes. The presets (named architectures) import the two models they register onto.
"""
from fairseq_syntax import checkpoint_safety, prefetch_shutdown
from fairseq_syntax.models import presets  # noqa: F401  (the models and their named architectures)

checkpoint_safety.allow_fairseq_checkpoint_globals()
prefetch_shutdown.install()
