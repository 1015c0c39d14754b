"""examples/gpu/peak_memory.py: a step's true peak on a device shared with other models, checked on the CPU
against a hand-computed peak for a tiny model (its allocations tracked by a mock allocator behind the one seam
the measurement reads), with fairseq's per-step reset of the peak counter made inside the step."""
import inspect
import os
import sys

import torch

from helpers import ROOT

sys.path.insert(0, os.path.join(ROOT, "examples", "gpu"))
import peak_memory  # noqa: E402


class MockAllocator:
    """torch.cuda's three counters over explicit allocations and frees."""

    def __init__(self, held=0):
        self.now = self.top = held

    def alloc(self, n):
        self.now += n
        self.top = max(self.top, self.now)

    def free(self, n):
        self.now -= n

    def allocated(self):
        return self.now

    def peak(self):
        return self.top

    def reset_peak(self, *args):
        self.top = self.now


def tiny_model_and_adam():
    torch.manual_seed(0)
    model = torch.nn.Linear(3, 2)  # 6 weights + 2 biases, float32
    opt = torch.optim.Adam(model.parameters(), lr=0.1)
    return model, opt


def train_step(model, opt, mock):
    """One real Adam step of the tiny model; its activations and temporaries as a device would allocate them
    (told to the mock), and fairseq's reset of the peak counter at the end of a step that did not overflow."""
    opt.zero_grad()
    mock.alloc(1000)  # activations of the forward
    loss = model(torch.ones(4, 3)).pow(2).sum()
    mock.alloc(3000)  # the backward's buffers: the step's peak, 4,000 bytes above where it started
    loss.backward()
    mock.free(1000)
    mock.alloc(500)  # the optimizer's temporaries
    opt.step()
    mock.free(3500)
    torch.cuda.reset_peak_memory_stats()  # what fairseq's Trainer.train_step does after the update


def test_static_state_of_a_tiny_model_by_hand():
    model, opt = tiny_model_and_adam()
    assert peak_memory.static_bytes(model, opt) == 8 * 4  # parameters only: no gradients, no Adam state yet
    model(torch.ones(1, 3)).sum().backward()
    opt.step()
    # per parameter tensor: itself, its gradient, Adam's two moments (4 x (24 + 8) bytes), and Adam's step
    # count, a float32 scalar tensor for each of the 2 parameter tensors
    assert peak_memory.static_bytes(model, opt) == 4 * 32 + 2 * 4


def test_fairseq_style_wrappers_and_flat_master_copies_are_counted_once():
    """fairseq's FP16Optimizer: fp16 model parameters, a flat fp32 master copy (with a flat gradient) that its
    torch Adam updates; the copy is reachable as the wrapper's fp32_params and as Adam's parameter."""
    model = torch.nn.Linear(3, 2).half()
    flat = torch.zeros(8, dtype=torch.float32, requires_grad=True)
    flat.grad = torch.zeros(8)
    adam = torch.optim.Adam([flat])
    flat.sum().backward()
    adam.step()

    class FairseqAdam:
        def __init__(self):
            self._optimizer = adam

    class FP16Optimizer:
        def __init__(self):
            self.fp32_optimizer = FairseqAdam()
            self.fp32_params = flat

    model(torch.ones(1, 3, dtype=torch.float16)).float().sum().backward()
    # fp16 weights and gradients (2 x 8 x 2 bytes), fp32 master and its gradient (2 x 32), moments (2 x 32), step
    assert peak_memory.static_bytes(model, FP16Optimizer()) == 32 + 64 + 64 + 4


def test_measured_peak_equals_the_hand_computed_peak(monkeypatch):
    model, opt = tiny_model_and_adam()
    mock = MockAllocator(held=10_000)  # other models and the batches on the same device
    monkeypatch.setattr(torch.cuda, "reset_peak_memory_stats", mock.reset_peak)  # as on a GPU
    train_step(model, opt, mock)  # the first step makes Adam's state
    static = 4 * 32 + 2 * 4
    m, _ = peak_memory.measure_step(lambda: train_step(model, opt, mock), mock,
                                    lambda: peak_memory.static_bytes(model, opt))
    assert m == {"before": 10_000, "peak": 14_000, "transient": 4_000, "static": static,
                 "model_peak": static + 4_000, "resets_suppressed": 1}
    assert torch.cuda.reset_peak_memory_stats == mock.reset_peak  # restored after the measurement
    # what the counter says when fairseq's reset reaches it: the allocation after the step, not its peak
    mock.reset_peak()
    train_step(model, opt, mock)
    assert mock.peak() - 10_000 == 0
    steps = [m, dict(m, model_peak=1, transient=0)]
    assert peak_memory.model_peak(steps) == {"model_peak": static + 4_000, "static": static, "transient": 4_000,
                                             "steps": 2}


def test_fairseq_resets_the_peak_through_the_torch_cuda_attribute():
    """The patch reaches fairseq's call only while fairseq looks the function up on ``torch.cuda`` at each step
    (an import of the function by name would bind the original)."""
    from fairseq import trainer

    assert "torch.cuda.reset_peak_memory_stats()" in inspect.getsource(trainer.Trainer.train_step)
    assert trainer.torch is torch and "reset_peak_memory_stats" not in vars(trainer)
    with peak_memory.suppress_peak_resets() as calls:
        torch.cuda.reset_peak_memory_stats()
    assert calls == [()]
