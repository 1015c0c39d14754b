"""Dependency trees and CoNLL-U: formats, checks, depths, linearised trees, the tree decoder (data/__init__.py)."""
