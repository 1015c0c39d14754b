"""Score translations: sacreBLEU (with its signature), chrF, RIBES, paired bootstrap, BLEU by source length.

    fairseq-syntax-evaluate --data DATA_BIN --ref REF --hyp GENERATE_OUTPUT [--baseline GENERATE_OUTPUT]
    fairseq-syntax-evaluate --hyp sys.txt --ref ref.txt [--baseline base.txt] [--source src.txt] [--ribes]
        [--plot by_length.png] [--json out.json]

--hyp and --baseline are either plain translations, one per line, scored as they are written, or
fairseq-generate's output as it writes it (its stdout, or generate-SPLIT.txt of --results-path; run with
--remove-bpe): its D- lines are put in corpus order by their sentence ids, which must cover the lines of --ref,
and detokenised as DATA_BIN/preparation.json records the target language (the recipes' scoring:
fairseq_syntax/evaluation/scoring_plan.py), or as --detokenize says. The record also chooses sacreBLEU's
tokenizer (e.g. ja-mecab for Japanese) and whether RIBES is reported; --tokenize and --ribes / --no-ribes
override it. What each score is and how it is computed: :mod:`fairseq_syntax.evaluation.scores` (its
docstring is the epilog of ``--help``).
"""
import argparse
import json
import os
import sys

from fairseq_syntax.cli import run
from fairseq_syntax.errors import OptionError, SyntaxDataError
from fairseq_syntax.evaluation.generate_output import is_generate_output, read_generate_output, same_text_share
from fairseq_syntax.evaluation.scores import __doc__ as scores_doc
from fairseq_syntax.evaluation.scores import (
    check_same_length,
    evaluate,
    format_report,
    plot_by_length,
    read_lines,
)
from fairseq_syntax.evaluation.scoring_plan import plan_for, unchanged_plan


def get_parser():
    p = argparse.ArgumentParser(prog="fairseq-syntax-evaluate", description=__doc__.split("\n\n")[0],
                                epilog=__doc__.split("\n\n", 2)[2].rsplit("What each score", 1)[0].rstrip()
                                + "\n\n" + scores_doc.split("\n\n", 2)[2],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                usage="%(prog)s --hyp FILE --ref FILE [--data DATA_BIN] [--baseline FILE] [options]")
    p.add_argument("--hyp", required=True, metavar="FILE",
                   help="the system's translations: fairseq-generate's output as it wrote it (found by its D- "
                   "lines; needs --data or --detokenize), or plain text, one translation per line, scored as it is "
                   "(detokenised as the reference is written)")
    p.add_argument("--ref", required=True, metavar="FILE",
                   help="the references, one per line, in corpus order (the split fairseq-generate translated, all "
                   "of it: its sentence ids are these lines); raw text unless the record says the corpus came "
                   "tokenised")
    p.add_argument("--baseline", default=None, metavar="FILE",
                   help="a baseline system's translations, in either form of --hyp: the paired bootstrap test of "
                   "--hyp against it (BLEU, chrF, and RIBES when it is on)")
    p.add_argument("--data", default=None, metavar="DATA_BIN",
                   help="the data-bin the models were trained on: its preparation.json says how the target language "
                   "was tokenised, and so how fairseq-generate's output is detokenised, which sacreBLEU tokenizer "
                   "scores it and whether RIBES is on (the recipes' scoring)")
    p.add_argument("--target-lang", default=None, metavar="LANG",
                   help="the target language in the record of --data (default: the extension of --ref, e.g. "
                   "test.de -> de); a data-bin serves both directions of its pair")
    p.add_argument("--detokenize", default=None, metavar="LANG|none",
                   help="detokenise fairseq-generate's output as the target LANG's parser tokens are (Moses and "
                   "in-word hyphens; ja, zh: the spaces removed), or 'none' to score its tokens as they are; "
                   "overrides the record of --data and replaces it where there is none. Plain-text files are "
                   "always scored as they are")
    p.add_argument("--source", default=None, metavar="FILE",
                   help="source sentences (tokenised) for the length buckets (default: the S- lines of a "
                   "fairseq-generate --hyp, else the reference's lengths)")
    p.add_argument("--tokenize", default=None, metavar="TOKENIZER",
                   help="sacreBLEU tokenizer (default: the record's choice with --data, e.g. 'ja-mecab' for "
                   "Japanese and 'none' for a corpus that came tokenised; else sacreBLEU's, 13a)")
    p.add_argument("--length-buckets", default="10,20,30,40,50", metavar="B1,B2,...",
                   help="upper bounds of the source-length buckets (default 10,20,30,40,50; longer = last bucket)")
    p.add_argument("--ribes", action=argparse.BooleanOptionalAction, default=None,
                   help="RIBES (WAT's word-order metric) on BLEU's tokens (--tokenize, else whitespace), with the "
                   "paired bootstrap test against --baseline (default: on with --data when the pair has Japanese, "
                   "Chinese or Korean, else off)")
    p.add_argument("--plot", default=None, metavar="PNG", help="write BLEU by source length as a PNG plot to this file")
    p.add_argument("--bootstrap-samples", type=int, default=1000, metavar="N",
                   help="paired bootstrap resamples (default 1000)")
    p.add_argument("--json", default=None, metavar="FILE", help="also write the results as JSON to this file")
    p.add_argument("--write-hyp", default=None, metavar="FILE",
                   help="also write the hypotheses as they were scored (corpus order, detokenised), one per line: "
                   "a plain --hyp or --baseline of later comparisons")
    return p


