"""Plot CKY attention over the CKY levels for one sentence (Watanabe et al. 2017, Fig. 4).

For each target token, a heatmap (black = that token's largest weight) whose
rows are the source positions j and whose columns are the CKY levels i (span
length): cell (i, j) is the joint
attention weight alpha''(i, j) of the cell covering source tokens j..j+i-1
(Eq. 14); level 1 shows alpha'(j) + alpha''(1, j), the encoder state and its
level-1 cell together ("an attention score of the first layer of the CKY-CNN
corresponds to an attention score of the hidden layer of the LSTM"). Cells
beyond the sentence are blank.

The target is the model's greedy translation (the paper decodes greedily)
unless ``--target`` gives one (forced decoding). The weights also go to a TSV.

    fairseq-syntax-cky-attention data-bin --path checkpoints/checkpoint_best.pt \\
        --split test --index 0 --output fig4.png --tsv fig4.tsv
"""
import argparse

from fairseq_syntax.cli import run


def build_parser():
    p = argparse.ArgumentParser(prog="fairseq-syntax-cky-attention", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("data", help="the data-bin the model was trained on (dictionaries, and --split)")
    p.add_argument("--path", required=True, help="checkpoint of a cky_lstm model")
    src = p.add_mutually_exclusive_group()
    src.add_argument("--source", help="the source sentence as the model reads it (BPE tokens, space separated)")
    src.add_argument("--index", type=int, default=0, help="sentence id in --split (default 0)")
    p.add_argument("--split", default="test", help="split to take --index from (default test)")
    p.add_argument("--target", help="force this target (BPE tokens) instead of the greedy translation")
    p.add_argument("--max-len", type=int, default=100, help="longest greedy translation (default 100)")
    p.add_argument("--output", "-o", default="cky_attention.png", help="PNG to write (default cky_attention.png)")
    p.add_argument("--tsv", help="also write target, level, start, span, weight rows here")
    p.add_argument("--columns", type=int, default=6, help="heatmaps per row of the figure (default 6)")
    p.add_argument("--cpu", action="store_true", help="run on CPU even if a GPU is present")
    return p


def main(argv=None):
    from fairseq_syntax.analysis.cky_attention import cky_attention_figure

    args = build_parser().parse_args(argv)
    fig = cky_attention_figure(args.path, args.data, args.output, source=args.source, index=args.index,
                               split=args.split, target=args.target, max_len=args.max_len, columns=args.columns,
                               tsv=args.tsv, cpu=args.cpu)
    print(f"source: {' '.join(fig.source)}\ntarget: {' '.join(fig.target)}\nwrote {args.output}")
    if args.tsv:
        print(f"wrote {args.tsv}")
    return fig


def cli_main(argv=None):
    run(main, argv)


if __name__ == "__main__":
    cli_main()
