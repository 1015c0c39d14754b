"""From a parallel corpus to a fairseq data-bin with aligned syntax: the ``prepare`` pipeline (parsing,
pair filters, BPE, fairseq-preprocess, alignment, binarising), on top of :mod:`fairseq_syntax.data` and
:mod:`fairseq_syntax.parsing`."""
