"""fairseq-syntax: syntax-aware NMT systems as a fairseq plugin.

Load with ``fairseq-train --user-dir fairseq_syntax ...``. Importing the
package registers the ``syntax_translation`` task (and the models and
criterions of later modules) and allow-lists the globals that fairseq
checkpoints pickle, so that they load under torch's default
``weights_only=True`` (see :mod:`fairseq_syntax.checkpoint_safety`), and
makes fairseq's prefetching threads end before the interpreter does (see
:mod:`fairseq_syntax.prefetch_shutdown`).

With ``FAIRSEQ_SYNTAX_DATA_ONLY=1`` in the environment nothing is registered
and neither torch nor fairseq is imported: the preprocessing worker
processes (:mod:`fairseq_syntax.data.chunked`) set it, so that each starts in
a fraction of a second instead of importing fairseq's model zoo.
"""
__version__ = "0.1.0"

import os as _os

if not _os.environ.get("FAIRSEQ_SYNTAX_DATA_ONLY"):
    from fairseq_syntax import checkpoint_safety  # noqa: E402

    checkpoint_safety.allow_fairseq_checkpoint_globals()

    from fairseq_syntax import prefetch_shutdown  # noqa: E402

    prefetch_shutdown.install()

    from fairseq_syntax import criterions, models, tasks  # noqa: E402,F401
