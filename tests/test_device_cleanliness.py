"""Every preset keeps its tensors on the model's device: a training step (loss terms, backward) and incremental
beam search with the model and the batch on a second device simulated on the CPU (tests/simulated_device.py),
giving the CPU's numbers; and removing one ``device=`` from a mechanism's tensor constructor is caught."""
import contextlib
import inspect
import sys

import pytest
import torch

import golden_numbers
from simulated_device import DeviceMismatch, OnDevice, host, move_module, simulated_device, to_device


def _step_and_beam(case, on_device):
    """(logging outputs, gradients by name, beam tokens) of one training step and a beam search (beam 3, 4
    sentences) of a golden case, seeded, with the model and batches on the simulated device or the CPU."""
    from fairseq.sequence_generator import SequenceGenerator

    task, model, criterion, batch = golden_numbers.build(case)
    ds = task.dataset("train")
    sample = ds.collater([ds[i] for i in range(4)])
    with simulated_device() if on_device else contextlib.nullcontext():
        if on_device:
            model, criterion = move_module(model), move_module(criterion)
            batch, sample = to_device(batch), to_device(sample)
        torch.manual_seed(1)
        model.train()
        loss, _, log = criterion(model, batch)
        loss.backward()
        grads = {n: p.grad for n, p in model.named_parameters() if p.grad is not None}
        model.eval()
        gen = SequenceGenerator([model], task.target_dictionary, beam_size=3, max_len_b=12)
        with torch.no_grad():
            hyps = task.inference_step(gen, [model], sample)
    tokens = [[host(h["tokens"]).tolist() for h in sent] for sent in hyps]
    return log, grads, tokens, model


@pytest.mark.parametrize("case", golden_numbers.case_params())
def test_training_step_and_beam_search_stay_on_the_models_device(case):
    log, grads, tokens, model = _step_and_beam(case, on_device=True)
    stray = [n for n, p in model.named_parameters() if not isinstance(p, OnDevice)]
    assert not stray, f"parameters not moved: {stray}"
    off = [n for n, g in grads.items() if not isinstance(g, OnDevice)]
    assert not off, f"gradients off the device: {off}"
    assert grads, "no gradient"
    ref_log, ref_grads, ref_tokens, _ = _step_and_beam(case, on_device=False)
    # the CPU's numbers, to rounding (a kernel may sum in another order on the wrapped tensors: seen 3e-7 of the
    # largest gradient element; a gradient that is zero in exact arithmetic, as k_proj's bias, is rounding alone)
    assert log.keys() == ref_log.keys()
    for key, value in log.items():
        assert float(host(torch.as_tensor(value))) == pytest.approx(float(torch.as_tensor(ref_log[key])), rel=1e-5), key
    assert set(grads) == set(ref_grads)
    scale = max(float(g.abs().max()) for g in ref_grads.values())
    for name, g in grads.items():
        torch.testing.assert_close(host(g), ref_grads[name], rtol=0, atol=1e-6 * scale, msg=name)
    assert tokens == ref_tokens


def _mutated(module, function, constructor_arg):
    """``function`` of ``module`` compiled again from its source with one ``constructor_arg`` (e.g.
    ', device=parents.device') removed: a tensor constructor that makes its tensor on the CPU."""
    src = inspect.getsource(getattr(module, function))
    assert src.count(constructor_arg) >= 1, (function, constructor_arg)
    namespace = dict(vars(module))
    exec(compile(src.replace(constructor_arg, "", 1), inspect.getsourcefile(module), "exec"), namespace)
    return namespace[function]


# (case that uses the mechanism, module, function or class.method, the device argument to remove)
MUTATIONS = [
    ("transformer_rel_tiny", "fairseq_syntax.modules.relative_positions", "linear_buckets", ", device=device"),
    ("transformer_pascal_tiny", "fairseq_syntax.modules.parent_scaled_attention", "parent_gaussian",
     ", device=parents.device"),
    ("transformer_pascal_tiny_parent_only", "fairseq_syntax.modules.parent_scaled_attention", "parent_only",
     ", device=parents.device"),
    ("transformer_dbsa_tiny", "fairseq_syntax.criterions.dependency_loss", "supervised_positions",
     ", device=parents.device"),
    ("transformer_syncattn_tiny", "fairseq_syntax.criterions.sync_loss", "synchronous_attention_loss",
     ", device=mapped.device"),
    ("cky_lstm_tiny", "fairseq_syntax.modules.cky_table", "cell_coordinates", ", device=device"),
]


@pytest.mark.parametrize("case,module,function,arg", MUTATIONS, ids=[m[2] for m in MUTATIONS])
def test_a_constructor_without_its_device_is_caught(case, module, function, arg, monkeypatch):
    """The check can fail: with one ``device=`` removed from a mechanism, the same step raises
    DeviceMismatch (on the CPU alone the mutated code runs as before)."""
    __import__(module)
    mod = sys.modules[module]
    original, mutated = getattr(mod, function), _mutated(mod, function, arg)
    for name, m in list(sys.modules.items()):  # the function as every importer bound it
        if name.startswith("fairseq_syntax") and getattr(m, function, None) is original:
            monkeypatch.setattr(m, function, mutated)
    _step_and_beam(case, on_device=False)  # the mutation is harmless on one device
    with pytest.raises(DeviceMismatch, match="mixed with CPU tensors"):
        _step_and_beam(case, on_device=True)
