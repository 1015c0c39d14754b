"""``fairseq-syntax-multitask``: the C&H translate + parse multi-task corpus (Currey & Heafield 2019, as in
Bugliarello & Okazaki 2020; see :mod:`fairseq_syntax.preparation.corpora.multitask`)."""
import argparse

from fairseq_syntax.cli import prog_name, run
from fairseq_syntax.cli.common import add_pair_and_splits
from fairseq_syntax.preparation.corpora.multitask import write_multitask_corpus


def get_parser():
    p = argparse.ArgumentParser(
        prog=prog_name("multitask"),
        description="C&H multi-task corpus: for each split prefix PREF reads PREF.SRC.conllu (the source parse) "
        "and PREF.TGT.conllu or PREF.TGT (the translation); writes OUT/SPLIT.SRC and OUT/SPLIT.TGT, "
        "whitespace-tokenised. Train: 2 lines per pair (translate, parse), shuffled; valid/test: translate only.",
    )
    add_pair_and_splits(p, files="PREF.L.conllu or PREF.L")
    p.add_argument("--output-dir", "-o", required=True, help="directory for the multi-task text corpus")
    p.add_argument("--translate-tag", default="<translate>", help="tag around sources to translate")
    p.add_argument("--parse-tag", default="<parse>", help="tag around sources to parse")
    p.add_argument("--units", choices=["surface", "words"], default="surface",
                   help="source text: surface tokens (default) or syntactic words, as in prepare.py")
    p.add_argument("--seed", type=int, default=1, help="shuffling seed (default 1)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    return p


def main(argv=None):

    args = get_parser().parse_args(argv)
    splits = {"train": args.trainpref, "valid": args.validpref, "test": args.testpref}
    for split, count in write_multitask_corpus(splits, args.source_lang, args.target_lang, args.output_dir,
                                               args.units, args.translate_tag, args.parse_tag, args.seed,
                                               progress=not args.no_progress):
        print(f"{split}: {count} lines -> {args.output_dir}/{split}.{{{args.source_lang},{args.target_lang}}}")


def cli_main(argv=None):
    run(main, argv)


if __name__ == "__main__":
    cli_main()
