"""The plugin's process-wide patches of fairseq and torch, in one room, all installed by :mod:`.startup` when
fairseq's ``--user-dir`` (or any import of the plugin) loads it: the checkpoint allow-list
(:mod:`.checkpoint_safety`), named checkpoint errors (:mod:`.checkpoint_reading`), one-line errors
(:mod:`.error_display`), filters of fairseq's known warnings (:mod:`.known_warnings`), bf16 without XLA
(:mod:`.precision`), prefetch threads that end (:mod:`.prefetch_shutdown`); and the ``--user-dir`` the
``fairseq-syntax-*`` commands give fairseq (:mod:`.user_dir`)."""
