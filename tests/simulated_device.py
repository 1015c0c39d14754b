"""A second device simulated on the CPU, for tests of device cleanliness (docs/development.md).

A model moved to a GPU breaks where one of its tensors is made on the default device (the CPU) and then
meets the model's: ``torch.arange(n)`` without ``device=``, a mask built from a Python list, a buffer
that did not move. On a CPU-only machine nothing shows it. Here the model and the batch move to the
*simulated device* (``model.to(DEVICE)``): every tensor there is an :class:`OnDevice`, a wrapper around a
real CPU tensor that reports ``DEVICE``, and every operation (``__torch_dispatch__``, and the
:class:`SimulatedDevice` mode for factory functions given ``device=DEVICE``) computes on the wrapped CPU
tensors, so the numbers are the CPU's exactly, data-dependent code (``.item()``, ``nonzero``, Python
``if`` on a tensor) runs, and an operation that mixes a tensor on the device with a CPU tensor of one
dimension or more raises :class:`DeviceMismatch`, naming the operation, where CUDA would raise.

What CUDA itself allows passes: zero-dimensional CPU tensors (Python scalars), CPU index tensors in
advanced indexing, tensors made on the CPU and then moved (``.to(device)``: fairseq's own idiom), and the
CPU ``batch_sizes`` of packed sequences. ``DEVICE`` is the ``meta`` device type (a real ``cuda`` device
cannot be named on a CPU-only build of torch); ``torch.autocast`` is told the CPU for it.
"""
import contextlib

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten, tree_map

DEVICE = torch.device("meta")
_aten = torch.ops.aten
#: operations whose CPU tensor arguments CUDA accepts with CUDA tensors
CPU_ARGUMENTS_ALLOWED = {
    _aten.index.Tensor, _aten.index_put.default, _aten.index_put_.default, _aten._index_put_impl_.default,
    _aten._pack_padded_sequence.default, _aten._pad_packed_sequence.default, _aten.lstm.data,
}


class DeviceMismatch(RuntimeError):
    """An operation mixed the simulated device with CPU tensors (CUDA would raise here)."""


class OnDevice(torch.Tensor):
    """A CPU tensor that reports the simulated device."""

    @staticmethod
    def __new__(cls, elem):
        # sizes and strides asked through the dispatcher, answered from the wrapped tensor: an in-place resize_
        # (fairseq's beam search shrinks its offsets so) is seen by the wrapper too
        t = torch.Tensor._make_wrapper_subclass(cls, elem.size(), strides=elem.stride(),
                                                storage_offset=elem.storage_offset(), dtype=elem.dtype,
                                                layout=elem.layout, device=DEVICE, requires_grad=elem.requires_grad,
                                                dispatch_sizes_strides_policy="sizes")
        t.elem = elem
        return t

    def tolist(self):
        return self.elem.tolist()

    # a Python list as an index is made into a tensor on the indexed tensor's device by C++ code that the
    # dispatcher does not see: here that would be a real, data-less meta tensor; made a CPU tensor first, it
    # reaches the dispatcher (CUDA takes CPU index tensors too)
    def __getitem__(self, key):
        return super().__getitem__(_list_indices(key))

    def __setitem__(self, key, value):
        return super().__setitem__(_list_indices(key), value)

    def __repr__(self):
        return f"OnDevice({self.elem!r})"

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        return _dispatch(func, args, kwargs or {})


def _list_indices(key):
    if isinstance(key, list):
        return torch.tensor(key)
    if isinstance(key, tuple):
        return tuple(torch.tensor(k) if isinstance(k, list) else k for k in key)
    return key


def _unwrap(x):
    return x.elem if isinstance(x, OnDevice) else x


def _wrap(x):
    return OnDevice(x) if isinstance(x, torch.Tensor) and not isinstance(x, OnDevice) else x


def _is_device(device) -> bool:
    return device is not None and torch.device(device).type == DEVICE.type


_SIZES = {_aten.sym_size.default: lambda t: t.size(), _aten.sym_stride.default: lambda t: t.stride(),
          _aten.sym_storage_offset.default: lambda t: t.storage_offset(), _aten.sym_numel.default: lambda t: t.numel(),
          _aten.dim.default: lambda t: t.dim()}


def _dispatch(func, args, kwargs):
    if func in _SIZES:
        return _SIZES[func](args[0].elem)
    flat, _ = tree_flatten((args, kwargs))
    on_device = any(isinstance(a, OnDevice) for a in flat)
    device = kwargs.get("device")
    if func is _aten._to_copy.default and device is not None and not _is_device(device):
        return func(*tree_map(_unwrap, args), **tree_map(_unwrap, kwargs))  # leaving the device: .cpu()
    made_there = _is_device(device)
    if on_device and func not in CPU_ARGUMENTS_ALLOWED:
        cpu = [tuple(a.shape) for a in flat if isinstance(a, torch.Tensor) and not isinstance(a, OnDevice)
               and a.dim() > 0]
        if cpu:
            raise DeviceMismatch(f"{func}: tensors on the model's device mixed with CPU tensors of shape {cpu}")
    if made_there:
        kwargs = dict(kwargs, device=torch.device("cpu"))
    out = func(*tree_map(_unwrap, args), **tree_map(_unwrap, kwargs))
    if func is _aten._pack_padded_sequence.default:
        return _wrap(out[0]), out[1]  # batch_sizes stay on the CPU, as torch's API wants
    return tree_map(_wrap, out) if on_device or made_there else out


class SimulatedDevice(TorchDispatchMode):
    """Factory functions given ``device=DEVICE`` make :class:`OnDevice` tensors (on the CPU underneath)."""

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        return _dispatch(func, args, kwargs or {})


class _Autocast(torch.autocast):
    def __init__(self, device_type, *args, **kwargs):
        super().__init__("cpu" if device_type == DEVICE.type else device_type, *args, **kwargs)


@contextlib.contextmanager
def simulated_device():
    """Inside: ``x.to(DEVICE)`` and ``torch.zeros(..., device=DEVICE)`` put tensors on the simulated device."""
    real_autocast = torch.autocast
    torch.autocast = _Autocast
    try:
        with SimulatedDevice():
            yield
    finally:
        torch.autocast = real_autocast


def move_module(module: torch.nn.Module) -> torch.nn.Module:
    """``module`` with its parameters and buffers on the simulated device, in place; a parameter shared by
    several modules (tied embeddings) stays one parameter (``Module.to`` would copy it per module, since it
    cannot swap a tensor's class in place)."""
    moved = {}
    for m in module.modules():
        for name, p in list(m._parameters.items()):
            if p is not None:
                if id(p) not in moved:
                    moved[id(p)] = torch.nn.Parameter(p.detach().to(DEVICE), requires_grad=p.requires_grad)
                m._parameters[name] = moved[id(p)]
        for name, b in list(m._buffers.items()):
            if b is not None:
                m._buffers[name] = b.to(DEVICE)
    return module


def to_device(sample):
    """Every tensor of a (nested) sample moved to the simulated device (inside :func:`simulated_device`)."""
    from fairseq import utils

    return utils.apply_to_sample(lambda t: t.to(DEVICE), sample)


def host(x: torch.Tensor) -> torch.Tensor:
    """The CPU tensor a tensor on the simulated device holds (a CPU tensor as it is)."""
    return x.elem if isinstance(x, OnDevice) else x
