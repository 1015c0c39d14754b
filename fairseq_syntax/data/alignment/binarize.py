"""Binarize aligned syntax into fairseq mmap datasets next to the tokens (``{split}.{src}-{tgt}.{lang}.{words,
heads,labels}.{bin,idx}`` and the label dictionary ``dict.{lang}.labels.txt``), checking every sentence's length
against the token dataset fairseq-preprocess wrote. fairseq (and torch) are imported when binarising starts, not
with this module."""
import os

from fairseq_syntax.data.alignment import syntax_io
from fairseq_syntax.data.alignment.subword_align import iter_aligned_blocks


def binarize_corpus(corpus, destdir, split, src, tgt, lang, label_dict_path=None):
    """Write one side's syntax datasets; returns the label dictionary used."""
    from fairseq.data import Dictionary


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
                       progress=True, label_dict_path=None, total=None, raw=None, spm_model=None):
    """Align a CoNLL-U file to its BPE'd text and binarize the result next to the tokens, streaming (memory
    does not grow with the corpus); same files as align_corpus + binarize_corpus. With ``raw`` (each
    sentence's raw text, a line each), ``bpe`` holds SentencePiece pieces of that text, aligned by character
    offsets (:mod:`.piece_align`; ``spm_model``: the model that made them, for sentences it normalised).
    Returns the label dictionary used."""
    from fairseq.data import Dictionary


    os.makedirs(destdir, exist_ok=True)
    label_dict_path = label_dict_path or syntax_io.label_dict_path(destdir, lang)
    label_dict = Dictionary.load(label_dict_path) if os.path.exists(label_dict_path) else None
    prefix = syntax_io.syntax_prefix(destdir, split, src, tgt, lang)
    writer = syntax_io.StreamingSyntaxWriter(prefix, text_prefix)
    if raw is not None:
        from fairseq_syntax.data.alignment.piece_align import iter_piece_aligned_blocks, load_sentencepiece

        blocks = iter_piece_aligned_blocks(conllu, raw, bpe, load_sentencepiece(spm_model) if spm_model else None,
                                           progress=progress, total=total)
    else:
        blocks = iter_aligned_blocks(conllu, bpe, units, progress=progress, total=total)
    try:
        for block in blocks:
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


