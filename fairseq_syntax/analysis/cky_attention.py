"""CKY attention over the CKY levels for one sentence (Watanabe et al. 2017, Fig. 4): the joint weights by
forced decoding, their level grid and the figure (the library behind ``fairseq-syntax-cky-attention``, whose
docstring says what the picture shows); and, over many sentences, whether the cells stay distinct and how much
of the joint attention they take (:func:`cell_statistics`)."""
import math
from dataclasses import dataclass
from typing import Iterable, List, Optional, Tuple

import torch
from torch.nn import functional as F

from fairseq_syntax.errors import SyntaxDataError
from fairseq_syntax.modules.cky_table import cell_coordinates


def cky_attention(model, src_tokens, tgt_tokens, eos, encoder_out=None):
    """Joint attention (tgt, T + T(T+1)/2) of one sentence pair by forced decoding (tgt ends with EOS); the
    model is left as it was (fairseq's ``need_attn``, the attention's weights). ``encoder_out``: the encoder's
    output for ``src_tokens`` when the caller has it already (else computed here)."""
    model.eval()
    prev = torch.cat([tgt_tokens.new_tensor([eos]), tgt_tokens[:-1]]).unsqueeze(0)
    need_attn, model.decoder.need_attn = model.decoder.need_attn, True
    try:
        with torch.no_grad(), model.decoder.attention.joint_weights():
            if encoder_out is None:
                encoder_out = model.encoder(src_tokens.unsqueeze(0),
                                            torch.tensor([src_tokens.numel()], device=src_tokens.device))
            _, attn = model.decoder(prev, encoder_out=encoder_out)
    finally:
        model.decoder.need_attn = need_attn
    return attn[0]


@dataclass
class CKYFigure:
    source: List[str]  # the source tokens (BPE units, EOS last)
    target: List[str]  # the target tokens
    grid: torch.Tensor  # (target, T, T) joint weights by start and level (:func:`level_grid`)


def cky_attention_figure(path: str, data: str, output: str, source: Optional[str] = None, index: int = 0,
                         split: str = "test", target: Optional[str] = None, max_len: int = 100, columns: int = 6,
                         tsv: Optional[str] = None, cpu: bool = False) -> CKYFigure:
    """Fig. 4 for one sentence of a trained cky_lstm model: the source (``source``, BPE tokens, or sentence
    ``index`` of ``split``), its greedy translation (or the forced ``target``), the joint attention over the
    CKY levels drawn to ``output`` (PNG) and, with ``tsv``, written as target / level / start / span / weight
    rows."""
    from fairseq_syntax.analysis.checkpoint import (
        check_index,
        load_checkpoint,
        load_split,
    )
    from fairseq_syntax.modules.lstm_attention import memory_states

    model, _cfg, task, device = load_checkpoint(path, data, cpu=cpu)
    if getattr(model.encoder, "cky", None) is None:
        raise SyntaxDataError(path, "not a CKY attention model (train with --arch cky_lstm)")
    src_dict, tgt_dict = task.source_dictionary, task.target_dictionary
    if source is not None:
        src = src_dict.encode_line(source, add_if_not_exist=False, append_eos=True).long()
    else:
        dataset = load_split(task, split)
        check_index(dataset, index, split)
        src = dataset[index]["source"]
    src = src.to(device)
    if target is not None:
        tgt = tgt_dict.encode_line(target, add_if_not_exist=False, append_eos=True).long().to(device)
    else:
        tgt = greedy(task, model, src, max_len)
    weights = cky_attention(model, src, tgt, tgt_dict.eos()).float().cpu()
    fig = CKYFigure([src_dict[i] for i in src.tolist()], [tgt_dict[i] for i in tgt.tolist()],
                    level_grid(weights, memory_states(weights.size(1))))
    plot(fig.grid, fig.source, fig.target, output, columns)
    if tsv:
        write_tsv(fig, tsv)
    return fig


def pairwise_cosine(x: torch.Tensor) -> float:
    """Mean cosine similarity over the N(N-1)/2 distinct pairs of the rows of ``x`` (N, d), N >= 2."""
    n = x.size(0)
    if n < 2:
        raise ValueError("pairwise_cosine needs at least two rows")
    unit = F.normalize(x.double(), dim=-1)
    sim = unit @ unit.t()
    return float((sim.sum() - sim.diagonal().sum()) / (n * (n - 1)))


@dataclass
class CellStatistics:
    """Whether a cky_lstm's cells are distinct vectors and how much joint attention they take (docs/cky.md):
    cells that all collapse to one vector per sentence (cosine 1) give CKY attention nothing to choose from."""
    sentences: int  # sentence pairs read
    target_tokens: int  # target tokens (EOS included) whose joint weights are averaged
    cell_cosine: float  # per sentence with >= 2 cells of levels >= 2 (T >= 3), their mean pairwise cosine; mean
    state_cosine: float  # the same for the T encoder states (sentences with T >= 2), for scale
    cosine_sentences: int  # sentences in cell_cosine
    attention_on_cells: float  # mean over target tokens of the joint weight on all T(T+1)/2 cells (Eq. 13-14)
    attention_on_upper_cells: float  # ... on the cells of levels >= 2 (spans of two or more tokens)


def cell_statistics(model, pairs: Iterable[Tuple[torch.Tensor, torch.Tensor]], eos: int) -> CellStatistics:
    """:class:`CellStatistics` of a cky_lstm model over sentence ``pairs`` (source, target token tensors, each
    ending with EOS), one sentence at a time (no padding) in eval mode, the targets forced (the references)."""
    from fairseq_syntax.modules.lstm_attention import memory_states

    model.eval()
    cell_cos, state_cos, on_cells, on_upper = [], [], [], []
    sentences = 0
    for src, tgt in pairs:
        sentences += 1
        with torch.no_grad():
            encoder_out = model.encoder(src.unsqueeze(0), torch.tensor([src.numel()], device=src.device))
        memory = encoder_out[0][:, 0]
        t = memory_states(memory.size(0))
        states, upper = memory[:t], memory[2 * t:]  # flat cells: level 1 (t of them) first, then level 2, ...
        if upper.size(0) >= 2:
            cell_cos.append(pairwise_cosine(upper))
        if t >= 2:
            state_cos.append(pairwise_cosine(states))
        weights = cky_attention(model, src, tgt, eos, encoder_out).double()
        on_cells.append(weights[:, t:].sum(-1))
        on_upper.append(weights[:, 2 * t:].sum(-1))
    if not sentences:
        raise ValueError("cell_statistics needs at least one sentence pair")
    on_cells, on_upper = torch.cat(on_cells), torch.cat(on_upper)
    mean = lambda v: sum(v) / len(v) if v else float("nan")  # noqa: E731
    return CellStatistics(sentences, on_cells.numel(), mean(cell_cos), mean(state_cos), len(cell_cos),
                          float(on_cells.mean()), float(on_upper.mean()))


def write_tsv(fig: CKYFigure, path: str) -> None:
    """One row per target token and CKY cell: target, level i, start j, the span's tokens, the weight."""
    with open(path, "w", encoding="utf-8") as f:
        f.write("target\tlevel\tstart\tspan\tweight\n")
        for k, word in enumerate(fig.target):
            for j in range(len(fig.source)):
                for i in range(1, len(fig.source) - j + 1):
                    span = " ".join(fig.source[j:j + i])
                    f.write(f"{word}\t{i}\t{j}\t{span}\t{fig.grid[k, j, i - 1].item():.6f}\n")


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
    cmap = plt.get_cmap("Greys").with_extremes(bad="#dde6f0")  # cells beyond the sentence (no span there)
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
