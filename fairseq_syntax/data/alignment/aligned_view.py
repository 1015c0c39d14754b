"""One sentence of a data-bin as its tree met its vocabulary: per subword the piece, its unit, the unit's head and
label (``fairseq-syntax-inspect``).

Units are named by parser words, 0-based: a unit is a word, a multiword token (BPE surface units) or the words
that share a SentencePiece piece (:mod:`.piece_align`), and is named by its first word (the data-bin's
``firstwords`` dataset, :mod:`.syntax_io`); the head the same way, -1 for the root. A data-bin made without
that dataset (``fairseq-syntax-binarize`` from text files) names units by their own index instead, and says so.
fairseq is imported when a data-bin is read, not with this module.
"""
from __future__ import annotations

import os
from typing import Dict, List, Optional

from fairseq_syntax.data.alignment import syntax_io
from fairseq_syntax.errors import OptionError, SyntaxDataError

SIDES = (("source", 0), ("target", 1))


def _dataset(prefix: str, what: str):
    from fairseq.data.indexed_dataset import MMapIndexedDataset

    for ext in (".bin", ".idx"):
        if not os.path.exists(prefix + ext):
            raise SyntaxDataError(prefix + ext, f"missing: the data-bin has no {what}")
    return MMapIndexedDataset(prefix)


def language_pair(data_dir: str, split: str, src: Optional[str], tgt: Optional[str]):
    """(src, tgt) given, or read off the split's token datasets (``SPLIT.SRC-TGT.LANG.bin``)."""
    if src and tgt:
        return src, tgt
    import re

    pairs = sorted({(m.group(1), m.group(2)) for name in os.listdir(data_dir)
                    for m in [re.match(rf"^{re.escape(split)}\.([^.-]+)-([^.]+)\.[^.]+\.bin$", name)] if m})
    if len(pairs) != 1:
        found = ", ".join(f"{a}-{b}" for a, b in pairs) or "none"
        raise OptionError(f"{data_dir}: the language pair of split {split!r} ({found}): give -s and -t")
    return pairs[0]


def sentence_view(data_dir: str, split: str, index: int, src: str = None, tgt: str = None) -> Dict[str, object]:
    """``{"split", "index", "source", "target", ...}``: each side a list of ``{"piece", "word", "head", "label"}``
    (None for a side without syntax), and ``named_by``: ``word`` (units named by their first parser word),
    ``unit`` (by their own index: no firstwords dataset), or both joined by " and "."""
    from fairseq.data import Dictionary

    if not os.path.isdir(data_dir):
        raise SyntaxDataError(data_dir, "no such data-bin folder")
    src, tgt = language_pair(data_dir, split, src, tgt)
    out: Dict[str, object] = {"data": data_dir, "split": split, "index": index, "languages": [src, tgt]}
    named_by = set()
    for (side, k), lang in zip(SIDES, (src, tgt)):
        prefix = syntax_io.syntax_prefix(data_dir, split, src, tgt, lang)
        tokens = _dataset(prefix, f"{split} tokens of {lang}")
        if not 0 <= index < len(tokens):
            raise OptionError(f"--index {index}: split {split} has sentences 0..{len(tokens) - 1}")
        dictionary = Dictionary.load(os.path.join(data_dir, f"dict.{lang}.txt"))
        pieces = [dictionary[int(i)] for i in tokens[index][:-1]]  # EOS last
        if not syntax_io.syntax_exists(prefix, "words"):
            out[side] = [{"piece": p, "word": None, "head": None, "label": None} for p in pieces]
            continue
        units = _dataset(prefix + ".words", "words")[index].tolist()
        heads = _dataset(prefix + ".heads", "heads")[index].tolist()
        label_ids = _dataset(prefix + ".labels", "labels")[index].tolist()
        labels = Dictionary.load(syntax_io.label_dict_path(data_dir, lang))
        if syntax_io.syntax_exists(prefix, syntax_io.FIRST_WORDS):
            first = _dataset(prefix + "." + syntax_io.FIRST_WORDS, "first words")[index].tolist()
            named_by.add("word")
        else:
            first = [u - 1 for u in units]
            named_by.add("unit")
        if len(units) != len(pieces):
            raise SyntaxDataError(prefix + ".words.bin", f"sentence {index}: {len(units)} syntax entries for "
                                  f"{len(pieces)} subwords")
        name_of = {}
        for u, f in zip(units, first):
            name_of.setdefault(u, f)
        out[side] = [{"piece": p, "word": name_of[u], "head": -1 if h == 0 else name_of[h], "label": labels[lab]}
                     for p, u, h, lab in zip(pieces, units, heads, label_ids)]
    out["named_by"] = " and ".join(sorted(named_by)) or None
    return out


def format_view(view: Dict[str, object]) -> str:
    """A line per subword: position, piece, unit, head, label."""
    lines = []
    for (side, _), lang in zip(SIDES, view["languages"]):
        rows: List[dict] = view[side]
        lines.append(f"# {side} ({lang}), sentence {view['index']} of {view['split']}: {len(rows)} subwords"
                     + ("" if rows and rows[0]["word"] is not None else ", no syntax"))
        width = max([len(r["piece"]) for r in rows] + [5])
        lines.append(f"{'pos':>4}  {'piece':<{width}}  {'word':>4}  {'head':>4}  label")
        for k, r in enumerate(rows):
            if r["word"] is None:
                lines.append(f"{k:>4}  {r['piece']:<{width}}")
            else:
                lines.append(f"{k:>4}  {r['piece']:<{width}}  {r['word']:>4}  {r['head']:>4}  {r['label']}")
    if view.get("named_by") == "word":
        lines.append("# word, head: 0-based parser words (a unit of several words named by its first), -1 = root")
    elif view.get("named_by"):
        lines.append("# word, head: 0-based units where a side has no firstwords dataset (made by "
                     "fairseq-syntax-binarize from text files), else parser words; -1 = root")
    return "\n".join(lines)
