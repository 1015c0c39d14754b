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
import sys

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
    from fairseq_syntax.analysis.checkpoint import (
        check_index,
        load_checkpoint,
        load_split,
    )
    from fairseq_syntax.analysis.cky_attention import (
        cky_attention,
        greedy,
        level_grid,
        plot,
    )
    from fairseq_syntax.modules.lstm_attention import memory_states

    args = build_parser().parse_args(argv)

    model, _cfg, task, device = load_checkpoint(args.path, args.data, cpu=args.cpu)
    if getattr(model.encoder, "cky", None) is None:
        sys.exit(f"{args.path}: not a CKY attention model (train with --arch cky_lstm)")
    src_dict, tgt_dict = task.source_dictionary, task.target_dictionary
    if args.source is not None:
        src = src_dict.encode_line(args.source, add_if_not_exist=False, append_eos=True).long()
    else:
        dataset = load_split(task, args.split)
        check_index(dataset, args.index, args.split)
        src = dataset[args.index]["source"]
    src = src.to(device)
    if args.target is not None:
        tgt = tgt_dict.encode_line(args.target, add_if_not_exist=False, append_eos=True).long().to(device)
    else:
        tgt = greedy(task, model, src, args.max_len)
    weights = cky_attention(model, src, tgt, tgt_dict.eos()).float().cpu()
    grid = level_grid(weights, memory_states(weights.size(1)))
    src_labels = [src_dict[i] for i in src.tolist()]
    tgt_labels = [tgt_dict[i] for i in tgt.tolist()]
    plot(grid, src_labels, tgt_labels, args.output, args.columns)
    print(f"source: {' '.join(src_labels)}\ntarget: {' '.join(tgt_labels)}\nwrote {args.output}")
    if args.tsv:
        with open(args.tsv, "w", encoding="utf-8") as f:
            f.write("target\tlevel\tstart\tspan\tweight\n")
            for k, word in enumerate(tgt_labels):
                for j in range(len(src_labels)):
                    for i in range(1, len(src_labels) - j + 1):
                        span = " ".join(src_labels[j:j + i])
                        f.write(f"{word}\t{i}\t{j}\t{span}\t{grid[k, j, i - 1].item():.6f}\n")
        print(f"wrote {args.tsv}")


def cli_main(argv=None):
    run(main, argv)


if __name__ == "__main__":
    cli_main()
