"""``fairseq-syntax-generate``: ``fairseq-generate`` with the plugin loaded, from any folder.

The options are fairseq-generate's; ``--user-dir`` may be left out (the command gives fairseq this package's
path, :mod:`fairseq_syntax.user_dir`), and ``--user-dir fairseq_syntax`` works outside the checkout's root too.

    fairseq-syntax-generate data-bin --task syntax_translation --path checkpoints/checkpoint_best.pt --beam 5
"""


def cli_main():
    # fairseq's command module first, as fairseq-generate imports it: its logging comes out as fairseq-generate's
    from fairseq_cli.generate import cli_main as fairseq_generate

    # this module's import made fairseq_syntax a loaded module, so fairseq's --user-dir handling will not import
    # the plugin's tasks/ and models/ itself: register them here
    import fairseq_syntax.plugin  # noqa: F401
    from fairseq_syntax.user_dir import complete_argv

    complete_argv()
    fairseq_generate()


if __name__ == "__main__":
    cli_main()
