"""fairseq models of the plugin (registered on import; fairseq's ``--user-dir`` imports this package).

Loading a checkpoint needs the allow-list of :mod:`fairseq_syntax.checkpoint_safety` (torch's
``weights_only=True``), a checkpoint that cannot be read is named (:mod:`fairseq_syntax.checkpoint_reading`),
a training's prefetch threads must end before the interpreter (:mod:`fairseq_syntax.prefetch_shutdown`), and
the plugin's expected failures end a fairseq command with one line (:mod:`fairseq_syntax.error_display`): all
are installed here, where every fairseq program that loads the plugin passes. The presets (named architectures) import the two models they register onto.
"""
from fairseq_syntax import checkpoint_reading, checkpoint_safety, error_display, prefetch_shutdown
from fairseq_syntax.models import presets  # noqa: F401  (the models and their named architectures)

checkpoint_safety.allow_fairseq_checkpoint_globals()
checkpoint_reading.install()
prefetch_shutdown.install()
error_display.install_excepthook()
