"""Parse text into CoNLL-U with stanza (default), spaCy/GiNZA or UDPipe 1."""
import argparse

from fairseq_syntax.cli import run


def get_parser():
    p = argparse.ArgumentParser(
        prog="preprocess/parse.py",
        description="Dependency-parse a text file (one sentence per line) into CoNLL-U, one tree per line. "
        "Use --pretokenized when the text is already whitespace-tokenised (the parser keeps those tokens).",
    )
    p.add_argument("--input", "-i", required=True, help="text file, one sentence per line")
    p.add_argument("--output", "-o", required=True, help="CoNLL-U file to write")
    p.add_argument("--backend", choices=["stanza", "spacy", "udpipe"], default="stanza",
                   help="parser: stanza (default), spacy (any spaCy pipeline, e.g. ja_ginza), udpipe (UDPipe 1)")
    p.add_argument("--lang", default="en", help="stanza: language code (default: en)")
    p.add_argument("--model", default=None,
                   help="spacy: package name or path (default ja_ginza); udpipe: path of the .udpipe model")
    p.add_argument("--model-dir", default=None, help="stanza: directory holding downloaded stanza models")
    p.add_argument("--gpu", action="store_true", help="run the parser on the GPU (stanza, spacy)")
    p.add_argument("--pretokenized", action="store_true",
                   help="input is whitespace-tokenised: keep its tokens, one tree per line")
    p.add_argument("--batch-size", type=int, default=256, help="lines per parser call (default 256)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    return p


def backend_options(args):
    from fairseq_syntax.parsing.base import backend_options as options

    return options(args.backend, lang=args.lang, model=args.model, model_dir=args.model_dir, gpu=args.gpu,
                   pretokenized=args.pretokenized)


def main(argv=None):
    from fairseq_syntax.parsing import build_parser, parse_file

    args = get_parser().parse_args(argv)
    parser = build_parser(args.backend, **backend_options(args))
    n = parse_file(parser, args.input, args.output, args.batch_size, progress=not args.no_progress)
    print(f"parsed {n} sentences -> {args.output}")


def cli_main(argv=None):
    run(main, argv)


if __name__ == "__main__":
    cli_main()
