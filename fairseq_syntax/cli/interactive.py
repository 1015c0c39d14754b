"""``fairseq-syntax-interactive``: ``fairseq-interactive`` with the plugin loaded, from any folder.

The options are fairseq-interactive's; ``--user-dir`` may be left out (the command gives fairseq this package's
path, :mod:`fairseq_syntax.patches.user_dir`), and ``--user-dir fairseq_syntax`` works outside the checkout's root too.

    fairseq-syntax-interactive data-bin --task syntax_translation --path checkpoints/checkpoint_best.pt < input.txt
"""


def cli_main():
    # fairseq's command module first, as fairseq-interactive imports it: its logging comes out as fairseq-interactive's
    from fairseq_cli.interactive import cli_main as fairseq_interactive

    # this module's import made fairseq_syntax a loaded module, so fairseq's --user-dir handling will not import
    # the plugin's tasks/ and models/ itself: register them here
    import fairseq_syntax.plugin  # noqa: F401
    from fairseq_syntax.patches.user_dir import complete_argv

    complete_argv()
    fairseq_interactive()


if __name__ == "__main__":
    cli_main()
