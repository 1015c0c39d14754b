"""Where syntax helps: BLEU and chrF of two or more systems per bucket of source length, source tree depth and
longest dependency, each system against the first with paired bootstrap intervals.

    fairseq-syntax-analyze --data DATA_BIN --ref test.en --system transformer=t.txt --system dep_rel=d1.txt,d2.txt \\
        [--split test] [--json analysis.json] [--plot analysis.png]

The source trees are DATA_BIN's (the split's source syntax: the units and heads the models read). A system is
NAME=FILE, or NAME=FILE,FILE,... for its runs (seeds: scored as their mean, resampled together); each FILE is
plain translations, one per line, scored as written, or fairseq-generate's output (run with --remove-bpe), put in
corpus order and detokenised as DATA_BIN's record says (as ``fairseq-syntax-evaluate --data`` does; --detokenize
and --tokenize override it). The first system is the one the others are tested against. What the buckets and the
interval are: :mod:`fairseq_syntax.evaluation.tree_buckets`.
"""
import argparse
import json
import sys

from fairseq_syntax.cli import run
from fairseq_syntax.cli.evaluate import read_translations, scoring
from fairseq_syntax.errors import OptionError, SyntaxDataError
from fairseq_syntax.evaluation.generate_output import is_generate_output
from fairseq_syntax.evaluation.scores import read_lines
from fairseq_syntax.evaluation.tree_buckets import DEFAULT_BOUNDS, analyze, format_table, plot, source_tree_features


def _bounds(text: str, option: str):
    try:
        values = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        values = []
    if not values or values != sorted(set(values)) or values[0] < 0:
        raise OptionError(f"{option} {text}: increasing whole numbers, e.g. {','.join(map(str, DEFAULT_BOUNDS['length']))}")
    return values


def get_parser():
    p = argparse.ArgumentParser(prog="fairseq-syntax-analyze", description=__doc__.split("\n\n")[0],
                                epilog=__doc__.split("\n\n", 1)[1], formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", required=True, metavar="DATA_BIN",
                   help="the data-bin the systems translated: its split's source trees, and its record says how "
                   "fairseq-generate's output is detokenised and scored")
    p.add_argument("--split", default="test", help="the split the systems translated [test]")
    p.add_argument("-s", "--source-lang", default=None, help="source language (default: read off the data-bin)")
    p.add_argument("-t", "--target-lang", default=None,
                   help="target language (default: read off the data-bin, else the extension of --ref)")
    p.add_argument("--ref", required=True, metavar="FILE",
                   help="the references of the split, one per line, in corpus order (as fairseq-syntax-evaluate "
                   "takes them)")
    p.add_argument("--system", action="append", required=True, metavar="NAME=FILE[,FILE...]",
                   help="a system's translations (several files: its runs); give two or more, the first the one "
                   "the others are tested against")
    p.add_argument("--detokenize", default=None, metavar="LANG|none",
                   help="as fairseq-syntax-evaluate's: how fairseq-generate's output is detokenised (default: as "
                   "the record of --data says)")
    p.add_argument("--tokenize", default=None, metavar="TOKENIZER",
                   help="sacreBLEU tokenizer (default: the record's choice, e.g. 'none' for a corpus that came "
                   "tokenised, 'ja-mecab' for Japanese)")
    for feature in DEFAULT_BOUNDS:
        p.add_argument(f"--{feature}-buckets", default=",".join(map(str, DEFAULT_BOUNDS[feature])), metavar="B1,B2,...",
                       help=f"upper bounds of the {feature} buckets (default {','.join(map(str, DEFAULT_BOUNDS[feature]))};"
                       " above the last: the last bucket)")
    p.add_argument("--bootstrap-samples", type=int, default=1000, metavar="N", help="paired bootstrap resamples [1000]")
    p.add_argument("--json", default=None, metavar="FILE", help="write the results as JSON to this file")
    p.add_argument("--plot", default=None, metavar="PNG", help="write BLEU per bucket, a panel per feature, to this PNG")
    return p


def main(argv=None):
    args = get_parser().parse_args(argv)
    if len(args.system) < 2:
        raise OptionError("--system: give two or more (the first is the one the others are tested against)")
    bounds = {f: _bounds(getattr(args, f"{f}_buckets"), f"--{f}-buckets") for f in DEFAULT_BOUNDS}
    ref = read_lines(args.ref)
    features = source_tree_features(args.data, args.split, args.source_lang,
                                    args.target_lang if args.source_lang else None)
    if len(features["length"]) != len(ref):
        raise SyntaxDataError(args.ref, f"{len(ref)} lines, and split {args.split} of {args.data} has "
                              f"{len(features['length'])} sentences: give the reference of the split translated")
    given = {}
    for spec in args.system:
        name, eq, files = spec.partition("=")
        if not eq or not name or not files:
            raise OptionError(f"--system {spec}: NAME=FILE[,FILE...]")
        if name in given:
            raise OptionError(f"--system {spec}: a second system named {name}")
        given[name] = {path: read_lines(path) for path in files.split(",")}
    # the record's scoring: to detokenise fairseq-generate's output, or to choose sacreBLEU's tokenizer
    generated = any(is_generate_output(lines) for files in given.values() for lines in files.values())
    plan, decode, _ = scoring(args) if generated or args.tokenize is None else (None, None, {})
    systems = {}
    for name, files in given.items():
        runs = []
        for path, lines in files.items():
            hyps, _, _, _ = read_translations(path, lines, decode, len(ref), args)
            if len(hyps) != len(ref):
                raise SyntaxDataError(path, f"{len(hyps)} translations for the {len(ref)} lines of {args.ref}")
            runs.append(hyps)
        systems[name] = runs
    tokenize = args.tokenize or (plan.tokenize if plan is not None else None)
    result = analyze(systems, ref, features, bounds, tokenize, args.bootstrap_samples)
    result.update({"data": args.data, "split": args.split, "reference": args.ref,
                   "files": {s.partition("=")[0]: s.partition("=")[2].split(",") for s in args.system}})
    print(format_table(result))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(result, f, indent=1)
            f.write("\n")
    if args.plot:
        plot(result, args.plot)
    return 0


def cli_main(argv=None):
    run(main, argv)


if __name__ == "__main__":
    sys.exit(cli_main())
