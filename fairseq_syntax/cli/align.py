"""Align CoNLL-U trees to BPE'd text: per-subword word, head and label files."""
import argparse
import time

from fairseq_syntax.cli import prog_name, run
from fairseq_syntax.data.alignment.subword_align import align_corpus


def get_parser():
    p = argparse.ArgumentParser(
        prog=prog_name("align"),
        description="Align the dependency trees of a CoNLL-U file with the BPE'd text of the same sentences "
        "(subword-nmt '@@ ' convention). Writes OUT.words (1-based word of each subword), OUT.heads (its "
        "word's head, 0 = root) and OUT.labels (its word's relation), one line per sentence, one field per "
        "subword. Checks that each line's subwords re-join to the parse's tokens or words.",
    )
    p.add_argument("--conllu", required=True, help="parsed sentences (CoNLL-U)")
    p.add_argument("--bpe", required=True, help="BPE'd text, one sentence per line, same order")
    p.add_argument("--output-prefix", "-o", required=True, help="prefix of the three output files")
    p.add_argument("--units", choices=["auto", "surface", "words"], default="auto",
                   help="what the BPE'd text was made from: surface tokens (multiword tokens such as 'zum' "
                   "become one node), syntactic words ('zu dem'), or auto-detect per line (default)")
    p.add_argument("--bpe-marker", default="@@", help="continuation marker at the end of non-final subwords")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    return p


def main(argv=None):

    args = get_parser().parse_args(argv)
    t0 = time.perf_counter()
    corpus = align_corpus(args.conllu, args.bpe, args.units, args.bpe_marker, progress=not args.no_progress)
    corpus.write_text(args.output_prefix)
    dt = time.perf_counter() - t0
    print(f"aligned {len(corpus)} sentences in {dt:.1f}s ({len(corpus) / max(dt, 1e-9):.0f} sent/s) "
          f"-> {args.output_prefix}.{{words,heads,labels}}")


def cli_main(argv=None):
    run(main, argv)


if __name__ == "__main__":
    cli_main()
