"""Binarize aligned syntax files into fairseq mmap datasets next to the tokens."""
import argparse
import os
import time

from fairseq_syntax.cli import prog_name, run


def get_parser():
    p = argparse.ArgumentParser(
        prog=prog_name("binarize"),
        description="Turn PREFIX.{words,heads,labels} (from align.py) into fairseq mmap indexed datasets "
        "DESTDIR/SPLIT.SRC-TGT.LANG.{words,heads,labels}.{bin,idx} and the label dictionary "
        "DESTDIR/dict.LANG.labels.txt (built from the train split, reused for the others). If fairseq-preprocess "
        "already wrote the token dataset there, every sentence's length is checked against it.",
    )
    p.add_argument("--aligned-prefix", required=True, help="prefix of the align.py output")
    p.add_argument("--destdir", required=True, help="fairseq data-bin directory")
    p.add_argument("--split", required=True, help="split name, e.g. train, valid, test")
    p.add_argument("--source-lang", "-s", required=True, help="source language code (the data-bin's SRC-TGT)")
    p.add_argument("--target-lang", "-t", required=True, help="target language code")
    p.add_argument("--lang", required=True, help="the side these files describe (source or target language)")
    p.add_argument("--label-dict", default=None,
                   help="label dictionary to use (default: DESTDIR/dict.LANG.labels.txt, built if absent)")
    return p


def binarize_corpus(corpus, destdir, split, src, tgt, lang, label_dict_path=None):
    """Write one side's syntax datasets; returns the label dictionary used."""
    from fairseq.data import Dictionary

    from fairseq_syntax.data import syntax_io

    os.makedirs(destdir, exist_ok=True)
    label_dict_path = label_dict_path or syntax_io.label_dict_path(destdir, lang)
    if os.path.exists(label_dict_path):
        label_dict = Dictionary.load(label_dict_path)
    else:
        label_dict = syntax_io.build_label_dictionary(corpus.labels)
        label_dict.save(label_dict_path)
    prefix = syntax_io.syntax_prefix(destdir, split, src, tgt, lang)
    tokens_idx = prefix + ".idx"
    if os.path.exists(tokens_idx):
        from fairseq.data.indexed_dataset import MMapIndexedDataset

        index = MMapIndexedDataset.Index(tokens_idx)
        token_sizes = index.sizes.copy()  # the index's arrays live in its mmap: copy before it closes
        del index
        syntax_io.check_sizes(
            token_sizes, corpus.sizes, f"split '{split}', side {lang} ({prefix})"
        )
    corpus.write_binary(prefix, label_dict)
    return label_dict


def align_and_binarize(conllu, bpe, destdir, split, src, tgt, lang, units="auto", text_prefix=None,
                       progress=True, label_dict_path=None, total=None):
    """Align a CoNLL-U file to its BPE'd text and binarize the result next to the tokens, streaming (memory
    does not grow with the corpus); same files as align_corpus + binarize_corpus. Returns the label
    dictionary used."""
    from fairseq.data import Dictionary

    from fairseq_syntax.data import syntax_io
    from fairseq_syntax.data.subword_align import iter_aligned_blocks

    os.makedirs(destdir, exist_ok=True)
    label_dict_path = label_dict_path or syntax_io.label_dict_path(destdir, lang)
    label_dict = Dictionary.load(label_dict_path) if os.path.exists(label_dict_path) else None
    prefix = syntax_io.syntax_prefix(destdir, split, src, tgt, lang)
    writer = syntax_io.StreamingSyntaxWriter(prefix, text_prefix)
    try:
        for block in iter_aligned_blocks(conllu, bpe, units, progress=progress, total=total):
            writer.add_block(block)
    except BaseException:
        writer.close()
        raise

    def check(sizes):
        tokens_idx = prefix + ".idx"
        if os.path.exists(tokens_idx):
            from fairseq.data.indexed_dataset import MMapIndexedDataset

            index = MMapIndexedDataset.Index(tokens_idx)
            token_sizes = index.sizes.copy()
            del index
            syntax_io.check_sizes(token_sizes, sizes, f"split '{split}', side {lang} ({prefix})")

    new = label_dict is None
    label_dict = writer.finish(label_dict, check)
    if new:
        label_dict.save(label_dict_path)
    return label_dict


def main(argv=None):
    from fairseq_syntax.data.syntax_io import AlignedCorpus

    args = get_parser().parse_args(argv)
    t0 = time.perf_counter()
    corpus = AlignedCorpus.read_text(args.aligned_prefix)
    binarize_corpus(corpus, args.destdir, args.split, args.source_lang, args.target_lang, args.lang, args.label_dict)
    dt = time.perf_counter() - t0
    print(f"binarized {len(corpus)} sentences in {dt:.1f}s ({len(corpus) / max(dt, 1e-9):.0f} sent/s)")


def cli_main(argv=None):
    run(main, argv)


if __name__ == "__main__":
    cli_main()
