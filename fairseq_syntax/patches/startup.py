"""The plugin's start-up: what it changes in the process, in one place.

A fairseq program that loads the plugin (``--user-dir fairseq_syntax``: fairseq imports the package's ``tasks``
and ``models``) and Python code that imports :mod:`fairseq_syntax.plugin` get these process-wide changes, once:

* torch's safe loading (``weights_only=True``) stays on, with the globals fairseq checkpoints pickle
  allow-listed (:mod:`fairseq_syntax.patches.checkpoint_safety`);
* fairseq's checkpoint loading names a checkpoint that cannot or must not be read, and one that does not fit
  the model (:mod:`fairseq_syntax.patches.checkpoint_reading`);
* fairseq's prefetching threads end before the interpreter does (:mod:`fairseq_syntax.patches.prefetch_shutdown`);
* ``--bf16`` without ``--tpu``, which fairseq 0.12's option parsing turns into XLA, trains in bf16 on GPUs and
  CPUs under ``fairseq-syntax-train`` and is refused under ``fairseq-train`` with one line naming that command
  (:mod:`fairseq_syntax.patches.precision`);
* an expected failure ends a fairseq command with one line (:mod:`fairseq_syntax.patches.error_display`);
* the deprecation warnings and log lines every fairseq command prints, which ask nothing of the user, are
  filtered, each by its text and module (:mod:`fairseq_syntax.patches.known_warnings`).

:func:`install` is called by ``fairseq_syntax/tasks/__init__.py`` (fairseq's ``--user-dir`` import) and by
:mod:`fairseq_syntax.plugin`; importing the models alone changes nothing.
"""

_installed = False


def install() -> None:
    """Make the process-wide changes above (idempotent)."""
    global _installed
    if _installed:
        return
    from fairseq_syntax.patches import (checkpoint_reading, checkpoint_safety, error_display, known_warnings,
                                        precision, prefetch_shutdown)

    checkpoint_safety.allow_fairseq_checkpoint_globals()
    checkpoint_reading.install()
    prefetch_shutdown.install()
    precision.install()
    error_display.install_excepthook()
    known_warnings.install()
    _installed = True
