"""What a data-bin remembers of how it was made: ``DATA-BIN/preparation.json``.

``prepare`` writes it (and copies the BPE codes next to it), so that decoding raw text needs none of the
preparation's options repeated: the hub interface (:mod:`fairseq_syntax.inference.hub`) and
``fairseq-interactive`` read it to turn a user's sentence into exactly the input the model was trained on
(normalisation, the parser with its model and options, the tokens, BPE, the aligned tree), and to detokenise
the output as the training text was tokenised. It is kept per language (not per side), so the same data-bin
serves both directions.

Fields per language (:class:`LanguageRecord`):

* ``tokenizer``: how the text became tokens: ``parser`` (the parse's surface tokens, from raw text),
  ``given`` (the text was whitespace-tokenised already: kept, and parsed ``--pretokenized``), ``moses``
  (sacremoses' tokeniser with aggressive hyphen splitting, as the recipes tokenise a side without syntax),
  ``kytea``;
* ``normalize``: ``moses`` (sacremoses' punctuation normaliser before parsing or tokenising) or None;
* ``lowercase``; ``units`` (``surface`` tokens or syntactic ``words``);
* ``parser``: ``{"backend": ..., "options": {...}}`` of the parser that made the trees (None without syntax);
  a model path relative to the data-bin stays relative (a packed model folder moves as a whole).

``bpe``: the codes file(s) in the data-bin per language (one file for both: joint BPE; None: words are the
units), ``bpe_merges`` the merges learned. ``spm`` (version 2): per language, the SentencePiece model that
segments it instead: ``file`` (in the data-bin), ``sha256``, ``source`` (the path it was given as, or None: learned
by prepare) and ``pieces`` (its vocabulary size); a SentencePiece side's text is its raw sentence (a syntax side:
the text its parser read), whose pieces are aligned to the tree by character offsets.
"""
from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from typing import Dict, Optional

from fairseq_syntax.durable_files import file_sha256, replace_file, temporary_name
from fairseq_syntax.errors import SyntaxDataError

RECORD_FILE = "preparation.json"
#: in a data-bin while prepare writes it: a killed prepare leaves it, the same command then resumes, and the
#: task refuses to train on the data-bin
UNFINISHED_FILE = ".prepare-unfinished"
VERSION = 1
#: the version of a record that names SentencePiece models (a plugin that reads version 1 only must refuse it)
SPM_VERSION = 2
TOKENIZERS = ("parser", "given", "moses", "kytea")


@dataclass
class LanguageRecord:
    tokenizer: str = "given"
    normalize: Optional[str] = None
    lowercase: bool = False
    units: str = "surface"
    parser: Optional[dict] = None  # {"backend": str, "options": dict}

    def __post_init__(self):
        if self.tokenizer not in TOKENIZERS:
            raise ValueError(f"tokenizer must be one of {TOKENIZERS}, not {self.tokenizer!r}")
        if self.normalize not in (None, "moses"):
            raise ValueError(f"normalize must be None or 'moses', not {self.normalize!r}")

    def parses_given_tokens(self) -> bool:
        """Whether the parser reads tokens made before it (given, kytea, moses; or recorded ``pretokenized``)
        rather than tokenising raw text itself: at inference too, any parser parses them as they are."""
        return self.tokenizer != "parser" or bool((self.parser or {}).get("options", {}).get("pretokenized"))


