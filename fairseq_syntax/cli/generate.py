"""``fairseq-syntax-generate``: ``fairseq-generate`` with the plugin loaded, from any folder.

The options are fairseq-generate's; ``--user-dir`` may be left out (the command gives fairseq this package's
path, :mod:`fairseq_syntax.patches.user_dir`), and ``--user-dir fairseq_syntax`` works outside the checkout's root too.

    fairseq-syntax-generate data-bin --task syntax_translation --path checkpoints/checkpoint_best.pt --beam 5

A bare ``--remove-bpe`` on a data-bin whose record says SentencePiece segments the target language joins its
pieces (``--remove-bpe sentencepiece``).
"""
import sys


def join_pieces_as_recorded(argv):
    """``argv`` with a bare ``--remove-bpe`` / ``--post-process`` (subword-nmt's marks) made ``... sentencepiece``
    where the data-bin's record says SentencePiece segments the target language: the hypotheses are then text."""
    from fairseq_syntax.preparation.databin_record import language_option, target_in_pieces

    import os

    from fairseq_syntax.preparation.databin_record import RECORD_FILE

    flag = next((f for f in ("--remove-bpe", "--post-process") if f in argv), None)
    if flag is None:
        return argv
    # the data-bin: the first word that is a folder with a preparation record (an option's value is not)
    data = next((a.split(":")[0] for a in argv if not a.startswith("-")
                 and os.path.isfile(os.path.join(a.split(":")[0], RECORD_FILE))), None)
    k = argv.index(flag)
    bare = k + 1 == len(argv) or argv[k + 1].startswith("-") or argv[k + 1].split(":")[0] == data
    if data is not None and bare and target_in_pieces(data, language_option(argv)):
        return argv[:k + 1] + ["sentencepiece"] + argv[k + 1:]
    return argv


def cli_main():
    # fairseq's command module first, as fairseq-generate imports it: its logging comes out as fairseq-generate's
    from fairseq_cli.generate import cli_main as fairseq_generate

    # this module's import made fairseq_syntax a loaded module, so fairseq's --user-dir handling will not import
    # the plugin's tasks/ and models/ itself: register them here
    import fairseq_syntax.plugin  # noqa: F401
    from fairseq_syntax.patches.user_dir import complete_argv

    complete_argv()
    sys.argv[1:] = join_pieces_as_recorded(sys.argv[1:])
    fairseq_generate()


if __name__ == "__main__":
    cli_main()
