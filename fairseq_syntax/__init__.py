"""fairseq-syntax: syntax-aware NMT systems as a fairseq plugin.

Load with ``fairseq-train --user-dir fairseq_syntax ...``: fairseq imports
this package and then its ``tasks`` and ``models`` subpackages, which
register the ``syntax_translation`` task, the criterions and the models (see
:mod:`fairseq_syntax.plugin`). In Python, ``import fairseq_syntax.plugin``
does the same.

Importing the package itself registers nothing and imports neither torch nor
fairseq: the data and scoring tools (parsing, alignment, BPE, binarising,
evaluation) import only what they use, so they start in a fraction of a
second. Which modules import what is drawn in docs/design.md.
"""
__version__ = "0.1.0"