@dataclass
class PreparationRecord:
    languages: Dict[str, LanguageRecord] = field(default_factory=dict)
    bpe: Optional[Dict[str, str]] = None  # language -> codes file, relative to the data-bin
    bpe_merges: int = 0  # merges learned (joint when both languages name one file)
    version: int = VERSION
    spm: Optional[Dict[str, dict]] = None  # language -> {"file", "sha256", "source", "pieces"}
    tree_control: Optional[dict] = None  # {"kind", "seed", "uas"}: the trees are a control (tree_control_step)

    def save(self, data_dir: str) -> str:
        path = os.path.join(data_dir, RECORD_FILE)
        tmp = temporary_name(path)
        fields = asdict(self)
        if self.spm:
            fields["version"] = SPM_VERSION
        else:
            del fields["spm"]  # a record without SentencePiece is the version 1 it was
        if not self.tree_control:
            del fields["tree_control"]
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(fields, f, indent=1, sort_keys=True)
            f.write("\n")
        return replace_file(tmp, path)

    @classmethod
    def load(cls, data_dir: str) -> Optional["PreparationRecord"]:
        """The record of a data-bin, or None for a data-bin prepared before records existed."""
        path = os.path.join(data_dir, RECORD_FILE)
        if not os.path.exists(path):
            return None
        try:
            with open(path, encoding="utf-8") as f:
                raw = json.load(f)
            if raw.get("version") not in (VERSION, SPM_VERSION):
                raise ValueError(f"version {raw.get('version')}, this plugin reads versions {VERSION} and "
                                 f"{SPM_VERSION}")
            record = cls(languages={k: LanguageRecord(**v) for k, v in raw["languages"].items()},
                         bpe=raw.get("bpe"), bpe_merges=raw.get("bpe_merges", 0), version=raw["version"],
                         spm=raw.get("spm"), tree_control=raw.get("tree_control"))
            if record.tree_control is not None:
                from fairseq_syntax.preparation.tree_control_step import from_record

                from_record(record.tree_control)  # a control this plugin can make again
            for lang, spec in (record.spm or {}).items():
                if not isinstance(spec, dict) or not isinstance(spec.get("file"), str):
                    raise ValueError(f"the SentencePiece model of {lang!r} names no file")
        except (ValueError, KeyError, TypeError) as e:
            raise SyntaxDataError(path, f"not a preparation record this plugin can read: {e}") from None
        for lang, name in (record.bpe or {}).items():
            if not isinstance(name, str):
                raise SyntaxDataError(path, f"the BPE codes of {lang!r} must be a file name, not {name!r}")
            inside(data_dir, name, f"the BPE codes of {lang!r}")
        for lang, spec in (record.spm or {}).items():
            inside(data_dir, spec["file"], f"the SentencePiece model of {lang!r}")
        for spec in record.languages.values():  # relative parser paths resolve inside the folder, or are refused
            if spec.parser is not None:
                parser_options(spec.parser, data_dir)
        return record

    def language(self, lang: str, data_dir: str) -> LanguageRecord:
        if lang not in self.languages:
            raise SyntaxDataError(os.path.join(data_dir, RECORD_FILE),
                                  f"no language {lang!r} (it records {sorted(self.languages)})")
        return self.languages[lang]

    def bpe_codes(self, lang: str, data_dir: str, check_trained: bool = True) -> Optional[str]:
        """The absolute path of a language's BPE codes (None: no BPE); with ``check_trained``, codes other than
        the ones a loaded model was trained with (:meth:`expect_trained_codes`), or none where it had some, are
        refused."""
        if not self.bpe or lang not in self.bpe:
            if check_trained and self.__dict__.get("_trained_codes", {}).get(lang):
                raise SyntaxDataError(os.path.join(data_dir, RECORD_FILE), f"names no BPE codes for {lang!r}, and the "
                                      "model was trained on BPE'd text (its checkpoint records its codes' SHA-256): "
                                      "raw input would go in unsegmented; give the data-bin the model was trained on")
            if self.bpe and lang not in self.bpe:
                raise SyntaxDataError(os.path.join(data_dir, RECORD_FILE), f"names no BPE codes for {lang!r} (it "
                                      f"names {sorted(self.bpe)})")
            return None
        path = inside(data_dir, self.bpe[lang], f"the BPE codes of {lang!r}")
        if not os.path.exists(path):
            raise SyntaxDataError(path, "the BPE codes the preparation record names are missing")
        check_bpe_codes(path)
        if check_trained:
            self._check_trained_codes(lang, path)
        return path

    def spm_model(self, lang: str, data_dir: str, check_trained: bool = True) -> Optional[str]:
        """The absolute path of a language's SentencePiece model (None: the language is not segmented by one);
        with ``check_trained``, a model other than the one a loaded model was trained with is refused, as
        :meth:`bpe_codes` refuses codes."""
        spec = (self.spm or {}).get(lang)
        if spec is None:
            return None
        path = inside(data_dir, spec["file"], f"the SentencePiece model of {lang!r}")
        if not os.path.exists(path):
            raise SyntaxDataError(path, "the SentencePiece model the preparation record names is missing")
        if check_trained:
            expected = self.__dict__.get("_trained_codes", {}).get(lang)
            if expected and any(d != file_sha256(path) for d in expected):
                raise SyntaxDataError(path, f"not the SentencePiece model of {lang!r} the model was trained with "
                                      f"(its checkpoint records SHA-256 {sorted(expected)[0][:16]}..., this file "
                                      f"{file_sha256(path)[:16]}...): raw input would be segmented otherwise than "
                                      "the training text; give the data-bin the model was trained on")
        return path

    def segmentation_file(self, lang: str, data_dir: str, check_trained: bool = False) -> Optional[str]:
        """The file that segments a language: its SentencePiece model or its BPE codes (None: words)."""
        if (self.spm or {}).get(lang) is not None:
            return self.spm_model(lang, data_dir, check_trained)
        if self.bpe and lang in self.bpe:
            return self.bpe_codes(lang, data_dir, check_trained)
        return None

    def expect_trained_codes(self, digests: Dict[str, str]) -> None:
        """The SHA-256 of each language's codes that a model loaded on this data-bin was trained with (its
        checkpoint's task state): :meth:`bpe_codes` refuses codes replaced since. Several checkpoints (an
        ensemble) add theirs."""
        expected = self.__dict__.setdefault("_trained_codes", {})
        for lang, digest in digests.items():
            expected.setdefault(lang, set()).add(digest)

    def _check_trained_codes(self, lang: str, path: str) -> None:
        check_trained_codes(path, self.__dict__.get("_trained_codes", {}).get(lang), lang)


