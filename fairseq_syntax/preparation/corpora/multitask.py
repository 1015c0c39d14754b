"""C&H baseline: build the translate + parse multi-task corpus for a plain transformer.

Currey & Heafield (2019), as in Bugliarello & Okazaki (2020): every training
source sentence appears twice, once tagged for translation (target: its
translation) and once tagged for parsing (target: its linearised dependency
tree, :mod:`fairseq_syntax.data.trees.linearize`); the tag is prepended and
appended to the source; both halves are shuffled together. Validation and
test splits get the translation tag only, so that fairseq-generate on them
decodes translations. Train on the output with ``prepare.py --syntax none``
and fairseq's ``transformer``. The command is ``fairseq-syntax-multitask``.
"""
import os
import random

from fairseq_syntax.data.trees.conllu import read_conllu
from fairseq_syntax.data.trees.linearize import linearize_tree
from fairseq_syntax.data.trees.tree import unit_tree
from fairseq_syntax.errors import SyntaxDataError
from fairseq_syntax.text_reading import open_text


def _target_lines(pref, lang, units):

    conllu = f"{pref}.{lang}.conllu"
    if os.path.exists(conllu):
        return [" ".join(s.forms(units)) for s in read_conllu(conllu)]
    with open_text(f"{pref}.{lang}") as f:
        return [" ".join(line.split()) for line in f]


def build_split(pref, src, tgt, units, translate_tag, parse_tag, with_parse, progress=False):
    """(source lines, target lines) of one split."""
    from tqdm import tqdm


    conllu = f"{pref}.{src}.conllu"
    sents = list(read_conllu(conllu))
    targets = _target_lines(pref, tgt, units)
    if len(targets) != len(sents):
        raise SyntaxDataError(f"{pref}.{tgt}", f"{len(targets)} target lines but {len(sents)} source sentences "
                              f"in {conllu}")
    out_src, out_tgt = [], []
    pairs = tqdm(zip(sents, targets), total=len(sents), desc=f"multitask {pref}", unit="sent", disable=not progress)
    for k, (s, t) in enumerate(pairs):
        if not t.strip():
            raise SyntaxDataError(f"{pref}.{tgt}:{k + 1}", "empty line: every line must hold one sentence")
        forms, heads, labels = unit_tree(s, units)  # the tree over the same units as the source text
        text = " ".join(forms)
        out_src.append(f"{translate_tag} {text} {translate_tag}")
        out_tgt.append(t)
        if with_parse:
            out_src.append(f"{parse_tag} {text} {parse_tag}")
            out_tgt.append(linearize_tree(forms, heads, labels, f"{conllu}, sentence {k + 1}"))
    return out_src, out_tgt


def write_multitask_corpus(splits, src, tgt, output_dir, units="surface", translate_tag="<translate>",
                           parse_tag="<parse>", seed=1, progress=False):
    """Write OUTPUT_DIR/SPLIT.{SRC,TGT} for each split name -> prefix in ``splits`` (None: skipped); the
    training split shuffled with ``seed``. Yields (split, lines written) as each split is done."""
    os.makedirs(output_dir, exist_ok=True)
    for split, pref in splits.items():
        if pref is None:
            continue
        out_src, out_tgt = build_split(pref, src, tgt, units, translate_tag, parse_tag, with_parse=split == "train",
                                       progress=progress)
        if split == "train":
            order = list(range(len(out_src)))
            random.Random(seed).shuffle(order)
            out_src, out_tgt = [out_src[i] for i in order], [out_tgt[i] for i in order]
        for lang, lines in ((src, out_src), (tgt, out_tgt)):
            with open(os.path.join(output_dir, f"{split}.{lang}"), "w", encoding="utf-8") as f:
                f.write("\n".join(lines) + "\n")
        yield split, len(out_src)
