"""Parse text into CoNLL-U with stanza (default), spaCy/GiNZA or UDPipe 1."""
import argparse

from fairseq_syntax.cli import prog_name, run
from fairseq_syntax.cli.common import add_scale_options
from fairseq_syntax.preparation.chunked import parse_shard
from fairseq_syntax.parsing.base import backend_options as options
from fairseq_syntax.parsing.base import effective_workers, load_parser
from fairseq_syntax.preparation.parse_files import parse_chunked
from fairseq_syntax.text_reading import check_readable


def get_parser():
    p = argparse.ArgumentParser(
        prog=prog_name("parse"),
        description="Dependency-parse a text file (one sentence per line) into CoNLL-U, one tree per line. "
        "Use --pretokenized when the text is already whitespace-tokenised (the parser keeps those tokens).",
    )
    p.add_argument("--input", "-i", required=True, help="text file, one sentence per line")
    p.add_argument("--output", "-o", required=True, help="CoNLL-U file to write")
    p.add_argument("--backend", choices=["stanza", "spacy", "udpipe", "conllu"], default="stanza",
                   help="parser: stanza (default), spacy (any spaCy pipeline, e.g. ja_ginza), udpipe (UDPipe 1), "
                   "conllu (look each whitespace-tokenised line up in the CoNLL-U file --model)")
    p.add_argument("--lang", default="en", help="stanza: language code (default: en)")
    p.add_argument("--model", default=None,
                   help="spacy: package name or path (default ja_ginza); udpipe: path of the .udpipe model; "
                   "conllu: the CoNLL-U file")
    p.add_argument("--model-dir", default=None, help="stanza: directory holding downloaded stanza models")
    p.add_argument("--gpu", action="store_true", help="run the parser on the GPU (stanza, spacy)")
    p.add_argument("--pretokenized", action="store_true",
                   help="input is whitespace-tokenised: keep its tokens, one tree per line")
    p.add_argument("--batch-size", type=int, default=256, help="lines per parser call (default 256)")
    add_scale_options(p)
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    return p


def backend_options(args):
    return options(args.backend, lang=args.lang, model=args.model, model_dir=args.model_dir, gpu=args.gpu,
                   pretokenized=args.pretokenized)


def main(argv=None):

    p = get_parser()
    args = p.parse_args(argv)
    try:
        shard = parse_shard(args.shard)
    except ValueError as e:
        p.error(str(e))
    check_readable(args.input)
    spec = (args.backend, backend_options(args))
    workers = effective_workers(args.workers, args.gpu)
    # loaded before any parsing, so that a wrong model fails at once with one line; kept when one process parses
    parser = load_parser(*spec, what=f"--backend {args.backend}" + (f" --model {args.model}" if args.model else ""),
                         model_option="--model")
    if workers > 1:
        parser = None  # each worker process loads its own
    res = parse_chunked(args.input, args.output, parser, spec=spec,
                        batch_size=args.batch_size, workers=workers,
                        chunk_size=args.chunk_size, shard=shard, progress=not args.no_progress)
    reused = f" ({res.reused} reused from finished chunks)" if res.reused else ""
    if res.complete:
        print(f"parsed {res.processed} sentences{reused}; {res.units} sentences -> {args.output}")
    else:
        print(f"shard {args.shard}: parsed {res.processed} sentences{reused} into {args.output}.chunks; run the "
              "command without --shard once every shard is done to assemble " + args.output)


def cli_main(argv=None):
    run(main, argv)


if __name__ == "__main__":
    cli_main()
