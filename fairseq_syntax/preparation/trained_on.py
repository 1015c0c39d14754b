"""What a checkpoint records of the data it was trained on, and the check that a decoding reads the same.

The ``syntax_translation`` task saves these in every checkpoint's ``task_state`` and checks them when it loads
one; :mod:`fairseq_syntax.inference.pack` reads them to copy the right BPE codes. The keys live here, below
both, so that neither imports the other for them.
"""
import hashlib
import os

from fairseq_syntax.errors import SyntaxDataError

#: the key of the training command's syntax options in a checkpoint's task state
SAVED_SYNTAX_OPTIONS = "fairseq_syntax_options"
#: task_state key: a digest of each dictionary the model was trained with (its token and label indices)
SAVED_DICTIONARIES = "fairseq_syntax_dictionaries"
#: task_state key: the data-bin's tree control ("KIND, seed N"; "none": the parser's trees)
SAVED_TREE_CONTROL = "fairseq_syntax_tree_control"
#: task_state key: the SHA-256 of each language's BPE codes (or SentencePiece model) in the preparation record the
#: model was trained with
SAVED_BPE_CODES = "fairseq_syntax_bpe_codes"


def dictionary_digests(sides) -> dict:
    """File name -> a digest of the dictionary's symbols in index order, for each (lang, token dictionary, label
    dictionary or None) of ``sides``."""
    out = {}
    for lang, d, labels in sides:
        for name, dictionary in ((f"dict.{lang}.txt", d), (f"dict.{lang}.labels.txt", labels)):
            if dictionary is not None:
                out[name] = hashlib.sha256("\n".join(dictionary.symbols).encode("utf-8")).hexdigest()[:16]
    return out


def check_dictionaries(saved, mine: dict, data_dir: str) -> None:
    """A checkpoint read with dictionaries other than its training's (another data-bin of the same sizes) maps
    every index to another token or label and decodes garbage without an error: refused."""
    if not isinstance(saved, dict):
        return  # a checkpoint saved before the digests
    differ = sorted(k for k, v in saved.items() if k in mine and mine[k] != v)
    if differ:
        raise SyntaxDataError(os.path.join(data_dir, differ[0]), "not the dictionary this checkpoint was "
                              f"trained with ({', '.join(differ)} differ{'s' if len(differ) == 1 else ''}): "
                              "its indices name other tokens or labels; give the data-bin it was trained on")


def codes_digests(record, langs, data_dir: str) -> dict:
    """Language -> the SHA-256 of the file that segments it in the preparation record ``record``: its BPE codes or
    its SentencePiece model ({} without a record or segmentation): raw input decoded later must be segmented
    with these."""
    from fairseq_syntax.durable_files import file_sha256

    out = {}
    for lang in langs if record is not None else ():
        path = record.segmentation_file(lang, data_dir)
        if path:
            out[lang] = file_sha256(path)
    return out


def tree_control_name(record) -> str:
    """The preparation record's tree control as a checkpoint keeps it ("none" without a record or a control)."""
    entry = getattr(record, "tree_control", None)
    return f"{entry['kind']}, seed {entry['seed']}" if entry else "none"


def check_tree_control(saved, mine: str, data_dir: str) -> None:
    """A model trained on controlled trees read with a data-bin of other trees (or the other way round) would be
    scored on trees it never saw: refused, naming both."""
    if isinstance(saved, str) and saved != mine:
        raise SyntaxDataError(os.path.join(data_dir, "preparation.json"), f"its trees are --tree-control {mine}, "
                              f"but the checkpoint was trained on --tree-control {saved}: give the data-bin it was "
                              "trained on")
