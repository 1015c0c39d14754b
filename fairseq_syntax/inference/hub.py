"""``from_pretrained(model_dir).translate("a raw sentence")`` for every model of the plugin, the parse inside.

fairseq's hub interface (:class:`fairseq.hub_utils.GeneratorHubInterface`) tokenises, applies BPE, translates
and detokenises with the ``--tokenizer`` / ``--bpe`` a model was trained with. A syntax model also needs the
source parse, made from the user's words exactly as the training data's was. :class:`SyntaxHubInterface`
takes all of it from the data-bin's preparation record (:mod:`fairseq_syntax.preparation.databin_record`):

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

# first: it imports fairseq with the program's logging kept as it was
from fairseq_syntax.inference.hub_interface import SyntaxHubInterface, load_hub

# isort: split
import fairseq_syntax.models  # noqa: F401  (the models and architectures a checkpoint names)

__all__ = ["SyntaxHubInterface", "from_pretrained"]


def from_pretrained(model_name_or_path: str, checkpoint_file: str = "model.pt", data_name_or_path: str = ".",
                    **kwargs) -> SyntaxHubInterface:
    """A :class:`SyntaxHubInterface` over the checkpoint(s) ``checkpoint_file`` (``os.pathsep``-separated for an
    ensemble) in folder ``model_name_or_path``, with the data-bin ``data_name_or_path`` (relative to that folder,
    else to the working directory: the dictionaries, the BPE codes and ``preparation.json``; a packed model folder
    holds them itself). Other keyword arguments override the checkpoint's options, as in fairseq."""
    return load_hub(model_name_or_path, checkpoint_file, data_name_or_path, **kwargs)
