#!/usr/bin/env python
"""Thin entry point: see fairseq_syntax/cli/parse.py (also installed as fairseq-syntax-parse)."""
import os
import sys

try:
    import fairseq_syntax  # noqa: F401
except ImportError:  # running from a checkout without installing
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from fairseq_syntax.cli.parse import cli_main

if __name__ == "__main__":
    cli_main()
