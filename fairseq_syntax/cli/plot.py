"""``fairseq-syntax-plot``: one sentence's parse-head attention, PASCAL's D^p or CoNLL-U arcs, as a PNG.

What each picture shows is the library's docstring (:mod:`fairseq_syntax.analysis.plots`), which is also
this command's ``--help``.

    fairseq-syntax-plot heads DATA --path ckpt.pt --split test --index 3 -o heads.png
    fairseq-syntax-plot pascal DATA --split test --index 3 -o dp.png
    fairseq-syntax-plot conllu out/test.en.conllu --gold DATA/work/test.en.conllu --index 3 -o arcs.png
"""
import argparse

from fairseq_syntax.analysis import plots
from fairseq_syntax.cli import run
from fairseq_syntax.cli.common import add_parse_head_args


# --- options -------------------------------------------------------------------------------------
def _common(p, data=True):
    if data:
        p.add_argument("data", help="the data-bin (the one the model was trained on): dictionaries, token and "
                       "syntax data of --split")
        p.add_argument("--split", default="test", help="split to take the sentence from (default test)")
    p.add_argument("--index", "-i", type=int, default=0,
                   help="0-based sentence index: the sentence id in the split (fairseq's id, the order of the "
                   "split's text files and of fairseq-syntax-induce-parses' CoNLL-U output; default 0)")
    p.add_argument("--output", "-o", required=True, help="PNG file to write")
    p.add_argument("--json", default=None,
                   help="also write what was drawn (tokens, arcs, trees, matrices) to this JSON file")
    p.add_argument("--dpi", type=int, default=150, help="resolution of the PNG (default 150)")


def get_parser():
    usage = "\n\n".join(part for part in __doc__.split("\n\n") if part.startswith("    fairseq-syntax-plot"))
    p = argparse.ArgumentParser(prog="fairseq-syntax-plot", description=plots.help_text() + "\n\n" + usage,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="mode", required=True, metavar="{heads,pascal,conllu}",
                           help="what to draw (MODE --help for its options)")

    h = sub.add_parser("heads", help="a checkpoint's parse-head attention with gold arcs and the induced tree",
                       description="Heatmaps of a trained model's parse heads (encoder and/or decoder) for one "
                       "sentence, gold parents boxed, argmax dotted; gold and induced word trees below.")
    _common(h)
    h.add_argument("--path", required=True, help="checkpoint of a model with DBSA/SISA/SyncAttn parse heads")
    h.add_argument("--side", choices=["both", "encoder", "decoder"], default="both",
                   help="which parse heads to draw (default both: every head the model has)")
    h.add_argument("--user-dir", default=None, help="plugin directory to import (default: this package)")
    add_parse_head_args(h)

    d = sub.add_parser("pascal", help="PASCAL's parent-scaled Gaussian weights D^p of one sentence",
                       description="PASCAL's D^p (Bugliarello & Okazaki 2020, Eq. 6) of one source sentence: row t "
                       "is token t's weights over the positions j, centred on its middle parent p_t.")
    _common(d)
    d.add_argument("--path", default=None,
                   help="a PASCAL checkpoint: take the variance and weight function from its parent-scaled heads "
                   "(default: none, use --variance and --weights)")
    d.add_argument("--variance", type=float, default=1.0,
                   help="Gaussian variance sigma^2 without --path (default 1.0, the paper's)")
    d.add_argument("--weights", choices=["gaussian", "parent-only"], default="gaussian",
                   help="weight function without --path: gaussian (Eq. 6, default) or parent-only (Table 7b)")
    d.add_argument("--source-lang", "-s", default=None, help="source language of the data-bin (default: inferred)")
    d.add_argument("--target-lang", "-t", default=None, help="target language of the data-bin (default: inferred)")
    d.add_argument("--cpu", action="store_true", help="load the checkpoint on CPU even if a GPU is available")

    c = sub.add_parser("conllu", help="dependency-arc view of one sentence of a CoNLL-U file",
                       description="Arc diagram of sentence --index of a CoNLL-U file; with --gold, the gold tree "
                       "above the words and the file's below, errors in red.")
    c.add_argument("conllu", help="CoNLL-U file (e.g. written by fairseq-syntax-induce-parses)")
    _common(c, data=False)
    c.add_argument("--gold", default=None, help="gold CoNLL-U file over the same words to compare with")
    c.add_argument("--no-labels", action="store_true", help="do not write the DEPREL labels on the arcs")
    return p


def main(argv=None):

    args = get_parser().parse_args(argv)
    if getattr(args, "index", 0) < 0:
        raise SystemExit(f"error: --index must be >= 0, not {args.index}")
    common = dict(output=args.output, index=args.index, json_path=args.json, dpi=args.dpi)
    if args.mode == "heads":
        return plots.plot_heads(args.path, args.data, split=args.split, side=args.side, decode=args.decode,
                                decoder_rows=args.decoder_rows, cpu=args.cpu, user_dir=args.user_dir, **common)
    if args.mode == "pascal":
        return plots.plot_pascal(args.data, split=args.split, path=args.path, variance=args.variance,
                                 weights=args.weights, source_lang=args.source_lang, target_lang=args.target_lang,
                                 cpu=args.cpu, **common)
    return plots.plot_conllu(args.conllu, gold_path=args.gold, no_labels=args.no_labels, **common)


def cli_main(argv=None):
    run(main, argv)


if __name__ == "__main__":
    cli_main()
