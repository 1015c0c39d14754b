"""CKY attention over the CKY levels for one sentence (Watanabe et al. 2017, Fig. 4): the joint weights by
forced decoding, their level grid and the figure (the library behind ``fairseq-syntax-cky-attention``, whose
docstring says what the picture shows)."""
import math

import torch

from fairseq_syntax.modules.cky_table import cell_coordinates


def cky_attention(model, src_tokens, tgt_tokens, eos):
    """Joint attention (tgt, T + T(T+1)/2) of one sentence pair by forced decoding (tgt ends with EOS)."""
    model.eval()
    model.decoder.need_attn = True
    model.decoder.attention.return_joint = True
    prev = torch.cat([tgt_tokens.new_tensor([eos]), tgt_tokens[:-1]]).unsqueeze(0)
    with torch.no_grad():
        _, attn = model(src_tokens.unsqueeze(0), torch.tensor([src_tokens.numel()], device=src_tokens.device), prev)
    return attn[0]


def level_grid(weights: torch.Tensor, num_states: int) -> torch.Tensor:
    """(tgt, M) joint weights -> (tgt, T, T) grid [target, start j, level i - 1]; NaN beyond the sentence."""
    tgt = weights.size(0)
    level, start = cell_coordinates(num_states, device=weights.device)
    grid = weights.new_full((tgt, num_states, num_states), float("nan"))
    grid[:, start, level - 1] = weights[:, num_states:]
    grid[:, :, 0] += weights[:, :num_states]
    return grid


def greedy(task, model, src_tokens, max_len):
    from fairseq.sequence_generator import SequenceGenerator

    gen = SequenceGenerator([model], task.target_dictionary, beam_size=1, max_len_a=0, max_len_b=max_len)
    sample = {"net_input": {"src_tokens": src_tokens.unsqueeze(0),
                            "src_lengths": torch.tensor([src_tokens.numel()], device=src_tokens.device)}}
    with torch.no_grad():
        return gen.generate([model], sample)[0][0]["tokens"]


def plot(grid, src_labels, tgt_labels, output, columns):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    n = len(tgt_labels)
    cols = min(columns, n)
    rows = math.ceil(n / cols)
    t = len(src_labels)
    size = 0.25 * t + 1.2
    cmap = plt.get_cmap("Greys").copy()
    cmap.set_bad("#dde6f0")  # cells beyond the sentence (no span starts there at that level)
    fig, axes = plt.subplots(rows, cols, figsize=(cols * size, rows * size + 0.4), squeeze=False)
    for k, ax in enumerate(axes.flat):
        if k >= n:
            ax.axis("off")
            continue
        top = float(torch.nan_to_num(grid[k], nan=0.0).max())  # the weight spreads over T(T+3)/2 rows
        ax.imshow(grid[k].numpy(), cmap=cmap, vmin=0, vmax=top or 1.0, aspect="equal")
        ax.set_title(f"{tgt_labels[k]} (max {top:.2f})", fontsize=8)
        ax.set_xticks(range(t))
        ax.set_xticklabels([str(i + 1) for i in range(t)], fontsize=5)
        ax.set_yticks(range(t))
        ax.set_yticklabels(src_labels if k % cols == 0 else [], fontsize=6)
    fig.supxlabel("CKY level (span length)", fontsize=8)
    fig.tight_layout()
    fig.savefig(output, dpi=150)
    plt.close(fig)
