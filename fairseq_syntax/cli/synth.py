"""Write the seeded synthetic parallel corpus (text + gold CoNLL-U, both sides)."""
import argparse

from fairseq_syntax.cli import prog_name, run
from fairseq_syntax.preparation.corpora.synthetic import generate_corpus


def get_parser():
    p = argparse.ArgumentParser(
        prog=prog_name("synth"),
        description="Generate the synthetic corpus: an English-like head-initial source language and its "
        "head-final translation (word mapping, reordering by the tree, case particles by relation), with "
        "gold dependency trees on both sides. Writes OUT/{split}.{lang} and OUT/{split}.{lang}.conllu.",
    )
    p.add_argument("--output-dir", "-o", required=True, help="directory for the text and CoNLL-U files")
    p.add_argument("--seed", type=int, default=1, help="random seed (default 1); same seed, same corpus")
    p.add_argument("--train", type=int, default=20000, help="training sentences (default 20000)")
    p.add_argument("--valid", type=int, default=500, help="validation sentences (default 500)")
    p.add_argument("--test", type=int, default=500, help="test sentences (default 500)")
    p.add_argument("--source-lang", default="src", help="code of the head-initial source language (file suffix; default src)")
    p.add_argument("--target-lang", default="tgt", help="code of the head-final target language (file suffix; default tgt)")
    p.add_argument("--max-depth", type=int, default=2, help="maximum clause/phrase embedding depth (default 2)")
    return p


def main(argv=None):

    args = get_parser().parse_args(argv)
    sizes = generate_corpus(
        args.output_dir,
        {"train": args.train, "valid": args.valid, "test": args.test},
        seed=args.seed,
        src=args.source_lang,
        tgt=args.target_lang,
        max_depth=args.max_depth,
    )
    print(f"wrote {sizes} to {args.output_dir}")


def cli_main(argv=None):
    run(main, argv)


if __name__ == "__main__":
    cli_main()
