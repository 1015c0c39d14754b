"""The task's token reading and collation equal fairseq's LanguagePairDataset, item for item and batch for batch.

``fairseq_syntax/data/datasets/token_collation.py`` re-does fairseq's
``LanguagePairDataset.__getitem__`` and ``collate`` with numpy calls per batch
These tests build memory-mapped token data with fairseq's
own builder and compare the two on random batches in every configuration the
fast path accepts (padding sides, input feeding, no target, pad-to-multiple,
pad-to-length, length ties, both on-disk dtypes), check that the fast path is
the one taken (so a silent fallback fails), and that configurations it does
not cover go through fairseq.
"""
import random

import numpy as np
import pytest
import torch
from fairseq.data import Dictionary, LanguagePairDataset
from fairseq.data.indexed_dataset import MMapIndexedDataset, MMapIndexedDatasetBuilder

from fairseq_syntax.data.datasets.syntax_dataset import SyntaxLanguagePairDataset, SyntaxRequest
from fairseq_syntax.data.datasets.token_collation import TokenPairs


def _dictionary(size):
    d = Dictionary()
    for k in range(size):
        d.add_symbol(f"w{k}")
    return d


def _mmap(path, sentences, vocab_size):
    dtype = np.uint16 if vocab_size < 65500 else np.int32  # fairseq's best_fitting_int_dtype
    builder = MMapIndexedDatasetBuilder(str(path) + ".bin", dtype=dtype)
    for s in sentences:
        builder.add_item(torch.tensor(s, dtype=torch.int64))
    builder.finalize(str(path) + ".idx")
    return MMapIndexedDataset(str(path))


def _corpus(rng, n, d, max_len):
    """n sentences of 1..max_len tokens ending in EOS; many equal lengths (sort ties)."""
    return [[rng.randrange(d.nspecial, len(d)) for _ in range(rng.randint(0, max_len - 1))] + [d.eos()]
            for _ in range(n)]


@pytest.fixture(scope="module", params=[100, 70000], ids=["uint16", "int32"])
def pair_data(request, tmp_path_factory):
    rng = random.Random(request.param)
    d = _dictionary(request.param)
    tmp = tmp_path_factory.mktemp("tokens")
    src = _mmap(tmp / "src", _corpus(rng, 300, d, 25), len(d))
    tgt = _mmap(tmp / "tgt", _corpus(rng, 300, d, 30), len(d))
    return d, src, tgt


def _pair(data, with_target=True, **kwargs):
    d, src, tgt = data
    return LanguagePairDataset(src, src.sizes, d, tgt if with_target else None, tgt.sizes if with_target else None,
                               d, **kwargs)


def _assert_same(fast, ref, where):
    assert list(fast) == list(ref), where
    for key in ref:
        a, b = fast[key], ref[key]
        if isinstance(b, dict):
            _assert_same(a, b, f"{where}[{key}]")
        elif torch.is_tensor(b):
            assert torch.is_tensor(a) and a.dtype == b.dtype and a.shape == b.shape, (where, key)
            assert torch.equal(a, b), (where, key)
        else:
            assert type(a) is type(b) and a == b, (where, key, a, b)


CONFIGS = [
    dict(),
    dict(left_pad_source=False),
    dict(left_pad_target=True),
    dict(left_pad_source=False, left_pad_target=True),
    dict(input_feeding=False),
    dict(pad_to_multiple=8),
    dict(with_target=False),
    dict(with_target=False, left_pad_source=False, pad_to_multiple=8),
]


@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: ",".join(f"{k}={v}" for k, v in c.items()) or "default")
def test_items_and_batches_equal_fairseq(pair_data, config):
    base = _pair(pair_data, **config)
    ds = SyntaxLanguagePairDataset(base, SyntaxRequest())
    assert ds._tokens is not None and ds._read_tokens, "the fast path was not taken"
    rng = random.Random(7)
    for i in range(len(base)):
        _assert_same(ds[i], base[i], f"item {i}")
    for trial in range(60):
        idx = rng.sample(range(len(base)), rng.randint(1, 64))
        if trial % 5 == 0:  # many rows of one length: the sort's ties
            length = len(base[idx[0]]["source"])
            idx = [i for i in range(len(base)) if len(base[i]["source"]) == length][:40] or idx
        _assert_same(ds.collater([ds[i] for i in idx]), base.collater([base[i] for i in idx]), f"batch {idx}")
    assert ds.collater([]) == base.collater([]) == {}


def test_pad_to_length_equal_fairseq(pair_data):
    base = _pair(pair_data)
    ds = SyntaxLanguagePairDataset(base, SyntaxRequest())
    idx = list(range(0, 60, 3))
    for pad_to in ({"source": 40, "target": 45}, {"source": 3, "target": 2}):
        _assert_same(ds.collater([ds[i] for i in idx], pad_to_length=pad_to),
                     base.collater([base[i] for i in idx], pad_to_length=pad_to), str(pad_to))


def test_unsupported_configurations_use_fairseq(pair_data):
    d, src, tgt = pair_data
    base = _pair(pair_data, append_eos_to_target=True)
    assert TokenPairs(base).collates() and not TokenPairs(base).reads()  # items rewritten: fairseq reads them
    ds = SyntaxLanguagePairDataset(base, SyntaxRequest())
    idx = list(range(20))
    _assert_same(ds.collater([ds[i] for i in idx]), base.collater([base[i] for i in idx]), "append_eos_to_target")
    tagged = _pair(pair_data, src_lang_id=5, tgt_lang_id=6)
    assert not TokenPairs(tagged).collates()
    ds = SyntaxLanguagePairDataset(tagged, SyntaxRequest())
    batch = ds.collater([ds[i] for i in idx])
    assert batch["net_input"]["src_lang_id"].eq(5).all() and batch["tgt_lang_id"].eq(6).all()
    in_memory = LanguagePairDataset([src[i] for i in range(len(src))], src.sizes, d,
                                    [tgt[i] for i in range(len(tgt))], tgt.sizes, d)
    tokens = TokenPairs(in_memory)
    assert tokens.collates() and not tokens.reads()  # not memory-mapped: fairseq's __getitem__, fast collation
    ds = SyntaxLanguagePairDataset(in_memory, SyntaxRequest())
    _assert_same(ds.collater([ds[i] for i in idx]), in_memory.collater([in_memory[i] for i in idx]), "in memory")


def test_pickled_for_dataloader_workers(pair_data):
    import pickle

    base = _pair(pair_data)
    ds = SyntaxLanguagePairDataset(base, SyntaxRequest())
    ds[0]
    clone = pickle.loads(pickle.dumps(ds))
    idx = list(range(30))
    _assert_same(clone.collater([clone[i] for i in idx]), base.collater([base[i] for i in idx]), "unpickled")
