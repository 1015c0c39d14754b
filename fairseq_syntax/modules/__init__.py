"""Attention and embedding modules of the syntax models."""
