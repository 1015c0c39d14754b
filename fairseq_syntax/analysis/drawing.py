"""The drawing of fairseq-syntax-plot's pictures (matplotlib, Agg backend): dependency-arc diagrams, attention
heatmaps with marks, and the PNG that carries its record as JSON metadata (:func:`save`, :func:`read_metadata`).
The pictures themselves are :mod:`fairseq_syntax.analysis.plots`."""
import json
import os
import textwrap

import numpy as np

#: the PNG text chunk that holds a picture's record
METADATA_KEY = "fairseq-syntax-plot"

def pyplot_agg():
    """matplotlib's pyplot on the Agg backend (no display needed)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def wrapped_title(head, text, width=110):
    """``head``: then ``text``, each line wrapped at ``width`` characters."""
    return head + ":\n" + "\n".join(textwrap.fill(line, width) for line in text.split("\n"))


def draw_arcs(ax, words, trees, labels=None):
    """A dependency-arc diagram: the words on a line, ``trees`` = [(heads, where, colours)] drawn above
    (``where`` = 1) or below (-1) it; heads are 1-based (0 = root), colours one per word.

    An arc runs from the head to the dependent (arrowhead at the dependent);
    the root gets a vertical arrow. ``labels`` (one per word of the first
    tree) are written at the top of its arcs.
    """
    from matplotlib.patches import Arc

    n = len(words)
    top = {1: 1.0, -1: 1.0}
    for heads, where, colours in trees:
        for w, h in enumerate(heads, 1):
            d, colour = w - 1, colours[w - 1]
            if h == 0:
                height = 0.6 * max(1, n) ** 0.5
                ax.annotate("", xy=(d, where * 0.25), xytext=(d, where * (0.25 + height)),
                            arrowprops=dict(arrowstyle="->", color=colour, lw=1.2))
                ax.text(d, where * (0.3 + height), "ROOT", ha="center", va="bottom" if where > 0 else "top",
                        fontsize=6, color=colour)
                top[where] = max(top[where], 0.5 + height)
                continue
            span = abs(h - w)
            height = span  # the arc's top is span/2 above the line
            theta = (0, 180) if where > 0 else (180, 360)
            ax.add_patch(Arc(((h - 1 + d) / 2, where * 0.25), span, height, theta1=theta[0], theta2=theta[1],
                             color=colour, lw=1.2))
            ax.plot([d], [where * 0.3], marker="v" if where > 0 else "^", color=colour, markersize=4)
            if labels is not None and where == trees[0][1] and labels[w - 1] not in ("_", ""):
                ax.text((h - 1 + d) / 2, where * (0.3 + height / 2), labels[w - 1], ha="center",
                        va="bottom" if where > 0 else "top", fontsize=6, color=colour)
            top[where] = max(top[where], 0.5 + height / 2)
    # horizontal words, the font shrunk until the longest fits its slot (arcs meet the line beside the words)
    slot = ax.get_position().width * ax.figure.get_figwidth() * 72 / max(n, 1)  # points per word
    size = min(8.0, max(3.0, slot / (0.62 * max([len(w) for w in words] + [1]))))
    for k, word in enumerate(words):
        ax.text(k, 0, word, ha="center", va="center", fontsize=size,
                bbox=dict(boxstyle="round,pad=0.15", fc="white", ec="none"))
    ax.set_xlim(-0.8, n - 0.2)
    below = any(where < 0 for _, where, _ in trees)
    ax.set_ylim(-top[-1] - 0.3 if below else -1.0, top[1] + 0.3)
    ax.axis("off")


def tree_colours(heads, gold, base):
    """One colour per word: ``base`` without gold, else green where the head agrees with gold, red where not."""
    if gold is None:
        return [base] * len(heads)
    return ["tab:green" if h == g else "tab:red" for h, g in zip(heads, gold)]


def draw_heatmap(ax, matrix, row_labels, col_labels, marks=(), cmap="Blues", vmax=None, colorbar=True):
    """``matrix`` (rows x columns) as an image, axes labelled with the tokens; ``marks`` = [(kind, row, col)]
    with kind ``gold`` (red box), ``gold-hidden`` (dashed red box), ``argmax`` (dot) or ``parent`` (x)."""
    from matplotlib.patches import Rectangle

    im = ax.imshow(matrix, cmap=cmap, vmin=0, vmax=vmax if vmax is not None else max(float(np.nanmax(matrix)), 1e-9),
                   aspect="equal", interpolation="nearest")
    small = 7 if max(len(row_labels), len(col_labels)) < 30 else 5
    ax.set_xticks(range(len(col_labels)))
    ax.set_xticklabels(col_labels, rotation=90, fontsize=small)
    ax.set_yticks(range(len(row_labels)))
    ax.set_yticklabels(row_labels, fontsize=small)
    for kind, r, c in marks:
        if kind in ("gold", "gold-hidden"):
            ax.add_patch(Rectangle((c - 0.5, r - 0.5), 1, 1, fill=False, ec="red", lw=1.4,
                                   ls="-" if kind == "gold" else "--"))
        elif kind == "argmax":
            ax.plot([c], [r], marker="o", color="orange", markersize=3)
        elif kind == "parent":
            ax.plot([c], [r], marker="x", color="red", markersize=5)
    if colorbar:
        ax.figure.colorbar(im, ax=ax, fraction=0.046, pad=0.04)
    return im


def save(fig, output, record, json_path=None, dpi=150):
    """Write the PNG (``record`` without its matrices in the PNG metadata) and the optional JSON file."""
    meta = {k: v for k, v in record.items() if k != "matrices"}
    os.makedirs(os.path.dirname(os.path.abspath(output)), exist_ok=True)
    fig.savefig(output, dpi=dpi, metadata={"Title": record.get("title", ""), "Software": "fairseq-syntax-plot",
                                           METADATA_KEY: json.dumps(meta, ensure_ascii=True)})
    pyplot_agg().close(fig)
    print(f"wrote {output}")
    if json_path:
        with open(json_path, "w", encoding="utf-8") as f:
            json.dump(record, f, ensure_ascii=False, indent=1)
        print(f"wrote {json_path}")


def read_metadata(png):
    """The JSON record a fairseq-syntax-plot PNG carries (for tests and notebooks)."""
    from PIL import Image

    with Image.open(png) as im:
        return json.loads(im.text[METADATA_KEY])
