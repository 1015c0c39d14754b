"""``fairseq-syntax-pack``: one folder with a trained model and everything needed to translate raw text with
it on another machine (checkpoint, dictionaries, BPE codes, the preparation record, small parser model files;
see :mod:`fairseq_syntax.inference.pack`).

    fairseq-syntax-pack DATA-BIN checkpoints/checkpoint_best.pt -o my-model
    python -c 'from fairseq_syntax.inference.hub import from_pretrained; print(from_pretrained("my-model").translate("Hello."))'
"""
import argparse

from fairseq_syntax.cli import prog_name, run
from fairseq_syntax.inference.pack import pack_model


def get_parser():
    p = argparse.ArgumentParser(prog=prog_name("pack"), description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog="\n\n".join(__doc__.split("\n\n")[1:]))
    p.add_argument("data", help="the data-bin the model was trained on (with its preparation.json)")
    p.add_argument("checkpoint", help="the checkpoint to pack (e.g. checkpoints/checkpoint_best.pt)")
    p.add_argument("--output", "-o", required=True, help="the model folder to write (created if absent)")
    p.add_argument("--no-parser-models", action="store_true",
                   help="do not copy the parser model files (their licence may not allow handing them on): the "
                   "folder's preparation.json keeps their paths on this machine")
    p.add_argument("--max-parser-mb", type=float, default=50.0,
                   help="copy a parser model file only up to this size in MB (default 50)")
    p.add_argument("--keep-optimizer", action="store_true",
                   help="keep the optimizer state in model.pt (default: dropped; translating does not need it)")
    p.add_argument("--licence", default=None,
                   help="the licence of the parser models copied, written into the folder's README.md")
    return p


def main(argv=None):

    args = get_parser().parse_args(argv)
    out = pack_model(args.data, args.checkpoint, args.output, parser_models=not args.no_parser_models,
                     max_parser_mb=args.max_parser_mb, keep_optimizer=args.keep_optimizer, licence_note=args.licence)
    print(f"packed {args.checkpoint} -> {args.output}: {', '.join(out['files'])}")
    for lang, backend, where, size, what in out["parsers"]:
        print(f"  parser {lang}: {backend} {where} ({size}, {what})")


def cli_main(argv=None):
    run(main, argv)


if __name__ == "__main__":
    cli_main()
