"""The true peak memory of one model's training step, with other models and batches on the same device.

fairseq's ``Trainer.train_step`` calls ``torch.cuda.reset_peak_memory_stats()``
after every update that did not overflow (to log ``gb_free``), so
``max_memory_allocated`` read after a step is what the last step left
allocated, not its peak. Here, for the duration of a measurement,
:func:`suppress_peak_resets` makes that call a no-op; the counter's own reset
goes to the original function, captured when the counter is made.

Every model of a timing run lives on the device at once, with all the
batches, so the device's allocation is not one model's. One step's figure is
therefore relative: ``peak - before`` (what the step allocated on top of what
was held when it started) plus the model's static state at that moment
(parameters, gradients, the optimizer's master weights and moments:
:func:`static_bytes`, each storage counted once), which is what the device
would hold for that model alone at the step's peak.

The counter is one seam (:class:`CudaCounter`: ``allocated()``, ``peak()``,
``reset_peak()``): tests drive the same arithmetic with a mock allocator.
"""
import contextlib


class CudaCounter:
    """torch.cuda's allocation counters of one device, bound when made (so a patched
    ``torch.cuda.reset_peak_memory_stats`` does not reach them)."""

    def __init__(self, device=None):
        import torch

        self.device = device
        self._allocated = torch.cuda.memory_allocated
        self._peak = torch.cuda.max_memory_allocated
        self._reset = torch.cuda.reset_peak_memory_stats
        self._sync = torch.cuda.synchronize

    def allocated(self):
        self._sync(self.device)
        return self._allocated(self.device)

    def peak(self):
        self._sync(self.device)
        return self._peak(self.device)

    def reset_peak(self):
        self._sync(self.device)
        self._reset(self.device)


@contextlib.contextmanager
def suppress_peak_resets():
    """``torch.cuda.reset_peak_memory_stats`` is a no-op inside (fairseq's Trainer looks it up on ``torch.cuda``
    at every step; a test checks that it still does), and the original again after."""
    import torch

    original = torch.cuda.reset_peak_memory_stats
    calls = []
    torch.cuda.reset_peak_memory_stats = lambda *args, **kwargs: calls.append(args)
    try:
        yield calls
    finally:
        torch.cuda.reset_peak_memory_stats = original


def static_bytes(model, optimizer=None, device=None):
    """Bytes of the tensors a model holds between steps: its parameters and their gradients, and the optimizer's
    parameters (fairseq's FP16 optimizers' fp32 master copies, flat or not), their gradients and its state (Adam's
    moments). Each storage is counted once (a flat master copy and its views; shared embeddings); tensors on
    another device than ``device`` (when given) are left out. ``optimizer``: fairseq's optimizer wrapper or a
    torch optimizer."""
    import torch

    seen, total = set(), 0

    def add(t):
        nonlocal total
        if not torch.is_tensor(t) or (device is not None and t.device != torch.device(device)):
            return
        storage = t.untyped_storage()
        key = (storage.data_ptr(), storage.device)
        if storage.nbytes() and key not in seen:
            seen.add(key)
            total += storage.nbytes()

    for p in model.parameters():
        add(p)
        add(p.grad)
    for opt in _torch_optimizers(optimizer):
        for group in opt.param_groups:
            for p in group["params"]:
                add(p)
                add(p.grad)
        for state in opt.state.values():
            for v in state.values():
                add(v)
    for p in _flat_masters(optimizer):
        add(p)
        add(p.grad)
    return total


def _torch_optimizers(optimizer):
    """The torch optimizers inside fairseq's wrappers (FP16Optimizer -> FairseqAdam -> torch.optim.Adam)."""
    import torch

    seen = []
    todo = [optimizer]
    while todo:
        o = todo.pop()
        if o is None or any(o is s for s in seen):
            continue
        seen.append(o)
        if isinstance(o, torch.optim.Optimizer):
            continue
        for attr in ("fp32_optimizer", "wrapped_optimizer", "_optimizer"):
            todo.append(o.__dict__.get(attr))
        todo.append(o.__dict__.get("optimizer"))
    return [o for o in seen if isinstance(o, torch.optim.Optimizer)]


def _flat_masters(optimizer):
    """fairseq FP16Optimizer's fp32 master parameters (a flat tensor, a list, or a dict by device)."""
    import torch

    masters = getattr(optimizer, "fp32_params", None) if optimizer is not None else None
    if masters is None:
        return []
    if torch.is_tensor(masters):
        return [masters]
    if isinstance(masters, dict):
        return list(masters.values())
    return list(masters)


def measure_step(step, counter, static):
    """Run ``step()`` once and return its memory: ``before`` (the counter's allocation when it started),
    ``peak`` (the counter's peak during it), ``transient`` (peak - before), ``static`` (``static()``, the model's
    state when it started) and ``model_peak`` (static + transient), in bytes, with ``resets_suppressed``: the
    calls to ``torch.cuda.reset_peak_memory_stats`` made inside ``step`` (none reached the counter)."""
    held = static()
    before = counter.allocated()
    counter.reset_peak()
    with suppress_peak_resets() as calls:
        result = step()
    peak = counter.peak()
    transient = max(peak - before, 0)
    return {"before": before, "peak": peak, "transient": transient, "static": held, "model_peak": held + transient,
            "resets_suppressed": len(calls)}, result


def model_peak(measurements):
    """One model's peak over its measured steps: the largest ``model_peak`` (bytes), and the step's parts."""
    worst = max(measurements, key=lambda m: m["model_peak"])
    return {"model_peak": worst["model_peak"], "static": worst["static"], "transient": worst["transient"],
            "steps": len(measurements)}
