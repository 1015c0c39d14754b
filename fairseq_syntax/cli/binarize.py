"""``fairseq-syntax-binarize``: aligned syntax files (from fairseq-syntax-align) -> fairseq mmap datasets next
to the tokens (see :mod:`fairseq_syntax.data.alignment.binarize`)."""
import argparse
import time

from fairseq_syntax.cli import prog_name, run
from fairseq_syntax.data.alignment.binarize import binarize_corpus
from fairseq_syntax.data.alignment.syntax_io import AlignedCorpus


def get_parser():
    p = argparse.ArgumentParser(
        prog=prog_name("binarize"),
        description="Turn PREFIX.{words,heads,labels} (from align.py) into fairseq mmap indexed datasets "
        "DESTDIR/SPLIT.SRC-TGT.LANG.{words,heads,labels}.{bin,idx} and the label dictionary "
        "DESTDIR/dict.LANG.labels.txt (built from the train split, reused for the others). If fairseq-preprocess "
        "already wrote the token dataset there, every sentence's length is checked against it.",
    )
    p.add_argument("--aligned-prefix", required=True, help="prefix of the align.py output")
    p.add_argument("--destdir", required=True, help="fairseq data-bin directory")
    p.add_argument("--split", required=True, help="split name, e.g. train, valid, test")
    p.add_argument("--source-lang", "-s", required=True, help="source language code (the data-bin's SRC-TGT)")
    p.add_argument("--target-lang", "-t", required=True, help="target language code")
    p.add_argument("--lang", required=True, help="the side these files describe (source or target language)")
    p.add_argument("--label-dict", default=None,
                   help="label dictionary to use (default: DESTDIR/dict.LANG.labels.txt, built if absent)")
    return p


def main(argv=None):

    args = get_parser().parse_args(argv)
    t0 = time.perf_counter()
    corpus = AlignedCorpus.read_text(args.aligned_prefix)
    binarize_corpus(corpus, args.destdir, args.split, args.source_lang, args.target_lang, args.lang, args.label_dict)
    dt = time.perf_counter() - t0
    print(f"binarized {len(corpus)} sentences in {dt:.1f}s ({len(corpus) / max(dt, 1e-9):.0f} sent/s)")


def cli_main(argv=None):
    run(main, argv)


if __name__ == "__main__":
    cli_main()
