"""The hub interface of the plugin's models (:class:`SyntaxHubInterface`) and :func:`load_hub`, which builds one
from a model folder; :mod:`fairseq_syntax.inference.hub` describes both and gives them with the models
registered. This module imports the task it loads with, not the models, so that a model's ``from_pretrained``
can call it without an import circle."""
from __future__ import annotations

import glob
import io
import logging
import os
from typing import List, Union

import torch

_root = logging.getLogger()
_level, _handlers = _root.level, list(_root.handlers)
from fairseq import hub_utils, utils  # noqa: E402  (fairseq's import may set the root logger to DEBUG)

import fairseq_syntax.tasks  # noqa: E402,F401  (the task and criterions, and the checkpoint allow-list with them)

# a library leaves the program's logging as it was: fairseq's import calls logging.basicConfig (one of its
# wav2vec modules), which turned the user's whole program to DEBUG and printed every INFO line of a translate
_root.setLevel(_level)
for _h in _root.handlers[:]:
    if _h not in _handlers:
        _root.removeHandler(_h)
from fairseq_syntax.data.trees.conllu import Sentence, write_conllu
from fairseq_syntax.data.trees.decoding import induce_heads
from fairseq_syntax.data.alignment.subword_align import split_subwords
from fairseq_syntax.errors import InputLineError, SyntaxDataError
from fairseq_syntax.inference.source import EncodedSources