def check_trained_codes(path: str, expected, lang: str, given: bool = False) -> None:
    """Refuse BPE codes ``path`` whose SHA-256 is not every one of ``expected`` (the digests the loaded
    checkpoints recorded for ``lang``; nothing to check without them). ``given``: fairseq-interactive's own
    --bpe-codes, not the data-bin's."""
    if not expected:
        return
    digest = file_sha256(path)
    if any(d != digest for d in expected):
        if given:
            raise SyntaxDataError(path, "--bpe-codes: not the codes the model was trained with (its checkpoint "
                                  "records their SHA-256): the input would be segmented otherwise than the training "
                                  "text")
        raise SyntaxDataError(path, f"not the BPE codes of {lang!r} the model was trained with (its checkpoint "
                              f"records SHA-256 {sorted(expected)[0][:16]}..., this file {digest[:16]}...): the "
                              "data-bin's codes were replaced after training, and raw input would be segmented "
                              "otherwise than the training text; give the data-bin the model was trained on")


def inside(data_dir: str, name: str, what: str) -> str:
    """The path of ``name``, a file the record of ``data_dir`` names, which must be a relative path that stays in
    that folder (also through symbolic links): a record handed on with a model folder cannot point outside it."""
    record = os.path.join(data_dir, RECORD_FILE)
    if os.path.isabs(name) or ".." in name.replace("\\", "/").split("/"):
        raise SyntaxDataError(record, f"{what}: {name!r} is not a file of this folder (a record names files inside "
                              "its own folder only)")
    path = os.path.join(data_dir, name)
    root = os.path.realpath(data_dir)
    if not os.path.realpath(path).startswith(root + os.sep):
        raise SyntaxDataError(record, f"{what}: {name!r} leads outside this folder (a symbolic link)")
    return path


def check_bpe_codes(path: str) -> None:
    """Refuse a file that is not subword-nmt BPE codes (an optional ``#version`` line, then two symbols per line)
    with one line naming the file and line, before subword-nmt reads it (it would print the line and exit)."""
    from fairseq_syntax.text_reading import open_text

    with open_text(path) as f:
        for i, line in enumerate(f, 1):
            if i == 1 and line.startswith("#version"):
                continue
            if len(line.rstrip("\r\n").split(" ")) != 2:
                raise SyntaxDataError(f"{path}:{i}", "not BPE codes: every line holds two symbols separated by one "
                                      "space (subword-nmt's codes file)")


#: parser options that may name a file or folder
PATH_OPTIONS = ("model_path", "model", "path", "model_dir")


def parser_options(parser: dict, data_dir: str) -> dict:
    """A recorded parser's constructor options with a relative model path resolved against the data-bin (it must
    stay inside it: :func:`inside`); an absolute path (given at preparation) and a name (a spaCy package) stay."""
    options = dict(parser.get("options") or {})
    for key in PATH_OPTIONS:
        value = options.get(key)
        if not isinstance(value, str) or not value or os.path.isabs(value):
            continue
        if "/" in value or "\\" in value or value == "..":
            options[key] = inside(data_dir, value, f"the parser's {key}")
        elif os.path.exists(os.path.join(data_dir, value)):
            options[key] = inside(data_dir, value, f"the parser's {key}")
    return options


def target_in_pieces(data_dir: str, target_lang: Optional[str] = None) -> bool:
    """Whether the record of ``data_dir`` says SentencePiece segments ``target_lang`` (None: every language it
    names); False without a readable record. Standard library only (the recipes' runner asks it)."""
    try:
        with open(os.path.join(data_dir, RECORD_FILE), encoding="utf-8") as f:
            spm = json.load(f).get("spm") or {}
    except (OSError, ValueError, AttributeError):
        return False
    return target_lang in spm if target_lang else bool(spm)


def language_option(argv, flags=("--target-lang", "-t")) -> Optional[str]:
    """The value of the first of ``flags`` in a command line (``--flag VALUE`` or ``--flag=VALUE``), or None."""
    for k, word in enumerate(argv):
        for flag in flags:
            if word == flag and k + 1 < len(argv):
                return argv[k + 1]
            if word.startswith(flag + "="):
                return word.split("=", 1)[1]
    return None

