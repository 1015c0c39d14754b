"""A split's syntax side in a data-bin: found, opened, checked against its tokens.

The aligned syntax datasets of a side (``{split}.{src}-{tgt}.{lang}.{words,heads,labels}``, data/alignment/syntax_io.py)
sit next to fairseq's token datasets, under either direction's file names (one data-bin serves both
directions). :func:`syntax_prefix_of` finds them, :func:`load_side` opens a split's side (its shards combined
as fairseq combines the token shards) and checks its sizes against the tokens, and
:func:`check_training_sides` checks, before training, that every side the model reads or learns is there.
"""
import logging
import os
from typing import Iterable, Optional

from fairseq_syntax.data.alignment import syntax_io
from fairseq_syntax.data.datasets.syntax_dataset import SideSyntax
from fairseq_syntax.errors import SyntaxDataError

logger = logging.getLogger(__name__)


def syntax_prefix_of(data_path: str, split: str, src: str, tgt: str, lang: str) -> Optional[str]:
    """The prefix of ``lang``'s datasets of ``split`` in either direction's file names (where its token dataset
    is), or None."""
    for a, b in ((src, tgt), (tgt, src)):
        p = syntax_io.syntax_prefix(data_path, split, a, b, lang)
        if os.path.exists(p + ".idx"):
            return p
    return None


def check_training_sides(data_path: str, splits: Iterable[str], src: str, tgt: str, request, model_name: str):
    """Every syntax side the model reads or learns (inputs and parse supervision: ``request``) is in the data-bin
    for each split that has token data: a missing side is one error naming the files and what to do."""
    for side, lang in (("source", src), ("target", tgt)):
        fields = request.needs(side)
        if not fields:
            continue
        files = ["words", "heads"] + (["labels"] if "labels" in fields else [])
        for split in splits:
            prefix = syntax_prefix_of(data_path, split, src, tgt, lang)
            if prefix is None:
                continue  # no token data for this split either: fairseq names the missing split
            missing = [f for f in files if not syntax_io.syntax_exists(prefix, f)]
            if missing:
                use = "an input" if request.required(side) else "what its parse loss learns"
                names = missing[0] if len(missing) == 1 else "{" + ",".join(missing) + "}"
                again = "--syntax source,target" if side == "target" else "--syntax source (or source,target)"
                raise SyntaxDataError(
                    f"{prefix}.{names}.{{bin,idx}}",
                    f"missing: the model ({model_name}) needs the {side} side's syntax ({','.join(sorted(fields))}: "
                    f"{use}) for split '{split}'; prepare the data-bin with {again}, or train a model that does not "
                    "use it")


def load_side(data_path, split, src, tgt, lang, side, token_sizes, combine, label_dict, request,
              upsample_primary=1) -> Optional[SideSyntax]:
    """Open the syntax datasets of one side of a split (None if there are none and the model takes none)."""
    from fairseq.data import ConcatDataset

    prefixes = []
    for k in range(10_000):
        found = syntax_prefix_of(data_path, split + (str(k) if k > 0 else ""), src, tgt, lang)
        if found is None or not (k == 0 or combine):
            break
        prefixes.append(found)
        if not combine:
            break
    if not prefixes or not syntax_io.syntax_exists(prefixes[0], "words"):
        where = os.path.join(data_path, f"{split}.{src}-{tgt}.{lang}.words.{{bin,idx}}")
        required = request.required(side)
        if required:
            raise SyntaxDataError(where, f"{side} syntax is a model input ({','.join(sorted(required))}) but the "
                                  "syntax datasets are missing: prepare the data-bin with this side's syntax "
                                  "(fairseq-syntax-prepare --syntax ...)")
        if request.needs(side):
            logger.info("%s: no %s syntax data; batches of split %r carry no %s supervision", where, side, split,
                        side)
        return None
    parts = {f: [] for f in ("words", "heads", "labels")}
    for p in prefixes:
        for f in ("words", "heads"):
            parts[f].append(syntax_io.load_field(p, f))
        if syntax_io.syntax_exists(p, "labels") and label_dict is not None:
            parts["labels"].append(syntax_io.load_field(p, "labels"))
    ratios = [1] * len(prefixes)  # shards are combined exactly as fairseq combines the token shards
    ratios[0] = upsample_primary

    def combine_parts(datasets):
        return datasets[0] if len(datasets) == 1 else ConcatDataset(datasets, ratios)

    words, heads = combine_parts(parts["words"]), combine_parts(parts["heads"])
    labels = combine_parts(parts["labels"]) if len(parts["labels"]) == len(prefixes) else None
    where = f"split '{split}', {side} side ({lang}, {prefixes[0]})"
    syntax_io.check_sizes(token_sizes, words.sizes, where)
    syntax_io.check_sizes(words.sizes, heads.sizes, where + " heads vs words", offset=0)
    if labels is not None:
        syntax_io.check_sizes(words.sizes, labels.sizes, where + " labels vs words", offset=0)
    return SideSyntax(words, heads, labels, label_dict, name=where)
