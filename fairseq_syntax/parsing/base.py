"""Parser interface and backend registry (the batched, resumable file driver: :mod:`fairseq_syntax.preparation.parse_files`)."""
from __future__ import annotations

import abc
import importlib
import os
import logging
from typing import Dict, List, Sequence

from fairseq_syntax.data.trees.conllu import Sentence
from fairseq_syntax.data.trees.tree import check_tree
from fairseq_syntax.errors import OptionError, SyntaxDataError

logger = logging.getLogger(__name__)

#: backend name -> "module:class"
BACKENDS: Dict[str, str] = {
    "stanza": "fairseq_syntax.parsing.stanza_backend:StanzaParser",
    "spacy": "fairseq_syntax.parsing.spacy_backend:SpacyParser",
    "udpipe": "fairseq_syntax.parsing.udpipe_backend:UDPipeParser",
    "conllu": "fairseq_syntax.parsing.conllu_lookup:ConllULookupParser",
}


class ModelMissing(ValueError):
    """A backend that cannot run without a model was given none. ``need`` says what the model is; the command
    that loads the parser names its own option for it (:func:`load_parser`'s ``model_option``)."""

    def __init__(self, backend: str, need: str):
        self.backend, self.need = backend, need
        super().__init__(f"the {backend} parser needs {need}")

    def __reduce__(self):
        return (type(self), (self.backend, self.need))


class Parser(abc.ABC):
    """Parses lines (raw, or whitespace-tokenised when ``pretokenized``)."""

    pretokenized: bool = False
    #: (backend, options) it was built from (:func:`build_parser` sets it); None for a parser made by hand
    spec = None

    @abc.abstractmethod
    def parse(self, lines: Sequence[str]) -> List[Sentence]:
        """One Sentence per line, in order."""

    def check(self, lines: Sequence[str], sents: List[Sentence], first_line: int, path: str) -> None:
        """One tree per line; in pre-tokenized mode the tokens are the input's."""
        if len(sents) != len(lines):
            raise SyntaxDataError(
                f"{path}:{first_line}", f"the parser returned {len(sents)} sentences for {len(lines)} lines"
            )
        for k, (line, s) in enumerate(zip(lines, sents)):
            where = f"{path}:{first_line + k}"
            check_tree(s.heads, where)
            if self.pretokenized and s.tokens != line.split():
                raise SyntaxDataError(where, f"the parser changed the given tokenisation: {s.tokens[:8]}...")


#: backends that cannot run without a model -> what the model is
MODEL_NEEDED = {"udpipe": "a .udpipe model file", "conllu": "the CoNLL-U file to look each line up in"}


def backend_options(backend: str, lang: str = "en", model: str = None, model_dir: str = None, gpu: bool = False,
                    pretokenized: bool = False, model_option: str = None) -> dict:
    """Constructor options of a backend from the common command-line options. With ``model_option`` (the
    running command's option that gives ``model``), a backend that needs a model and has none is an option
    error naming it."""
    if model_option and not model and backend in MODEL_NEEDED:
        raise OptionError(f"the {backend} parser needs {MODEL_NEEDED[backend]}: give {model_option} PATH")
    if backend == "stanza":
        return dict(lang=lang, model_dir=model_dir, gpu=gpu, pretokenized=pretokenized)
    if backend == "spacy":
        return dict(model=model or "ja_ginza", gpu=gpu, pretokenized=pretokenized)
    if backend == "udpipe":
        return dict(model_path=model, pretokenized=pretokenized)
    if backend == "conllu":
        return dict(path=model)
    raise ValueError(f"unknown parser backend {backend!r}; choose from {sorted(BACKENDS)}")


def effective_workers(workers: int, gpu: bool) -> int:
    """On a GPU a parser stays one process per GPU: run one --shard per GPU instead."""
    if gpu and workers > 1:
        logger.warning("--gpu: one parser process per GPU, so --workers %d is ignored; to use several GPUs run "
                       "one --shard I/N per GPU (CUDA_VISIBLE_DEVICES=I)", workers)
        return 1
    return max(1, workers)


def build_parser(backend: str, **options) -> Parser:
    """Instantiate a backend by name (imports its library lazily)."""
    if backend not in BACKENDS:
        raise ValueError(f"unknown parser backend {backend!r}; choose from {sorted(BACKENDS)}")
    mod, cls = BACKENDS[backend].split(":")
    cls = getattr(importlib.import_module(mod), cls)
    parser = cls(**options)
    parser.spec = _spec(backend, cls, options)
    return parser


def _spec(backend, cls, options):
    """What a parser was built from, the key of its parses' cache: its constructor's options with their defaults
    filled in (the model a default names is part of the key), paths as strings as the command line gives them;
    None where an option is an object (a loaded pipeline: nothing says which model it holds)."""
    import inspect

    try:
        bound = inspect.signature(cls.__init__).bind_partial(None, **options)
        bound.apply_defaults()
        full = {k: v for k, v in list(bound.arguments.items())[1:]
                if bound.signature.parameters[k].kind not in (inspect.Parameter.VAR_POSITIONAL,
                                                              inspect.Parameter.VAR_KEYWORD)}
        full.update({k: v for k, v in options.items() if k not in full})
    except TypeError:
        full = dict(options)
    full = {k: os.fspath(v) if isinstance(v, os.PathLike) else v for k, v in full.items()}
    if not all(v is None or isinstance(v, (str, int, float, bool)) for v in full.values()):
        return None
    return backend, full


def load_parser(backend: str, options: dict, what: str, model_option: str = None) -> Parser:
    """Build a parser, or fail with one line naming ``what`` (e.g. "--parser-model-target en.udpipe") and the
    reason: a missing spaCy package, UDPipe file or stanza model is a user error, not a traceback. A backend
    given no model where it needs one is an option error naming ``model_option``, the option of the running
    command that gives it (``--model``, ``--parser-model-source``, ...)."""
    try:
        return build_parser(backend, **options)
    except ModelMissing as e:
        if model_option:
            raise OptionError(f"{what}: {e}: give {model_option} PATH") from None
        raise SyntaxDataError(what, f"cannot load the {backend} parser: {e}") from None
    except ImportError as e:
        raise SyntaxDataError(what, f"the {backend} parser's library is not installed ({e})") from None
    except Exception as e:  # spaCy's OSError E050, UDPipe's None model, stanza's missing resources, ...
        reason = " ".join(str(e).split()) or type(e).__name__
        raise SyntaxDataError(what, f"cannot load the {backend} parser: {reason[:400]}") from None
