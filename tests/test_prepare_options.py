"""prepare's typed options (fairseq_syntax/preparation/options.py): built once from the command line with the
parser's defaults, a side's options resolved in one place, and no step guessing a default of its own."""
import argparse
import dataclasses
import glob
import os
import re

import pytest

from helpers import ROOT

REQUIRED = ["-s", "en", "-t", "de", "--trainpref", "corpus/train"]


def test_the_options_defaults_are_the_parsers():
    from fairseq_syntax.cli.prepare import get_parser
    from fairseq_syntax.preparation.options import PrepareOptions

    parsed = PrepareOptions.from_namespace(get_parser().parse_args(REQUIRED))
    assert parsed == PrepareOptions(source_lang="en", target_lang="de", trainpref="corpus/train")
    options = {f.name for f in dataclasses.fields(PrepareOptions)}
    dests = {a.dest for a in get_parser()._actions if a.dest != "help"}
    assert options - dests == {"text_digests", "text_record_digest"}  # what the run learns, not options
    assert dests <= options


def test_an_option_the_class_does_not_know_is_an_error():
    from fairseq_syntax.preparation.options import PrepareOptions

    namespace = argparse.Namespace(**dataclasses.asdict(PrepareOptions("en", "de", "t")), new_option=1)
    with pytest.raises(TypeError, match="no field for new_option"):
        PrepareOptions.from_namespace(namespace)


def test_a_sides_options_are_its_own_else_the_shared_ones():
    from fairseq_syntax.cli.prepare import get_parser
    from fairseq_syntax.preparation.options import PrepareOptions

    o = PrepareOptions.from_namespace(get_parser().parse_args(REQUIRED + [
        "--parser", "udpipe", "--parser-target", "spacy", "--parser-model-target", "ja_ginza",
        "--tokenizer-source", "given", "--normalize-target", "moses", "--spm-model-source", "src.model"]))
    src, tgt = o.side("source"), o.side("target")
    assert (src.parser, src.parser_model, src.tokenizer, src.normalize, src.spm_model) == (
        "udpipe", None, "given", "none", "src.model")
    assert (tgt.parser, tgt.parser_model, tgt.tokenizer, tgt.normalize, tgt.spm_model) == (
        "spacy", "ja_ginza", "auto", "moses", None)
    assert src.parser_named and o.uses_sentencepiece
    bare = PrepareOptions("en", "de", "t")
    assert not bare.side("source").parser_named and bare.side("source").parser is None
    assert not bare.uses_sentencepiece
    with pytest.raises(ValueError):
        bare.side("both")


def test_no_step_of_prepare_reads_an_option_by_name():
    """The steps take the typed options: no getattr(args, ...) with a default of its own under preparation/."""
    found = [f"{os.path.relpath(p, ROOT)}:{i}" for p in glob.glob(os.path.join(ROOT, "fairseq_syntax", "preparation",
                                                                               "**", "*.py"), recursive=True)
             for i, line in enumerate(open(p, encoding="utf-8"), 1) if re.search(r"getattr\(args\b", line)]
    assert not found, found
