"""The datasets and collation the task loads (torch and fairseq; data/__init__.py)."""
