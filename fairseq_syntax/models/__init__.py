"""fairseq models of the plugin (registered on import; fairseq's ``--user-dir`` imports this package). The
presets (named architectures) import the two models they register onto. Importing them changes nothing else
in the process: the plugin's start-up is :mod:`fairseq_syntax.patches.startup`."""
from fairseq_syntax.models import presets  # noqa: F401  (the models and their named architectures)
