"""Score translations: sacreBLEU (with its signature), chrF, RIBES, paired bootstrap, BLEU by source length.

    fairseq-syntax-evaluate --hyp sys.txt --ref ref.txt [--baseline base.txt] [--source src.txt] [--ribes]
        [--plot by_length.png] [--json out.json]

What each score is and how it is computed: :mod:`fairseq_syntax.evaluation.scores` (its docstring is the
epilog of ``--help``).
"""
import argparse
import json
import os
import sys

from fairseq_syntax.cli import run
from fairseq_syntax.errors import SyntaxDataError
from fairseq_syntax.evaluation.scores import __doc__ as scores_doc
from fairseq_syntax.evaluation.scores import (
    check_same_length,
    evaluate,
    format_report,
    plot_by_length,
    read_lines,
)


def get_parser():
    p = argparse.ArgumentParser(prog="fairseq-syntax-evaluate", description=__doc__.split("\n\n")[0],
                                epilog=scores_doc.split("\n\n", 2)[2],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--hyp", required=True, help="system translations, one per line (detokenised as the reference)")
    p.add_argument("--ref", required=True, help="references, one per line")
    p.add_argument("--baseline", default=None, help="a baseline system's translations: paired bootstrap test")
    p.add_argument("--source", default=None, help="source sentences (tokenised) for the length buckets")
    p.add_argument("--tokenize", default=None,
                   help="sacreBLEU tokenizer (default: sacreBLEU's, 13a; e.g. 'ja-mecab' or 'char' for Japanese)")
    p.add_argument("--length-buckets", default="10,20,30,40,50",
                   help="upper bounds of the source-length buckets (default 10,20,30,40,50; longer = last bucket)")
    p.add_argument("--ribes", action="store_true", help="also compute RIBES (WAT's word-order metric) on BLEU's tokens (--tokenize, else whitespace), with "
                   "the paired bootstrap test against --baseline")
    p.add_argument("--plot", default=None, help="write BLEU by source length as a PNG plot to this file")
    p.add_argument("--bootstrap-samples", type=int, default=1000, help="paired bootstrap resamples (default 1000)")
    p.add_argument("--json", default=None, help="also write the results as JSON to this file")
    return p


def main(argv=None):
    args = get_parser().parse_args(argv)
    named = {args.hyp: read_lines(args.hyp), args.ref: read_lines(args.ref)}
    for extra in (args.baseline, args.source):
        if extra:
            named[extra] = read_lines(extra)
    check_same_length(named)
    try:
        bounds = sorted(int(x) for x in args.length_buckets.split(",") if x.strip())
    except ValueError:
        raise SyntaxDataError("--length-buckets", f"not a comma list of integers: {args.length_buckets!r}") from None
    r = evaluate(named[args.hyp], named[args.ref], named.get(args.baseline), named.get(args.source), args.tokenize,
                 bounds, args.bootstrap_samples, args.ribes)
    if args.baseline:  # which translations the tests were against (a results table checks its baseline by it)
        r["baseline_file"] = os.path.abspath(args.baseline)
    print(format_report(r))
    if args.json:  # before the plot: the scores do not wait on a plotting library
        with open(args.json, "w") as f:
            json.dump(r, f, indent=1)
    if args.plot:
        try:
            import matplotlib  # noqa: F401
        except ImportError:  # a bare GPU machine: the scores stand, the picture is left out and said so
            print(f"no plot ({args.plot}): matplotlib is not installed", file=sys.stderr)
        else:
            plot_by_length(r, args.plot)
            print(f"wrote {args.plot}")
    return r


def cli_main(argv=None):
    run(main, argv)


if __name__ == "__main__":
    cli_main()
