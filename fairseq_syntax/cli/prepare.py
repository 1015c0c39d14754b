"""``fairseq-syntax-prepare`` (``preprocess/prepare.py``): one command from a parallel corpus to a fairseq
data-bin with aligned syntax (parse, BPE, fairseq-preprocess, align, binarize; see
:mod:`fairseq_syntax.preparation.prepare`)."""
from __future__ import annotations

import argparse

from fairseq_syntax.cli import prog_name, run
from fairseq_syntax.cli.common import add_pair_and_splits, add_scale_options
from fairseq_syntax.errors import OptionError
from fairseq_syntax.preparation.options import PrepareOptions
from fairseq_syntax.preparation.prepare import prepare
from fairseq_syntax.process_tree import end_children_with_this_process

PARSER_CHOICES = ["stanza", "spacy", "udpipe"]


def get_parser():
    p = argparse.ArgumentParser(
        prog=prog_name("prepare"),
        description="Parallel corpus (raw text and/or CoNLL-U) -> fairseq data-bin with aligned syntax. For each "
        "split prefix PREF and language L it reads PREF.L.conllu when present, else PREF.L (parsed if that side "
        "needs syntax, else tokenised as --tokenizer-SIDE says). Then BPE (subword-nmt) or SentencePiece "
        "(--spm-vocab-size, --spm-model), fairseq-preprocess, align (SentencePiece: by character offsets into the "
        "raw sentence), binarize.",
    )
    add_pair_and_splits(p, files="PREF.L or PREF.L.conllu")
    p.add_argument("--destdir", default=None, help="output data-bin directory (required, except with --text-only)")
    p.add_argument("--overwrite", action="store_true",
                   help="rebuild the data-bin that --destdir already holds (its dictionaries are replaced); without "
                   "it prepare refuses such a directory before any work. The parse and BPE steps' finished chunks "
                   "under --workdir are reused either way")
    p.add_argument("--workdir", default=None,
                   help="intermediate files (parses, tokenised and BPE'd text, aligned syntax); default DESTDIR/work")
    p.add_argument("--syntax", default="source,target",
                   help="sides that get syntax data: 'source,target' (default), 'source', 'target' or 'none'")
    p.add_argument("--parser", choices=PARSER_CHOICES, default=None,
                   help="parser for syntax sides that have no CoNLL-U file (default stanza); "
                   "--parser-source / --parser-target choose one per side. For a side given as CoNLL-U, naming its "
                   "parser records it for decoding raw text (DESTDIR/preparation.json)")
    p.add_argument("--parser-source", choices=PARSER_CHOICES, default=None,
                   help="parser of the source side (default: --parser), e.g. spacy for Japanese (GiNZA)")
    p.add_argument("--parser-target", choices=PARSER_CHOICES, default=None,
                   help="parser of the target side (default: --parser), e.g. udpipe for English")
    p.add_argument("--parser-model-source", default=None,
                   help="the source side's parser model: for spacy a package or path (ja_ginza when not given), "
                   "for udpipe the .udpipe file (needed), for stanza none (--stanza-dir holds its models)")
    p.add_argument("--parser-model-target", default=None,
                   help="the target side's parser model: for spacy a package or path (ja_ginza when not given), "
                   "for udpipe the .udpipe file (needed), for stanza none (--stanza-dir holds its models)")
    p.add_argument("--stanza-dir", default=None, help="stanza model directory")
    p.add_argument("--gpu", action="store_true", help="parse on the GPU")
    p.add_argument("--pretokenized", nargs="?", const="source,target", default="", metavar="SIDES",
                   help="the raw text is whitespace-tokenised: the parser keeps its tokens. Alone: both sides; "
                   "'source' or 'target': that side only (e.g. KyTea-free Japanese that the parser tokenises, "
                   "beside tokenised English)")
    for side in ("source", "target"):
        p.add_argument(f"--normalize-{side}", choices=["none", "moses"], default="none",
                       help=f"normalise the {side} side's raw text with sacremoses' punctuation normaliser before "
                       "parsing or tokenising it (moses), or not (none, default). For a side given as CoNLL-U, say "
                       "how its text was normalised before it was parsed: the data-bin records it for decoding raw "
                       "text, which normalises the same way")
        p.add_argument(f"--tokenizer-{side}", choices=["auto", "parser", "given", "moses", "kytea"], default="auto",
                       help=f"how the {side} side's tokens are made (and recorded in DESTDIR/preparation.json for "
                       "decoding raw text): auto (default): the parser tokenises a syntax side, a side without "
                       "syntax is taken as given; parser: the side's parser tokenises the raw text (a side without "
                       "syntax is parsed for its tokens); moses: sacremoses' tokeniser (aggressive hyphens) on a "
                       "side without syntax, the parser on a syntax side (after --normalize-SIDE); kytea: kytea "
                       "-notags, then the parser keeps those tokens; given: the text is tokenised already (a syntax "
                       "side is parsed --pretokenized). For a side given as CoNLL-U: how its tokens were made")
    p.add_argument("--tree-control", default=None, metavar="KIND",
                   help="replace the parser's trees of every split, after parsing, by a control that carries less "
                   "or no syntax (docs/data.md, 'Tree controls'): random (a uniformly random tree), left-chain "
                   "(each word headed by the one before it), right-chain (by the one after it), noise:P (each word's "
                   "head, with probability P, another word's that keeps the tree a tree); recorded in the data-bin "
                   "with the controlled trees' UAS against the parser's, and applied to raw text at decoding")
    p.add_argument("--tree-control-seed", type=int, default=1, metavar="N",
                   help="the seed of --tree-control's draws (each sentence's draw depends on it and on the "
                   "sentence's place alone: workers and shards make the same trees) [1]")
    p.add_argument("--units", choices=["surface", "words"], default="surface",
                   help="text to translate: surface tokens (default; 'zum' stays one token) or syntactic words "
                   "('zu dem')")
    p.add_argument("--bpe-merges", type=int, default=None,
                   help="number of BPE merge operations (default 8000 without SentencePiece; 0: no BPE, words are "
                   "the units)")
    spm = p.add_mutually_exclusive_group()
    spm.add_argument("--spm-vocab-size", type=int, default=0, metavar="N",
                     help="learn a SentencePiece model of N pieces on the training text (both languages; one per "
                     "language with --separate-bpe), kept in the data-bin, instead of BPE. SentencePiece cuts the "
                     "raw sentence (a syntax side: the text its parser read) and each piece is aligned to the "
                     "parser's words by character offsets (docs/data.md, 'SentencePiece')")
    spm.add_argument("--spm-model", default=None, metavar="PATH",
                     help="segment both sides with this SentencePiece model as it is (a pretrained model's; give its "
                     "dictionary with --srcdict / --tgtdict); copied into the data-bin")
    for side in ("source", "target"):
        p.add_argument(f"--spm-model-{side}", default=None, metavar="PATH",
                       help=f"the {side} side's SentencePiece model, where the sides have their own")
    p.add_argument("--spm-model-type", choices=["unigram", "bpe"], default="unigram",
                   help="with --spm-vocab-size: SentencePiece's segmentation model [unigram]")
    p.add_argument("--spm-character-coverage", type=float, default=0.9995, metavar="C",
                   help="with --spm-vocab-size: the share of the training text's characters the pieces cover, the "
                   "rest being <unk> (SentencePiece's option; 1.0 for small alphabets) [0.9995]")
    p.add_argument("--srcdict", default=None, metavar="DICT",
                   help="the source dictionary to binarise with (a pretrained model's dict.SRC.txt), as "
                   "fairseq-preprocess's --srcdict; with joint segmentation also the target's")
    p.add_argument("--tgtdict", default=None, metavar="DICT", help="the target dictionary, as --srcdict")
    p.add_argument("--allow-unk-rate", type=float, default=0.03, metavar="R",
                   help="a given dictionary (--srcdict / --tgtdict) may turn at most this share of the training "
                   "tokens into <unk>; more stops prepare (the dictionary was made from another segmentation) "
                   "[0.03]")
    p.add_argument("--bpe-sample", type=int, default=0, metavar="N",
                   help="learn BPE on about N training pairs (every k-th pair; default: all) and apply it to all: "
                   "bounds the cost of learning on millions of pairs")
    p.add_argument("--separate-bpe", action="store_true",
                   help="learn one BPE (or SentencePiece) model per language (default: joint, and a joined "
                   "dictionary)")
    p.add_argument("--train-first", type=int, default=0, metavar="N",
                   help="use only the first N training pairs (read before parsing; default: all)")
    p.add_argument("--max-words", type=int, default=0, metavar="N",
                   help="drop training pairs with a side longer than N tokens (after tokenisation, before BPE)")
    p.add_argument("--max-ratio", type=float, default=0.0, metavar="R",
                   help="drop training pairs whose token-length ratio (longer / shorter) exceeds R")
    p.add_argument("--lang-filter", choices=["langid", "langdetect"], default=None,
                   help="drop training pairs whose sides this language identifier does not detect as -s / -t "
                   "(PASCAL paper: langdetect on NC11 and WMT16; SyncAttn paper: langid on WMT14)")
    p.add_argument("--lowercase", action="store_true",
                   help="lowercase the text (only with --syntax none: the trees' forms must match the text)")
    add_scale_options(p, workers_help="processes for parsing (each with its own parser model), the language "
                      "filter, BPE application and fairseq-preprocess (default 1; the output is the same for any "
                      "number)")
    p.add_argument("--preprocess-args", default="",
                   help="extra arguments for fairseq-preprocess, e.g. '--thresholdsrc 2'")
    p.add_argument("--record-only", action="store_true",
                   help="only write DESTDIR/preparation.json (and the BPE codes beside it) for a data-bin prepared "
                   "before records existed, from the same options as its preparation; nothing else is touched")
    p.add_argument("--text-only", action="store_true",
                   help="only make each language's tokens and parses, into --workdir (required), for several "
                   "data-bins to share: SPLIT.LANG.conllu for a parsed side, SPLIT.LANG (tokens) for the other, and "
                   "text.json saying how. Here --tokenizer-SIDE says how to make the tokens: parser, moses "
                   "(sacremoses -a; a parsed side: the parser's tokens), kytea (kytea -notags, kept by the parser), "
                   "given (kept); --syntax names the sides to parse")
    p.add_argument("--text-record", default=None, metavar="TEXT_JSON",
                   help="the text.json of the --text-only run that made the input text: the data-bin records each "
                   "language's tokeniser, normalisation and parser from it (then give none of --parser*, "
                   "--tokenizer-*, --normalize-*, --pretokenized)")
    p.add_argument("--no-progress", action="store_true", help="no progress bars")
    return p


def main(argv=None):

    parser = get_parser()
    args = parser.parse_args(argv)
    if args.text_only and not args.workdir:
        parser.error("--text-only writes into --workdir: give it")
    if not args.text_only and not args.destdir:
        parser.error("the following arguments are required: --destdir")
    end_children_with_this_process()  # fairseq-preprocess's forked workers must not outlive a killed prepare
    try:
        prepare(PrepareOptions.from_namespace(args))
    except OptionError as e:
        parser.error(str(e))


def cli_main(argv=None):
    run(main, argv)


if __name__ == "__main__":
    cli_main()
