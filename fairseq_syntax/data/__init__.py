"""Syntax data: CoNLL-U, trees, subword alignment, datasets, synthetic corpus."""