class SyntaxHubInterface(hub_utils.GeneratorHubInterface):
    """fairseq's generator hub interface over raw text, with the data-bin's preparation record."""

    def __init__(self, cfg, task, models):
        super().__init__(cfg, task, models)
        if (getattr(cfg, "bpe", None) is None or getattr(cfg.bpe, "_name", None) is None) and task.record is not None:
            self.bpe = task.raw_input.recorded_text()  # output detokenised as the training text was written

    # --- raw text ---------------------------------------------------------------------------------------------
    def encode_raw(self, sentences: List[str]) -> EncodedSources:
        """The sentences as the model reads them (token tensors carrying their aligned parse); a sentence longer
        than the model reads is an error naming it (fairseq would drop it or stop inside its batching)."""
        max_source = self.max_positions[0] if isinstance(self.max_positions, tuple) else self.max_positions
        return self.task.raw_input.encode(sentences, max_positions=max_source)

    def encode(self, sentence: str) -> torch.LongTensor:
        """fairseq's ``encode``: one raw sentence's token ids, made as the record says (``encode_raw`` keeps
        its parse with it too)."""
        return self.encode_raw([sentence])[0]

    def sample(self, sentences: Union[str, List[str]], beam: int = 1, verbose: bool = False, nbest: int = 1,
               on_error: str = "raise", **kwargs):
        """Translations of raw sentences (one string: one translation; a list: a list). ``nbest`` > 1: each
        sentence's ``nbest`` best translations, best first, as a list. ``on_error``: a sentence that cannot be
        translated (the parser fails on it, it is too long, not UTF-8, holds a line separator) raises
        :class:`~fairseq_syntax.errors.InputLineError` naming it (``"raise"``, the default: nothing is
        translated), or gets an empty translation and its error in :attr:`errors` (``"blank"``, as
        fairseq-interactive does)."""
        if on_error not in ("raise", "blank"):
            raise ValueError(f"on_error must be 'raise' or 'blank', not {on_error!r}")
        if isinstance(sentences, str):
            return self.sample([sentences], beam, verbose, nbest, on_error, **kwargs)[0]
        self.errors: List[InputLineError] = []
        try:
            encoded = self.encode_raw(sentences)
        except InputLineError:
            if on_error == "raise":
                raise
            sources = []
            for k, sentence in enumerate(sentences):
                try:
                    sources += self.task.raw_input.encode([sentence], first_line=k + 1,
                                                          max_positions=self._max_source()).sources
                except InputLineError as e:
                    self.errors.append(e)
                    sources += self.task.raw_input.encode([""], first_line=k + 1).sources
            encoded = EncodedSources(sources)
        batched_hypos = self.generate(encoded, max(beam, nbest), verbose, nbest=nbest, **kwargs)
        if nbest == 1:
            return [self.decode(hypos[0]["tokens"]) for hypos in batched_hypos]
        return [[self.decode(h["tokens"]) for h in hypos[:nbest]] for hypos in batched_hypos]

    def translate(self, sentences: Union[str, List[str]], beam: int = 5, verbose: bool = False, nbest: int = 1,
                  on_error: str = "raise", **kwargs):
        """:meth:`sample` with beam 5 by default."""
        return self.sample(sentences, beam, verbose, nbest, on_error, **kwargs)

    def _max_source(self):
        return self.max_positions[0] if isinstance(self.max_positions, tuple) else self.max_positions

    def decode(self, tokens: torch.LongTensor) -> str:
        text = self.string(tokens)
        if self.bpe is not None:
            text = self.bpe.decode(text)
        if self.tokenizer is not None:
            text = self.tokenizer.decode(text)
        return text

    # --- the parse heads' trees ---------------------------------------------------------------------------------
    def parse(self, sentences: Union[str, List[str]]) -> Union[str, List[str]]:
        """The trees the encoder parse head gives the sentences (the best single-rooted tree of its word-level
        scores, as ``fairseq-syntax-induce-parses`` decodes it), one CoNLL-U block each, over the words the
        parser made of the input."""

        if isinstance(sentences, str):
            return self.parse([sentences])[0]
        model = self.models[0]
        if not getattr(model.encoder, "dbsa_layer", 0):
            raise ValueError("the model has no encoder parse head (the DBSA, SISA and SyncAttn presets have one)")
        encoded = self.encode_raw(sentences)
        strategy = self.task.syntax_request.strategy_of("source")
        pad = self.task.source_dictionary.pad()
        out = [""] * len(encoded)  # an empty line: an empty block
        nonempty = [k for k, src in enumerate(encoded.sources) if not src.empty]
        if not nonempty:
            return out
        batch_of = EncodedSources([encoded.sources[k] for k in nonempty])
        for batch in self._build_batches(batch_of, skip_invalid_size_inputs=False):  # batched, with its syntax
            batch = utils.apply_to_sample(lambda t: t.to(self.device), batch)
            net = {k: v for k, v in batch["net_input"].items() if k != "prev_output_tokens"}
            with torch.no_grad():
                logps = model.encoder(**net)["encoder_parse_logprobs"][0].float().cpu()
            for b, i in enumerate(batch["id"].tolist()):
                src = batch_of.sources[i]
                offset = int(batch["net_input"]["src_tokens"][b].ne(pad).nonzero()[0])  # left padding
                word_idx = _word_index(src.bpe)
                heads = induce_heads(logps[b], word_idx, strategy, offset, "mst")
                buf = io.StringIO()
                write_conllu([Sentence(_words(src.bpe), heads, ["_"] * len(heads))], buf)
                out[nonempty[i]] = buf.getvalue()
        return out


def _word_index(bpe: str):
    import numpy as np

    _, _, unit_of_sub = split_subwords(bpe)
    return np.asarray([u + 1 for u in unit_of_sub])


def _words(bpe: str) -> List[str]:
    return split_subwords(bpe)[1]


def load_hub(model_name_or_path: str, checkpoint_file: str = "model.pt", data_name_or_path: str = ".",
             **kwargs) -> SyntaxHubInterface:
    """:func:`fairseq_syntax.inference.hub.from_pretrained` (the same arguments) once the models' classes are
    registered (an import of :mod:`fairseq_syntax.models`, which a model's own ``from_pretrained`` has made)."""
    model_path = os.path.abspath(os.path.expanduser(model_name_or_path))
    data = os.path.join(model_path, data_name_or_path)
    data = os.path.abspath(data if os.path.isdir(data) else os.path.expanduser(data_name_or_path))
    if not glob.glob(os.path.join(data, "dict.*.txt")):
        raise SyntaxDataError(data, "no dictionaries (dict.LANG.txt) here: give the model's data-bin as "
                              "data_name_or_path (a folder made by fairseq-syntax-pack holds them itself)")
    x = hub_utils.from_pretrained(model_path, checkpoint_file, data, archive_map={}, **kwargs)
    return SyntaxHubInterface(x["args"], x["task"], x["models"])