def target_language(args, record) -> str:
    """--target-lang, else the extension of --ref when the record names that language."""
    langs = sorted(record.languages)
    lang = args.target_lang or os.path.splitext(args.ref)[1].lstrip(".")
    if lang in record.languages:
        return lang
    if args.target_lang:
        raise OptionError(f"--target-lang {lang}: the record of {args.data} holds {' and '.join(langs)}")
    raise OptionError(f"--target-lang: the record of {args.data} holds {' and '.join(langs)}, and the name of --ref "
                      f"({os.path.basename(args.ref)}) ends in neither: give --target-lang")


def scoring(args):
    """(the plan, detokenise(line) for fairseq-generate's output, what was decided for the report); (None, None,
    {}) without --data and --detokenize."""
    if not args.data and not args.detokenize:
        return None, None, {}
    from fairseq_syntax.inference.target import RecordedText
    from fairseq_syntax.preparation.databin_record import RECORD_FILE, LanguageRecord, PreparationRecord

    record, lang, languages = None, None, []
    if args.data:
        record = PreparationRecord.load(args.data)
        if record is None:
            raise SyntaxDataError(os.path.join(args.data, RECORD_FILE), "missing: the data-bin was prepared without "
                                  "a record of its tokenisation; give --detokenize LANG|none (and --tokenize)")
        languages = list(record.languages)
    if args.detokenize == "none":
        plan, decode = unchanged_plan(languages), (lambda line: line)
    elif args.detokenize:  # as the parser's tokens of that language are (the recipes' tokenisation)
        lang = args.detokenize
        plan = plan_for(lang, "parser", [x for x in languages if x != lang])
        decode = RecordedText(PreparationRecord(languages={lang: LanguageRecord(tokenizer="parser")}), ".",
                              lang).decode
    else:
        lang = target_language(args, record)
        plan = plan_for(lang, record.language(lang, args.data).tokenizer, [x for x in languages if x != lang],
                        pieces=lang in (record.spm or {}))
        decode = RecordedText(record, args.data, lang).decode
    decided = {"target_lang": lang, "detokenize": plan.detokenization, "reference": plan.reference}
    if args.detokenize:
        decided["detokenize_option"] = args.detokenize
    else:
        decided["record"] = os.path.abspath(os.path.join(args.data, RECORD_FILE))
    return plan, decode, decided


