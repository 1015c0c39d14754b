"""bf16 training on GPUs and CPUs through fairseq's command line, without XLA.

fairseq 0.12's option parsing (``fairseq.options.parse_args_and_arch``) turns ``--bf16`` (and
``--memory-efficient-bf16``) into ``--tpu``, so that ``fairseq-train --bf16`` asks torch_xla for its device
and ends in a traceback on a machine without it. fairseq's train path itself trains in bf16 on CUDA and on the
CPU once ``--tpu`` is off: the Trainer casts the model and the criterion to bfloat16, keeps fp32 master weights
in its FP16Optimizer (unflattened, so on any device; MemoryEfficientFP16Optimizer for
``--memory-efficient-bf16``) without loss scaling, casts each batch's float32 tensors to bfloat16 (the syntax
inputs that must stay exact are not float32: :mod:`fairseq_syntax.data.datasets.syntax_dataset`), and saves the
parameters in float32 (its checkpoints' CPU copy), which ``fairseq-generate`` reads as any checkpoint.

:func:`install` (the plugin's start-up, :mod:`fairseq_syntax.patches.startup`) wraps that parse function once; a
parse in which bf16 made ``tpu`` without the user's ``--tpu`` is then

* under :func:`bf16_without_xla` (``fairseq-syntax-train``): given back its ``tpu = False``: bf16 on the
  device fairseq picks (CUDA, or the CPU with ``--cpu`` or without a GPU);
* in any other training parse (``fairseq-train --user-dir fairseq_syntax --bf16``): refused with an
  :class:`~fairseq_syntax.errors.OptionError` naming ``fairseq-syntax-train``, before fairseq's launcher or
  Trainer asks for XLA (one line, exit status 2: :mod:`fairseq_syntax.patches.error_display`);
* in the decoding commands' parses (``fairseq-generate``, ``-interactive``, ``-validate``, which neither cast
  to bf16 nor use the TPU flag): left as fairseq made it.

An explicit ``--tpu`` is fairseq's business and always left alone. ``--fp16`` with ``--bf16`` (which fairseq
reports as "Cannot combine --fp16 and --tpu") is an OptionError that names the two precisions.
"""
import contextlib
import functools
import sys
from typing import List, Optional, Sequence

from fairseq_syntax.errors import OptionError

#: fairseq's message for --fp16 with a --tpu that --bf16 implied
_FP16_WITH_TPU = "Cannot combine --fp16 and --tpu"

_bf16_without_xla = False
_installed = False


def tpu_requested(argv: Sequence[str]) -> bool:
    """True when the command line itself asks for XLA (fairseq's parsers take no abbreviations)."""
    return "--tpu" in argv


def bf16_option(argv: Sequence[str]) -> str:
    """The bf16 option the command line gives (for messages)."""
    return "--memory-efficient-bf16" if "--memory-efficient-bf16" in argv else "--bf16"


def is_training_parse(args) -> bool:
    """True for the options of fairseq's training parser (the only one with the optimization options)."""
    return hasattr(args, "max_update")


def _fix(args, argv: Sequence[str]):
    """The policy of the module docstring, applied to fairseq's parsed ``args`` of ``argv``."""
    if not (getattr(args, "bf16", False) and getattr(args, "tpu", False)) or tpu_requested(argv):
        return
    if _bf16_without_xla:
        args.tpu = False
    elif is_training_parse(args):
        option = bf16_option(argv)
        raise OptionError(f"{option}: fairseq-train turns it into --tpu (XLA, torch_xla); to train in bf16 on GPUs or "
                          f"the CPU run the same options with fairseq-syntax-train instead (fairseq-syntax-train "
                          f"{option} ...), or add --tpu to train on a TPU")


def _wrap(parse):
    @functools.wraps(parse)
    def parse_args_and_arch(parser, input_args: Optional[List[str]] = None, parse_known: bool = False,
                            suppress_defaults: bool = False, modify_parser=None):
        argv = sys.argv[1:] if input_args is None else list(input_args)
        try:
            result = parse(parser, input_args, parse_known, suppress_defaults, modify_parser)
        except ValueError as e:
            if str(e).startswith(_FP16_WITH_TPU) and not tpu_requested(argv):
                raise OptionError(f"--fp16 and {bf16_option(argv)} ask for two precisions: give one (bf16 on GPUs "
                                  "that have it, A100, H100 and later; fp16 on older ones)") from None
            raise
        _fix(result[0] if parse_known else result, argv)
        return result

    parse_args_and_arch._fairseq_syntax_wrapped = True
    return parse_args_and_arch


def install() -> None:
    """Wrap ``fairseq.options.parse_args_and_arch`` (fairseq's commands call it through the module, so every
    later parse goes through the wrapper); idempotent."""
    global _installed
    if _installed:
        return
    from fairseq import options

    if not getattr(options.parse_args_and_arch, "_fairseq_syntax_wrapped", False):
        options.parse_args_and_arch = _wrap(options.parse_args_and_arch)
    _installed = True


@contextlib.contextmanager
def bf16_without_xla():
    """Within: a parse where bf16 implied ``--tpu`` gets ``tpu = False`` (``fairseq-syntax-train``)."""
    global _bf16_without_xla
    install()
    saved, _bf16_without_xla = _bf16_without_xla, True
    try:
        yield
    finally:
        _bf16_without_xla = saved
