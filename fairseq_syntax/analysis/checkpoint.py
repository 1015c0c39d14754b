"""Loading a trained checkpoint and one sentence of a split: shared by the analysis commands.

``fairseq-syntax-cky-attention``, ``fairseq-syntax-induce-parses`` and
``fairseq-syntax-plot`` load a checkpoint with its task the way
``fairseq-generate`` does (fairseq's ``load_model_ensemble_and_task``, the
data-bin given on the command line), and take sentences of a split through
the task's dataset, so the tokens and syntax fields are exactly what the
model saw in training (same parent strategy, same decoder-row coordinates).
"""
import argparse

import torch

import fairseq_syntax.plugin  # noqa: F401  (the models, and the allow-list of the globals checkpoints pickle)
from fairseq_syntax.errors import SyntaxDataError


def load_checkpoint(path, data, overrides=None, cpu=False, user_dir=None):
    """(model in eval mode on its device, cfg, task, device) of checkpoint ``path`` over data-bin ``data``.

    ``overrides``: model/task options to replace (fairseq's ``arg_overrides``,
    e.g. ``{"dbsa_decoder_rows": "input"}``). The task's syntax request is the
    model's (``task.build_model`` applies ``model.syntax_needs()``).
    """
    from fairseq import checkpoint_utils, utils

    if user_dir:
        utils.import_user_module(argparse.Namespace(user_dir=user_dir))
    arg_overrides = {"data": data, **(overrides or {})}
    models, cfg, task = checkpoint_utils.load_model_ensemble_and_task([path], arg_overrides=arg_overrides)
    device = torch.device("cuda" if torch.cuda.is_available() and not cpu else "cpu")
    model = models[0].to(device).eval()
    return model, cfg, task, device


def load_split(task, split, task_cfg=None):
    """Load ``split`` into ``task`` (with the checkpoint's saved task config, as fairseq-generate does)."""
    if task_cfg is not None:
        task.load_dataset(split, task_cfg=task_cfg)
    else:
        task.load_dataset(split)
    return task.dataset(split)


def check_index(dataset, index, split):
    """A clear error when ``index`` is not a sentence of the split."""
    if not 0 <= index < len(dataset):
        raise SyntaxDataError(f"split {split!r}", f"has {len(dataset)} sentences (0..{len(dataset) - 1}), no "
                              f"sentence {index}")


def one_sentence_batch(dataset, index, split, device=None):
    """The collated batch of sentence ``index`` alone (no padding), syntax fields included, on ``device``."""
    from fairseq import utils

    check_index(dataset, index, split)
    batch = dataset.collater([dataset[index]])
    if device is not None and device.type == "cuda":
        batch = utils.move_to_cuda(batch)
    return batch


