"""Syntax data, in three rooms, each importing only the ones before it (docs/design.md, "Layout"):

* ``trees``: dependency trees and CoNLL-U (reading, writing, blocks of sentences as arrays), tree checks and
  depths, the surface-token tree, linearised trees, and the one tree decoder of a parse head's attention;
* ``alignment``: subwords aligned to a tree's words, the parent strategies, the aligned syntax files in text and
  fairseq's binary form, binarising, checks of the binary files;
* ``datasets``: what the task loads and collates (torch and fairseq): the syntax language-pair dataset, token
  collation, zero-copy reads, a split's syntax side, the typed syntax request, over-long pairs.

Corpus builders (the synthetic corpus, the C&H multi-task corpus) live in preparation/corpora/.
"""