def read_translations(path, lines, decode, n_reference, args):
    """(the translations of ``path`` in corpus order, as scored; the S- lines or None; what was read, in words):
    fairseq-generate's output checked, ordered and detokenised; plain text as it is."""
    if not is_generate_output(lines):
        return lines, None, None, "plain text, scored as it is"
    if decode is None:
        raise OptionError(f"{path} is fairseq-generate's output: give --data DATA_BIN (the data-bin the model was "
                          "trained on: its record says how to detokenise the hypotheses), or --detokenize LANG|none")
    out = read_generate_output(path, lines, n_reference, args.ref, decoded_by_fairseq_ok=args.detokenize == "none")
    return [decode(h) for h in out.hypotheses], out.sources, out.targets, out.describe()


def check_reference(targets, decode, ref, plan, args):
    """Warnings (not errors: normalisation and lowercasing differ by corpus) when --ref does not look like the
    reference of what was translated: the T- lines of fairseq-generate's output, detokenised, agree with it on
    fewer than half of the lines (whitespace and case aside); or a Japanese/Chinese reference holds spaces while
    the hypotheses lose theirs."""
    if targets is not None and same_text_share([decode(t) for t in targets], ref) < 0.5:
        print(f"warning: {args.ref}: fewer than half of its lines are the T- lines (the reference fairseq-generate "
              f"read) of {args.hyp}, detokenised: is it the reference of the split it translated, in its order?",
              file=sys.stderr)
    if plan.removes_spaces and sum(" " in r for r in ref) > len(ref) / 2:
        print(f"warning: {args.ref}: most lines hold spaces, and the hypotheses are scored with theirs removed: give "
              "the raw reference (a tokenised one scores lower), or --detokenize none --tokenize none for BLEU on "
              "tokens", file=sys.stderr)


def main(argv=None):
    parser = get_parser()
    args = parser.parse_args(argv)
    plan, decode, decided = scoring(args)
    ref = read_lines(args.ref)
    if not ref:
        raise SyntaxDataError(args.ref, "empty: no sentences to score")
    named, inputs, sources, hyp_targets = {args.ref: ref}, {}, None, None
    for role, path in (("hyp", args.hyp), ("baseline", args.baseline)):
        if path:
            lines, src, targets, what = read_translations(path, read_lines(path), decode, len(ref), args)
            named[path] = lines
            inputs[role] = {"file": os.path.abspath(path), "read_as": what}
            if role == "hyp":
                sources, hyp_targets = src, targets
    if plan is not None:
        check_reference(hyp_targets, decode, ref, plan, args)
    if args.source:
        named[args.source] = sources = read_lines(args.source)
    check_same_length({args.hyp: named[args.hyp], **named})  # the hypotheses first: "N lines but HYP has M"
    try:
        bounds = sorted(int(x) for x in args.length_buckets.split(",") if x.strip())
    except ValueError:
        raise SyntaxDataError("--length-buckets", f"not a comma list of integers: {args.length_buckets!r}") from None
    tokenize = args.tokenize if args.tokenize is not None else (plan.tokenize if plan else None)
    with_ribes = args.ribes if args.ribes is not None else bool(plan and plan.ribes)
    r = evaluate(named[args.hyp], ref, named.get(args.baseline), sources, tokenize, bounds, args.bootstrap_samples,
                 with_ribes)
    if args.baseline:  # which translations the tests were against (a results table checks its baseline by it)
        r["baseline_file"] = os.path.abspath(args.baseline)
    if decided:
        r["scoring"] = decided
        r["inputs"] = inputs
        print(describe(decided, inputs))
    print(format_report(r))
    if args.write_hyp:
        with open(args.write_hyp, "w", encoding="utf-8") as f:
            f.writelines(line + "\n" for line in named[args.hyp])
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


def describe(decided, inputs) -> str:
    """What was scored, before the scores: each input as it was read, the detokenisation and its source."""
    lines = [f"{role}: {d['file']}: {d['read_as']}" for role, d in inputs.items()]
    where = (f" (as {decided['record']} records {decided['target_lang']})" if "record" in decided
             else f" (--detokenize {decided['detokenize_option']})")
    lines.append(f"detokenised: {decided['detokenize']}{where}; reference: {decided['reference']}")
    return "\n".join(lines)


def cli_main(argv=None):
    run(main, argv)


if __name__ == "__main__":
    cli_main()
