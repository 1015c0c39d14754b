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
a fraction of a second instead of importing fairseq's model zoo. The same
holds when the running program is one of the data and scoring tools, which
need no model (``fairseq-syntax-{parse,align,binarize,prepare,synth,multitask,
evaluate}`` and ``preprocess/*.py``): each saves the 5 s that importing
fairseq's model zoo costs on a small CPU (binarize and prepare import
``fairseq.data`` when they binarize). Any other program (fairseq's CLIs with
``--user-dir``, Python sessions, tests) registers everything on import.
"""
__version__ = "0.1.0"

import os as _os
import sys as _sys

# console scripts (and preprocess/ scripts) that use no model: nothing to register when they run
_DATA_TOOLS = {f"fairseq-syntax-{t}" for t in ("parse", "align", "binarize", "prepare", "synth", "multitask", "evaluate")}


def _data_tool_running() -> bool:
    prog = _sys.argv[0] if _sys.argv else ""
    if _os.path.basename(prog) in _DATA_TOOLS:
        return True
    here = _os.path.dirname(_os.path.dirname(_os.path.abspath(__file__)))
    return _os.path.dirname(_os.path.abspath(prog)) == _os.path.join(here, "preprocess") if prog else False


if not (_os.environ.get("FAIRSEQ_SYNTAX_DATA_ONLY") or _data_tool_running()):
    from fairseq_syntax import checkpoint_safety  # noqa: E402

    checkpoint_safety.allow_fairseq_checkpoint_globals()

    from fairseq_syntax import prefetch_shutdown  # noqa: E402

    prefetch_shutdown.install()

    from fairseq_syntax import criterions, models, tasks  # noqa: E402,F401
