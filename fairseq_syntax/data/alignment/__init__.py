"""Subwords aligned to trees, their parent strategies, and the aligned syntax files (data/__init__.py)."""
