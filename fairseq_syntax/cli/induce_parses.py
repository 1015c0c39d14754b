"""``fairseq-syntax-induce-parses``: run a trained model's parse heads on a data split, write the trees as
CoNLL-U and report UAS (see :mod:`fairseq_syntax.analysis.induce`).

    fairseq-syntax-induce-parses DATA --path ckpt.pt --split test --output-prefix out/test
"""
import argparse
import os

from fairseq_syntax.cli import run
from fairseq_syntax.cli.common import add_parse_head_args
from fairseq_syntax.data.trees.conllu import write_conllu
from fairseq_syntax.errors import SyntaxDataError


def get_parser():
    p = argparse.ArgumentParser(
        prog="fairseq-syntax-induce-parses",
        description="Predict dependency trees with a trained model's parse heads (encoder: source side; decoder: "
        "target side under teacher forcing), write them as CoNLL-U and report UAS against the split's gold "
        "syntax data.",
    )
    p.add_argument("data", help="fairseq data-bin directory (with the syntax datasets for gold UAS)")
    p.add_argument("--path", required=True, help="model checkpoint")
    p.add_argument("--user-dir", default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                   help="plugin directory (default: this fairseq_syntax package)")
    p.add_argument("--split", default="test", help="data split (default test)")
    p.add_argument("--output-prefix", default=None,
                   help="write PREFIX.{src,tgt}.conllu with the predicted trees (default: do not write)")
    p.add_argument("--max-tokens", type=int, default=4000, help="batch size in tokens (default 4000)")
    add_parse_head_args(p)
    return p


def main(argv=None):
    from fairseq_syntax.analysis.checkpoint import load_checkpoint, load_split
    from fairseq_syntax.analysis.induce import attachment_report, induce_parses

    args = get_parser().parse_args(argv)
    overrides = {"dbsa_decoder_rows": args.decoder_rows} if args.decoder_rows else {}
    model, cfg, task, device = load_checkpoint(args.path, args.data, overrides, cpu=args.cpu, user_dir=args.user_dir)
    ds = load_split(task, args.split, cfg.task)
    try:
        trees = induce_parses(model, task, ds, args.decode, args.max_tokens, device)
    except ValueError as e:  # a model without parse heads, a split without what a head needs
        raise SyntaxDataError(args.path, str(e)) from None
    report = {}
    for side, (preds, golds) in trees.items():
        if args.output_prefix:
            lang = task.cfg.source_lang if side == "src" else task.cfg.target_lang
            path = f"{args.output_prefix}.{lang}.conllu"
            os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
            with open(path, "w", encoding="utf-8") as f:
                write_conllu(preds, f)
            print(f"wrote {len(preds)} predicted {side} trees -> {path}")
        if golds:
            report[side], attainable, line = attachment_report(side, preds, golds)
            if attainable is not None:
                report["tgt_attainable"] = attainable
            print(f"UAS {line.replace(' parse head:', f' parse head, split {args.split}:', 1)}")
    return report


def cli_main(argv=None):
    run(main, argv)


if __name__ == "__main__":
    cli_main()
