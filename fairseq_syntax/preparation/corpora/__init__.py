"""Corpus builders: the seeded synthetic corpus and the C&H translate + parse multi-task corpus."""
