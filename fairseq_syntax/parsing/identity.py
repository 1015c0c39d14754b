"""What a parser's trees depend on besides its options: the model's content and the parsing library's version.

A parser's options name its model by a path or a name (a UDPipe file, a spaCy package, stanza's resources
folder). A model replaced under the same name (a new UDPipe file copied over the old, ``pip install -U
ja-ginza``, stanza's models downloaded again) parses differently, so a cache of parses keyed by the options alone
would hand the new model's data-bin the old trees. :func:`parser_identity` is what the caches add to their keys
(:mod:`fairseq_syntax.preparation.parse_files`, :mod:`fairseq_syntax.preparation.text_only`):

* ``udpipe``: the model file's SHA-256;
* ``conllu`` (parses looked up in a CoNLL-U file): that file's SHA-256;
* ``spacy``: the model package's installed version (a model folder: the SHA-256 of its ``meta.json``);
* ``stanza``: the name, size and modification time of every file of the language's models in the resources
  folder (``--stanza-dir``, else ``$STANZA_RESOURCES_DIR``, else ``~/stanza_resources``; stanza's models are
  hundreds of megabytes, and a download rewrites the files);
* every backend: the installed versions of its libraries (stanza; spaCy and GiNZA; ufal.udpipe), and for spaCy
  those of SudachiPy and its dictionaries where installed (GiNZA's words are SudachiPy's).

A file hashed once keeps its digest for the process while its size and modification time stay the same.
"""
from __future__ import annotations

import hashlib
import os
from functools import lru_cache
from typing import Dict, Optional

from fairseq_syntax.durable_files import file_sha256

#: the distributions whose code makes each backend's trees
LIBRARIES = {"stanza": ("stanza",), "spacy": ("spacy", "ginza"), "udpipe": ("ufal.udpipe",), "conllu": ()}
#: distributions that make a backend's tokens when installed (GiNZA's words are SudachiPy's, cut by its
#: dictionary: a new SudachiDict splits words otherwise); named in the identity only when installed
TOKENIZER_DATA = {"spacy": ("SudachiPy", "SudachiDict-core", "SudachiDict-small", "SudachiDict-full")}


def _version(distribution: str) -> Optional[str]:
    from importlib import metadata

    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return None


@lru_cache(maxsize=None)
def _digest(path: str, size: int, mtime_ns: int) -> str:
    return file_sha256(path)


def _file_digest(path) -> Optional[str]:
    if not isinstance(path, str) or not os.path.isfile(path):
        return None
    st = os.stat(path)
    return _digest(os.path.abspath(path), st.st_size, st.st_mtime_ns)


def _spacy_model(model) -> Optional[str]:
    if not isinstance(model, str) or not model:
        return None
    if os.path.isdir(model):
        return _file_digest(os.path.join(model, "meta.json"))
    return _version(model) or _version(model.replace("_", "-"))


def _stanza_models(model_dir, lang) -> Optional[str]:
    root = model_dir or os.environ.get("STANZA_RESOURCES_DIR") or os.path.join(os.path.expanduser("~"),
                                                                              "stanza_resources")
    folder = os.path.join(root, str(lang))
    if not os.path.isdir(folder):
        return None
    h = hashlib.sha256()
    for base, dirs, files in sorted(os.walk(folder)):
        dirs.sort()
        for name in sorted(files):
            st = os.stat(os.path.join(base, name))
            h.update(f"{os.path.relpath(os.path.join(base, name), folder)}\t{st.st_size}\t{st.st_mtime_ns}\n"
                     .encode())
    resources = os.path.join(root, "resources.json")
    if os.path.isfile(resources):
        h.update(_file_digest(resources).encode())
    return h.hexdigest()


def parser_identity(backend: str, options: dict) -> Dict[str, object]:
    """The model's content and the libraries' versions behind the trees of parser ``backend`` built with
    ``options`` (its constructor options: :func:`fairseq_syntax.parsing.base.backend_options`)."""
    libraries = {name: _version(name) for name in LIBRARIES.get(backend, ())}
    libraries.update({name: v for name in TOKENIZER_DATA.get(backend, ()) if (v := _version(name)) is not None})
    if backend == "udpipe":
        model = _file_digest(options.get("model_path"))
    elif backend == "conllu":
        model = _file_digest(options.get("path"))
    elif backend == "spacy":
        model = _spacy_model(options.get("model"))
    elif backend == "stanza":
        model = _stanza_models(options.get("model_dir"), options.get("lang"))
    else:
        model = None
    return {"model": model, "libraries": libraries}
