"""Looking inside trained models: loading a checkpoint with its task, the parse heads' induced trees, the
attention plots, CKY attention (the library behind fairseq-syntax-induce-parses / -plot / -cky-attention)."""
