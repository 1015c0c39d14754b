"""``from_pretrained(model_dir).translate("a raw sentence")`` for every model of the plugin, the parse inside.

fairseq's hub interface (:class:`fairseq.hub_utils.GeneratorHubInterface`) tokenises, applies BPE, translates
and detokenises with the ``--tokenizer`` / ``--bpe`` a model was trained with. A syntax model also needs the
source parse, made from the user's words exactly as the training data's was. :class:`SyntaxHubInterface`
takes all of it from the data-bin's preparation record (:mod:`fairseq_syntax.preparation.record`):

* :meth:`~SyntaxHubInterface.translate` / :meth:`~SyntaxHubInterface.sample`: raw text in (one string or a
  list: parsed in one batched call), detokenised text out; :meth:`~SyntaxHubInterface.generate` keeps
  fairseq's signature (token tensors; those from :meth:`~SyntaxHubInterface.encode_raw` carry their parse);
* :meth:`~SyntaxHubInterface.parse`: the trees a model's encoder parse head (DBSA, SISA, SyncAttn) gives the
  sentences, as CoNLL-U over the user's words;
* :func:`from_pretrained`, also as ``SyntaxTransformerModel.from_pretrained`` and
  ``AttentionLSTMModel.from_pretrained``: a model folder (``fairseq-syntax-pack``) or a checkpoint with its
  data-bin.

An empty line translates to an empty line; a line the parser fails on is an error naming it.
"""
from __future__ import annotations

import io
import os
from typing import List, Union

import torch
from fairseq import hub_utils, utils

import fairseq_syntax.plugin  # noqa: F401  (the models, task and criterions; the checkpoint allow-list)
from fairseq_syntax.data.head_decoding import induce_heads
from fairseq_syntax.data.conllu import Sentence, write_conllu
from fairseq_syntax.data.subword_align import split_subwords
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

    def sample(self, sentences: Union[str, List[str]], beam: int = 1, verbose: bool = False, **kwargs):
        if isinstance(sentences, str):
            return self.sample([sentences], beam=beam, verbose=verbose, **kwargs)[0]
        batched_hypos = self.generate(self.encode_raw(sentences), beam, verbose, **kwargs)
        return [self.decode(hypos[0]["tokens"]) for hypos in batched_hypos]

    def translate(self, sentences: Union[str, List[str]], beam: int = 5, verbose: bool = False, **kwargs):
        return self.sample(sentences, beam, verbose, **kwargs)

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


def from_pretrained(model_name_or_path: str, checkpoint_file: str = "model.pt", data_name_or_path: str = ".",
                    **kwargs) -> SyntaxHubInterface:
    """A :class:`SyntaxHubInterface` over the checkpoint(s) ``checkpoint_file`` (``os.pathsep``-separated for an
    ensemble) in folder ``model_name_or_path``, with the data-bin ``data_name_or_path`` (relative to that folder, else to
    the working directory: the dictionaries, the BPE codes and ``preparation.json``; a packed model folder holds
    them itself). Other keyword
    arguments override the checkpoint's options, as in fairseq."""
    model_path = os.path.abspath(os.path.expanduser(model_name_or_path))
    data = os.path.join(model_path, data_name_or_path)
    data = os.path.abspath(data if os.path.isdir(data) else os.path.expanduser(data_name_or_path))
    x = hub_utils.from_pretrained(model_path, checkpoint_file, data, archive_map={}, **kwargs)
    return SyntaxHubInterface(x["args"], x["task"], x["models"])
