"""``fairseq-syntax-inspect``: one sentence of a data-bin as its tree met its vocabulary.

    fairseq-syntax-inspect data-bin --split test --index 0          # a line per subword, both sides
    fairseq-syntax-inspect data-bin --split train --index 12 --json  # the same as JSON

Each subword: its position, the piece, its unit (0-based index in the parser's words; a merged unit, a multiword
token or words that share a SentencePiece piece, is named by its first word), the unit's head (the same way; -1
for the root) and label. BPE and SentencePiece data-bins alike (:mod:`fairseq_syntax.data.alignment.aligned_view`).
"""
import argparse
import json

from fairseq_syntax.cli import run


def get_parser():
    p = argparse.ArgumentParser(prog="fairseq-syntax-inspect", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("data", metavar="DATA-BIN", help="a data-bin made by fairseq-syntax-prepare")
    p.add_argument("--split", default="train", help="the split (train, valid, test, ...) [train]")
    p.add_argument("--index", type=int, default=0, metavar="N", help="the sentence, 0-based as fairseq numbers "
                   "them (fairseq-generate's S-N) [0]")
    p.add_argument("-s", "--source-lang", default=None, help="the source language (default: read off the split)")
    p.add_argument("-t", "--target-lang", default=None, help="the target language (default: read off the split)")
    p.add_argument("--json", action="store_true",
                   help="print JSON: per side (source, target) a list of objects with keys piece, word, head, label")
    return p


def main(argv=None):
    from fairseq_syntax.data.alignment.aligned_view import format_view, sentence_view

    args = get_parser().parse_args(argv)
    view = sentence_view(args.data, args.split, args.index, args.source_lang, args.target_lang)
    if args.json:
        print(json.dumps(view, ensure_ascii=False, indent=1))
    else:
        print(format_view(view))
    return view


def cli_main(argv=None):
    run(main, argv)


if __name__ == "__main__":
    cli_main()
