"""C&H baseline: build the translate + parse multi-task corpus for a plain transformer.

Currey & Heafield (2019), as in Bugliarello & Okazaki (2020): every training
source sentence appears twice, once tagged for translation (target: its
translation) and once tagged for parsing (target: its linearised dependency
tree, :mod:`fairseq_syntax.data.linearize`); the tag is prepended and
appended to the source; both halves are shuffled together. Validation and
test splits get the translation tag only, so that fairseq-generate on them
decodes translations. Train on the output with ``prepare.py --syntax none``
and fairseq's ``transformer``.
"""
import argparse
import os
import random

from fairseq_syntax.cli import prog_name, run


def get_parser():
    p = argparse.ArgumentParser(
        prog=prog_name("multitask"),
        description="C&H multi-task corpus: for each split prefix PREF reads PREF.SRC.conllu (the source parse) "
        "and PREF.TGT.conllu or PREF.TGT (the translation); writes OUT/SPLIT.SRC and OUT/SPLIT.TGT, "
        "whitespace-tokenised. Train: 2 lines per pair (translate, parse), shuffled; valid/test: translate only.",
    )
    p.add_argument("--source-lang", "-s", required=True, help="source language code (file suffix)")
    p.add_argument("--target-lang", "-t", required=True, help="target language code (file suffix)")
    p.add_argument("--trainpref", required=True, help="prefix of the training files")
    p.add_argument("--validpref", default=None, help="prefix of the validation files")
    p.add_argument("--testpref", default=None, help="prefix of the test files")
    p.add_argument("--output-dir", "-o", required=True, help="directory for the multi-task text corpus")
    p.add_argument("--translate-tag", default="<translate>", help="tag around sources to translate")
    p.add_argument("--parse-tag", default="<parse>", help="tag around sources to parse")
    p.add_argument("--units", choices=["surface", "words"], default="surface",
                   help="source text: surface tokens (default) or syntactic words, as in prepare.py")
    p.add_argument("--seed", type=int, default=1, help="shuffling seed (default 1)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    return p


def _target_lines(pref, lang, units):
    from fairseq_syntax.data.conllu import read_conllu

    conllu = f"{pref}.{lang}.conllu"
    if os.path.exists(conllu):
        return [" ".join(s.forms(units)) for s in read_conllu(conllu)]
    with open(f"{pref}.{lang}", encoding="utf-8-sig") as f:
        return [" ".join(line.split()) for line in f]


def build_split(pref, src, tgt, units, translate_tag, parse_tag, with_parse, progress=False):
    """(source lines, target lines) of one split."""
    from tqdm import tqdm

    from fairseq_syntax.data.conllu import read_conllu
    from fairseq_syntax.data.linearize import linearize_tree
    from fairseq_syntax.data.tree import unit_tree
    from fairseq_syntax.errors import SyntaxDataError

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


def main(argv=None):
    args = get_parser().parse_args(argv)
    os.makedirs(args.output_dir, exist_ok=True)
    for split, pref in (("train", args.trainpref), ("valid", args.validpref), ("test", args.testpref)):
        if pref is None:
            continue
        src, tgt = build_split(pref, args.source_lang, args.target_lang, args.units, args.translate_tag,
                               args.parse_tag, with_parse=split == "train", progress=not args.no_progress)
        if split == "train":
            order = list(range(len(src)))
            random.Random(args.seed).shuffle(order)
            src, tgt = [src[i] for i in order], [tgt[i] for i in order]
        for lang, lines in ((args.source_lang, src), (args.target_lang, tgt)):
            with open(os.path.join(args.output_dir, f"{split}.{lang}"), "w", encoding="utf-8") as f:
                f.write("\n".join(lines) + "\n")
        print(f"{split}: {len(src)} lines -> {args.output_dir}/{split}.{{{args.source_lang},{args.target_lang}}}")


def cli_main(argv=None):
    run(main, argv)


if __name__ == "__main__":
    cli_main()
