"""UDPipe 1 backend (``ufal.udpipe`` with a ``.udpipe`` model file).

Raw lines go through UDPipe's tokenizer in ``presegmented`` mode (one
sentence per line); pre-tokenized lines use the ``horizontal`` input format.
The CoNLL-U UDPipe writes is read back with the project's reader, so its
multiword tokens are handled like any other CoNLL-U.
"""
from __future__ import annotations

import io
import os
from typing import List, Sequence

from fairseq_syntax.data.trees.conllu import Sentence, read_conllu
from fairseq_syntax.parsing.base import MODEL_NEEDED, ModelMissing, Parser


class UDPipeParser(Parser):
    def __init__(self, model_path: str = None, pretokenized: bool = False, **kwargs):
        if not model_path:
            raise ModelMissing("udpipe", MODEL_NEEDED["udpipe"])
        from ufal.udpipe import Model, Pipeline, ProcessingError

        self.pretokenized = pretokenized
        if not os.path.isfile(model_path):
            raise FileNotFoundError(f"no UDPipe model file {model_path}")
        try:  # UDPipe's own loader says only that it failed: a file we cannot read is named as such
            with open(model_path, "rb") as f:
                f.read(1)
        except OSError as e:
            raise RuntimeError(f"{model_path} cannot be read ({e.strerror})") from None
        if os.path.getsize(model_path) == 0:
            raise RuntimeError(f"{model_path} is empty (a copy cut short?), not a UDPipe model")
        self.model = Model.load(model_path)
        if self.model is None:
            raise RuntimeError(f"{model_path} is not a UDPipe model (Model.load failed: another file, or a "
                               "truncated one)")
        inp = "horizontal" if pretokenized else "tokenizer=presegmented"
        self.pipeline = Pipeline(self.model, inp, Pipeline.DEFAULT, Pipeline.DEFAULT, "conllu")
        self._error_cls = ProcessingError

    def parse(self, lines: Sequence[str]) -> List[Sentence]:
        err = self._error_cls()
        text = "\n".join(ln.strip() for ln in lines) + "\n"
        out = self.pipeline.process(text, err)
        if err.occurred():
            raise RuntimeError(f"UDPipe failed: {err.message}")
        return list(read_conllu(io.StringIO(out), "<udpipe output>"))
