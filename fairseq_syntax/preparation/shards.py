"""``prepare --shard I/N``: one piece of the preparation's long steps (parsing, the language filter, BPE), as one
task of a SLURM array; the pieces commit chunks into the shared work folder, and the same command without
``--shard`` then assembles them and finishes the data-bin.
"""
from __future__ import annotations

import io
import itertools
import logging
import os

from fairseq_syntax.preparation.chunked import ChunkStore
from fairseq_syntax.data.trees.conllu import read_conllu, sentence_blocks
from fairseq_syntax.errors import SyntaxDataError
from fairseq_syntax.preparation.pair_selection import language_mask
from fairseq_syntax.preparation.parse_step import (
    load_side_parsers,
    parse_side,
    parser_input,
    sides_to_parse,
)
from fairseq_syntax.preparation.side_texts import (
    count_lines_of,
    first_units,
    units_of,
)
from fairseq_syntax.text_reading import open_text

logger = logging.getLogger(__name__)


def _shard_token_lines(source, units, chunk_size):
    """The tokenised text of items a..b-1 of a training side, as the full run will write it, for a shard's
    language filter: from this shard's parse chunks, a given CoNLL-U file or the raw text."""

    kind, path = source

    def lines(a, b):
        if kind == "text":
            with open_text(path) as f:
                for line in itertools.islice(f, a, b):
                    yield line.rstrip("\r\n")
            return
        if kind == "parsed":
            store = ChunkStore(path, None)
            for c in range(a // chunk_size, -(-b // chunk_size)):
                data = store.read(c)
                if data is None:
                    raise SyntaxDataError(store.data_path(c), "this shard's parse chunk is missing or corrupt; "
                                          "run the shard again")
                for s in read_conllu(io.StringIO(data.decode("utf-8")), store.data_path(c)):
                    yield " ".join(s.forms(units))
            return
        blocks = "".join(itertools.islice(sentence_blocks(path), a, b))
        for s in read_conllu(io.StringIO(blocks), path):
            yield " ".join(s.forms(units))

    return lines



def prepare_shard(args, shard, syntax_sides, work):
    """--shard I/N: parse (and language-filter) only shard I of the training pairs, committing chunks into
    WORKDIR; the same command without --shard then finds them finished and does the rest."""
    src, tgt = args.source_lang, args.target_lang
    parsers = {}
    load_side_parsers(args, sides_to_parse(args, [args.trainpref], syntax_sides), parsers)
    sources = {}
    total = None
    for lang, side in ((src, "source"), (tgt, "target")):
        conllu, raw = f"{args.trainpref}.{lang}.conllu", f"{args.trainpref}.{lang}"
        if args.train_first:
            if os.path.exists(conllu):
                conllu = first_units(conllu, args.train_first, os.path.join(work, f"train.first.{lang}.conllu"))
            if os.path.exists(raw):
                raw = first_units(raw, args.train_first, os.path.join(work, f"train.first.{lang}"))
        if side in syntax_sides and not os.path.exists(conllu):
            if not os.path.exists(raw):
                raise SyntaxDataError(raw, "neither this file nor its .conllu exists")
            raw = parser_input(args, raw, conllu, "train", lang, side, syntax_sides, work)
            out = os.path.join(work, f"train.{lang}.conllu")
            res = parse_side(args, raw, out, lang, side, shard=shard, parsers=parsers)
            print(f"shard {args.shard}: {lang}: parsed {res.processed} sentences ({res.reused} reused)")
            sources[lang] = ("parsed", out)
            total = res.items
        elif os.path.exists(raw) and side not in syntax_sides:
            sources[lang] = ("text", raw)
        elif os.path.exists(conllu):
            sources[lang] = ("conllu", conllu)
        else:
            raise SyntaxDataError(raw, "neither this file nor its .conllu exists")
    if args.lang_filter:
        if total is None:
            kind, path = sources[src]
            total = sum(1 for _ in units_of(path)) if kind == "conllu" else count_lines_of(path)
        a_lines = _shard_token_lines(sources[src], args.units, args.chunk_size)
        b_lines = _shard_token_lines(sources[tgt], args.units, args.chunk_size)

        def pairs(a, b):
            for x, y in zip(a_lines(a, b), b_lines(a, b)):
                yield x.strip(), y.strip()

        language_mask(args, None, work, items=pairs, total=total)
        print(f"shard {args.shard}: language filter done")
    print(f"shard {args.shard} done: run the same command without --shard once every shard is done")
