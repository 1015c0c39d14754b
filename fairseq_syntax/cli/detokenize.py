"""Detokenise model output as the references are written: Moses' detokeniser plus in-word hyphens rejoined
(``T - Shirt`` -> ``T-Shirt``; see :mod:`fairseq_syntax.evaluation.detokenize`)."""
import argparse
import sys

from fairseq_syntax.cli import prog_name, run
from fairseq_syntax.evaluation.detokenize import detokenize
from fairseq_syntax.text_reading import open_text


def get_parser():
    p = argparse.ArgumentParser(prog=prog_name("detokenize"), description=__doc__)
    p.add_argument("--lang", "-l", required=True, help="language code for Moses' rules (de, en, fr, ...)")
    p.add_argument("--input", "-i", default="-", help="tokenised text, one sentence per line (default: stdin)")
    p.add_argument("--output", "-o", default="-", help="where to write (default: stdout)")
    return p


def main(argv=None):

    args = get_parser().parse_args(argv)
    fin = sys.stdin if args.input == "-" else open_text(args.input)
    fout = sys.stdout if args.output == "-" else open(args.output, "w", encoding="utf-8")
    with fin, fout:
        for line in detokenize(fin, args.lang):
            fout.write(line + "\n")


def cli_main(argv=None):
    run(main, argv)


if __name__ == "__main__":
    cli_main()
