"""The syntax_translation task: loading, validation against tokens, saved config, model needs."""
import io
import os
import shutil

import pytest
from omegaconf import OmegaConf

from fairseq_syntax.data.trees.conllu import read_conllu as read_conllu_file
from fairseq_syntax.data.alignment.syntax_io import write_mmap
from fairseq_syntax.data.datasets.syntax_request import SyntaxNeeds
from fairseq_syntax.errors import SyntaxDataError
from helpers import synthetic_data_bin


@pytest.fixture(scope="module")
def small_bin(tmp_path_factory):
    return synthetic_data_bin(str(tmp_path_factory.mktemp("task")), 60, 10, 10, merges=100, seed=2)


def make_task(data, **overrides):
    from fairseq_syntax.tasks.syntax_translation import SyntaxTranslationConfig, SyntaxTranslationTask

    cfg = OmegaConf.structured(SyntaxTranslationConfig(data=data, source_lang="src", target_lang="tgt"))
    cfg.train_subset = "train"
    cfg.dataset_impl = "mmap"
    cfg.required_seq_len_multiple = 1
    for k, v in overrides.items():
        setattr(cfg, k, v)
    return SyntaxTranslationTask.setup_task(cfg)


def test_auto_with_no_model_needs_gives_plain_batches(small_bin):
    task = make_task(small_bin)
    task.load_dataset("valid")
    ds = task.dataset("valid")
    batch = ds.collater([ds[i] for i in range(3)])
    assert "syntax" not in batch and task.src_label_dict is not None


def test_model_needs_switch_fields_on_for_loaded_datasets(small_bin):
    task = make_task(small_bin, parent_strategy="middle")
    task.load_dataset("valid")  # loaded before the model is built, as fairseq-train does
    task.add_model_needs(SyntaxNeeds(source={"parents", "labels"}, target={"parents"}, inputs={"src_parents"}))
    ds = task.dataset("valid")
    batch = ds.collater([ds[i] for i in range(3)])
    assert batch["syntax"]["src_parents"].dtype.is_floating_point  # middle: x.5 positions
    assert "src_parents" in batch["net_input"] and "src_labels" in batch["syntax"]


def test_explicit_fields_must_cover_model_needs(small_bin):
    task = make_task(small_bin, source_syntax="depths")
    with pytest.raises(ValueError, match=r"needs source syntax field\(s\) \['parents'\] but --source-syntax is depths"):
        task.add_model_needs(SyntaxNeeds(source={"parents"}))


def test_generate_adopts_the_checkpoint_task_config(small_bin):
    task = make_task(small_bin)  # command line: defaults (chain, auto)
    saved = OmegaConf.create({"parent_strategy": "first", "source_syntax": "parents,depths", "target_syntax": "none"})
    task.load_dataset("test", task_cfg=saved)
    assert task.syntax_request.strategy == "first"
    assert task.syntax_request.source == {"parents", "depths"} and task.syntax_request.target == frozenset()
    ds = task.dataset("test")
    assert set(ds.collater([ds[0], ds[1]])["syntax"]) == {"src_parents", "src_depths", "src_supervised"}


def test_bad_field_name(small_bin):
    with pytest.raises(ValueError, match=r"--source-syntax: unknown field\(s\) \['heads'\]"):
        make_task(small_bin, source_syntax="heads")


def test_syntax_length_differs_from_tokens(small_bin, tmp_path):
    data = str(tmp_path / "bin")
    shutil.copytree(small_bin, data)
    from fairseq.data.indexed_dataset import MMapIndexedDataset

    prefix = os.path.join(data, "valid.src-tgt.tgt.words")
    ds = MMapIndexedDataset(prefix)  # keep it alive: its arrays live in its mmap
    sizes = ds.sizes.copy()
    del ds
    sizes[4] -= 1  # sentence 4 loses one entry
    from array import array

    write_mmap(prefix, array("i", [1] * int(sizes.sum())), sizes)
    task = make_task(data, target_syntax="parents")
    with pytest.raises(SyntaxDataError) as e:
        task.load_dataset("valid")
    msg = str(e.value)
    assert "split 'valid', target side (tgt" in msg and "sentence 4" in msg
    assert f"expected {sizes[4] + 1} syntax entries" in msg and f"found {sizes[4]}" in msg


def test_missing_syntax_files_named(small_bin, tmp_path):
    data = str(tmp_path / "bin")
    shutil.copytree(small_bin, data)
    for f in os.listdir(data):
        if f.startswith("test.src-tgt.src.") and (".words." in f or ".heads." in f):
            os.remove(os.path.join(data, f))
    task = make_task(data)
    task.add_model_needs(SyntaxNeeds(source={"parents"}, inputs={"src_parents"}))  # PASCAL-like: parses are inputs
    with pytest.raises(SyntaxDataError, match=r"test.src-tgt.src.words.\{bin,idx\}: source syntax is a model input"):
        task.load_dataset("test")
    # supervision only (DBSA-like): the split loads, its batches carry no source syntax
    task = make_task(data, source_syntax="parents")
    task.load_dataset("test")
    ds = task.dataset("test")
    assert "src_parents" not in ds.collater([ds[0], ds[1]]).get("syntax", {})
    # a model without syntax needs still loads the split
    make_task(data).load_dataset("test")


def test_truncate_source_is_refused(small_bin):
    task = make_task(small_bin, truncate_source=True)
    with pytest.raises(ValueError, match="truncate-source"):
        task.load_dataset("valid")


@pytest.mark.parametrize("strategy", ["middle", "chain"])
def test_parsing_on_the_fly_equals_the_collated_syntax(small_bin, strategy):
    """fairseq-interactive batches (tokens only) get the same syntax inputs as the preprocessed data."""
    import torch

    conllu = os.path.join(os.path.dirname(small_bin), "raw", "test.src.conllu")
    task = make_task(small_bin, inference_parser="conllu", inference_parser_model=conllu)
    task.add_model_needs(SyntaxNeeds(source={"parents", "labels", "depths"}, strategy=strategy,
                                     inputs={"src_parents", "src_labels", "src_depths"}))
    task.load_dataset("test")
    ds = task.dataset("test")
    batch = ds.collater([ds[i] for i in (0, 3, 5, 7)])  # unequal lengths, left-padded
    net = {k: v for k, v in batch["net_input"].items() if k in ("src_tokens", "src_lengths")}
    sample = {"net_input": net}
    task.raw_input.add_missing_source_inputs(sample)
    for name in ("src_parents", "src_labels", "src_depths"):
        assert torch.equal(sample["net_input"][name], batch["net_input"][name]), name
    # inputs already in the batch are left alone (no parse)
    task.raw_input._parser = None
    task.cfg.inference_parser_model = "/nonexistent.conllu"
    task.raw_input.add_missing_source_inputs(batch)


def _collated_without_syntax_inputs(task):
    task.load_dataset("test")
    ds = task.dataset("test")
    batch = ds.collater([ds[i] for i in (0, 3, 5, 7)])
    return batch, {"net_input": {k: batch["net_input"][k] for k in ("src_tokens", "src_lengths")}}


def test_parsing_on_the_fly_through_the_stanza_adapter(small_bin):
    """The default backend's code path (stanza Documents -> Sentences) at inference, with Documents from CoNLL-U."""
    import torch
    from stanza.utils.conll import CoNLL

    from fairseq_syntax.data.trees.conllu import write_conllu
    from fairseq_syntax.parsing.stanza_backend import StanzaParser

    gold = {tuple(s.tokens): s for s in read_conllu_file(os.path.join(os.path.dirname(small_bin), "raw",
                                                                      "test.src.conllu"))}
    calls = []

    def pipeline(token_lists):  # what stanza.Pipeline(tokenize_pretokenized=True) is called with
        calls.append(token_lists)
        buf = io.StringIO()
        write_conllu([gold[tuple(t)] for t in token_lists], buf)
        return CoNLL.conll2doc(input_str=buf.getvalue())

    task = make_task(small_bin)
    task.add_model_needs(SyntaxNeeds(source={"parents", "labels"}, strategy="middle",
                                     inputs={"src_parents", "src_labels"}))
    batch, sample = _collated_without_syntax_inputs(task)
    task.raw_input._parser = StanzaParser(pipeline=pipeline, pretokenized=True)
    task.raw_input.add_missing_source_inputs(sample)
    assert len(calls) == 1 and len(calls[0]) == 4  # one parser call per batch, token lists
    for name in ("src_parents", "src_labels"):
        assert torch.equal(sample["net_input"][name], batch["net_input"][name]), name


def test_parsing_on_the_fly_with_a_real_parser(small_bin):
    """UDPipe 1 (offline here) parses the batch; the inputs are well-formed trees in batch coordinates."""
    import importlib.util

    from conftest import require_shared

    if importlib.util.find_spec("ufal") is None:
        pytest.skip("ufal.udpipe is not installed")
    model = require_shared("models", "en_ewt_udpipe_small.udpipe")
    task = make_task(small_bin, inference_parser="udpipe", inference_parser_model=model)
    task.add_model_needs(SyntaxNeeds(source={"parents", "depths"}, strategy="first",
                                     inputs={"src_parents", "src_depths"}))
    batch, sample = _collated_without_syntax_inputs(task)
    task.raw_input.add_missing_source_inputs(sample)
    parents, tokens = sample["net_input"]["src_parents"], sample["net_input"]["src_tokens"]
    assert parents.shape == tokens.shape
    real = tokens.ne(task.src_dict.pad())
    assert (parents[~real] == -1).all() and (parents[real] >= 0).all()
    pad = (~real).sum(1)
    assert ((parents[real] >= pad.repeat_interleave(real.sum(1))) & (parents[real] < tokens.size(1))).all()
    assert (parents[:, -1] == tokens.size(1) - 1).all()  # EOS is its own parent


def test_an_ensemble_reads_one_parent_strategy_per_side():
    """Models that read parents on a side must agree on the strategy (or --parent-strategy decides); a model
    that reads no parents on a side does not vote (PASCAL with a depth model keeps 'middle')."""
    from fairseq_syntax.data.datasets.syntax_request import resolve_request

    pascal = SyntaxNeeds(source={"parents"}, inputs={"src_parents"}, strategy="middle")
    sisa = SyntaxNeeds(source={"parents"}, strategy="first")
    dep = SyntaxNeeds(source={"depths"}, inputs={"src_depths"})
    assert resolve_request(models=[dep, pascal]).strategy == "middle"
    assert resolve_request(models=[pascal, dep]).strategy == "middle"
    with pytest.raises(ValueError, match="different parent strategies on the source side"):
        resolve_request(models=[pascal, sisa])
    assert resolve_request(strategy="first", models=[pascal, sisa]).strategy == "first"  # the option decides
