"""Batch-vectorised syntax collation gives exactly the tensors of the former per-sentence collation.

``_ref_*`` below is a verbatim copy of the per-sentence implementation that
``fairseq_syntax/data/datasets/syntax_dataset.py`` and ``parent_strategies.py`` had
before collation was vectorised per batch: every sentence's
parents / depths / words / labels computed in ``__getitem__`` with numpy calls
per sentence, then padded row by row. The property tests compare the current
collater with it on many random batches: random trees (non-projective,
multi-subword words, one-word sentences), random lengths, every parent
strategy (also a different one on the target side), both target coordinate
systems, left and right padding on both sides, labels, random field subsets.
"""
import random

import numpy as np
import pytest
import torch
from fairseq.data import Dictionary, LanguagePairDataset

from fairseq_syntax.data.datasets.syntax_dataset import (SIDE_FIELDS, SideSyntax, SyntaxLanguagePairDataset, SyntaxRequest,
                                                collate_rows)
from fairseq_syntax.errors import SyntaxDataError
from helpers import TensorList


# ---------------------------------------------------------------------------------------------------------------
# reference: the per-sentence implementation as it was (copied, not imported)
# ---------------------------------------------------------------------------------------------------------------
def _ref_word_spans(word):
    n = len(word)
    change = np.empty(n, dtype=bool)
    change[0] = True
    np.not_equal(word[1:], word[:-1], out=change[1:])
    first = np.flatnonzero(change)
    last = np.empty_like(first)
    last[:-1] = first[1:] - 1
    last[-1] = n - 1
    return first, last


def _ref_subword_parents(word, head, strategy):
    word = np.asarray(word, dtype=np.int64)
    head = np.asarray(head, dtype=np.int64)
    first, last = _ref_word_spans(word)
    own = word - 1
    hw = np.where(head > 0, head - 1, own)
    if strategy == "chain":
        pos = np.arange(len(word), dtype=np.int64)
        is_last = np.zeros(len(word), dtype=bool)
        is_last[last] = True
        parent = pos + 1
        fin = is_last & (head > 0)
        parent[fin] = first[hw[fin]]
        root_fin = is_last & (head == 0)
        parent[root_fin] = pos[root_fin]
        return parent
    if strategy == "middle":
        mean = (first + last) / 2.0
        return mean[hw]
    if strategy == "first":
        return first[hw].astype(np.int64)
    raise ValueError(strategy)


def _ref_subword_depths(word, head):
    word = np.asarray(word, dtype=np.int64)
    head = np.asarray(head, dtype=np.int64)
    first, _ = _ref_word_spans(word)
    wh = head[first]
    depth = np.zeros(len(first), dtype=np.int64)
    cur = wh.copy()
    for _ in range(len(first)):
        up = cur > 0
        if not up.any():
            break
        depth += up
        cur = np.where(up, wh[np.maximum(cur - 1, 0)], 0)
    else:
        if (cur > 0).any():
            raise ValueError("heads contain a cycle")
    return depth[word - 1]


def _ref_side_item(side, index, fields, strategy, decoder_input):
    try:
        return _ref_side_arrays(side, index, fields, strategy, decoder_input)
    except (IndexError, ValueError) as e:
        raise SyntaxDataError(f"{side.name}, sentence {index}", f"malformed syntax data: {e}") from e


def _ref_side_arrays(side, index, fields, strategy, decoder_input):
    word = side.words[index].numpy().astype(np.int64)
    head = side.heads[index].numpy().astype(np.int64)
    n = len(word)
    if n and (word[0] != 1 or (np.diff(word) < 0).any() or (np.diff(word) > 1).any() or head.min() < 0
              or head.max() > word[-1]):
        raise ValueError(f"word indices must run 1..W in order and heads lie in 0..W (words {word.tolist()}, "
                         f"heads {head.tolist()})")
    out = {}
    shift = 1 if decoder_input else 0
    eos_pos = 0 if decoder_input else n
    if "parents" in fields:
        par = _ref_subword_parents(word, head, strategy) + shift
        out["parents"] = np.insert(par, eos_pos, eos_pos).astype(par.dtype)
    if "depths" in fields:
        out["depths"] = np.insert(_ref_subword_depths(word, head), eos_pos, 0)
    if "words" in fields:
        out["words"] = np.insert(word, eos_pos, 0)
    if "labels" in fields:
        lab = side.labels[index].numpy().astype(np.int64)
        out["labels"] = np.insert(lab, eos_pos, side.label_dict.eos())
    return out


def _ref_label_pad(side):
    return side.label_dict.pad() if side is not None and side.label_dict is not None else 1


def _ref_collate_side(rows, prefix, width, left_pad, fields, label_pad):
    out = {}
    bsz = len(rows)
    pad_value = {"parents": -1, "depths": 0, "labels": label_pad, "words": 0}
    for f in fields:
        key = prefix + f
        arrs = [r[key] for r in rows]
        is_float = arrs[0].dtype.kind == "f"
        pad = pad_value[f]
        buf = np.full((bsz, width), pad, dtype=np.float64 if is_float else np.int64)
        for b, a in enumerate(arrs):
            n = len(a)
            off = width - n if left_pad else 0
            if f == "parents":
                buf[b, off : off + n] = a + off
            else:
                buf[b, off : off + n] = a
        out[key] = torch.from_numpy(buf)
    return out


def _ref_supervised(tokens, dictionary, decoder_input):
    real = tokens.ne(dictionary.pad()) & tokens.ne(dictionary.eos())
    if not decoder_input:
        return real
    sup = torch.zeros_like(real)
    sup[:, 1:] = real[:, :-1]
    return sup


def _ref_collate(ds, indices):
    """The former ``SyntaxLanguagePairDataset.__getitem__`` + ``collater`` of the sentences ``indices``."""
    req, base = ds.request, ds.dataset
    samples = []
    for index in indices:
        item = base[index]
        syntax = {}
        dec = req.target_coordinates == "decoder_input"
        for side, prefix, decoder_input in (("source", "src_", False), ("target", "tgt_", dec)):
            fields = req.needs(side)
            syn = ds.src_syntax if side == "source" else ds.tgt_syntax
            if not fields or syn is None:
                continue
            for k, v in _ref_side_item(syn, index, fields, req.strategy_of(side), decoder_input).items():
                syntax[prefix + k] = v
        if syntax:
            item["syntax"] = syntax
        samples.append(item)
    batch = base.collater(samples)
    if not batch or "syntax" not in samples[0]:
        return batch
    by_id = {s["id"]: s["syntax"] for s in samples}
    order = batch["id"].tolist()
    out = {}
    if req.source and ds.src_syntax is not None:
        width = batch["net_input"]["src_tokens"].size(1)
        out.update(_ref_collate_side([by_id[i] for i in order], "src_", width, base.left_pad_source, req.source,
                                     _ref_label_pad(ds.src_syntax)))
        out["src_supervised"] = _ref_supervised(batch["net_input"]["src_tokens"], base.src_dict, False)
    if req.target and ds.tgt_syntax is not None and batch.get("target") is not None:
        width = batch["target"].size(1)
        out.update(_ref_collate_side([by_id[i] for i in order], "tgt_", width, base.left_pad_target, req.target,
                                     _ref_label_pad(ds.tgt_syntax)))
        out["tgt_supervised"] = _ref_supervised(batch["target"], base.tgt_dict,
                                                req.target_coordinates == "decoder_input")
    batch["syntax"] = out
    for name in req.inputs:
        if name in out:
            batch["net_input"][name] = out[name]
    return batch


def _ref_collate_rows(side, fields, strategy, width, left_pad, prefix="src_"):
    rows = []
    for i in range(len(side)):
        rows.append({prefix + k: v for k, v in _ref_side_item(side, i, fields, strategy, False).items()})
    return _ref_collate_side(rows, prefix, width, left_pad, fields, _ref_label_pad(side))


# ---------------------------------------------------------------------------------------------------------------
# random data
# ---------------------------------------------------------------------------------------------------------------
LABELS = ["nsubj", "obj", "det", "amod", "root", "case", "nmod", "advmod", "punct"]


def random_tree(rng, n_words):
    """1-based heads of a random (possibly non-projective) tree over n_words words, 0 = root."""
    order = list(range(1, n_words + 1))
    rng.shuffle(order)
    heads = [0] * (n_words + 1)
    for k, w in enumerate(order[1:], 1):
        heads[w] = order[rng.randrange(k)]
    if rng.random() < 0.5 and n_words > 1:  # also deep chains
        for k, w in enumerate(order[1:], 1):
            heads[w] = order[k - 1]
    return heads[1:]


def random_sentence(rng, max_words):
    n_words = rng.choice([1, 1, 2, 3]) if rng.random() < 0.15 else rng.randint(1, max_words)
    heads = random_tree(rng, n_words)
    word, head = [], []
    for w in range(1, n_words + 1):
        k = rng.choices([1, 2, 3, 4, 6], weights=[60, 22, 10, 5, 3])[0]
        word += [w] * k
        head += [heads[w - 1]] * k
    return word, head


def random_side(rng, n_sent, d, label_dict, name, max_words=25):
    words, heads, labels, toks = [], [], [], []
    for _ in range(n_sent):
        w, h = random_sentence(rng, max_words)
        words.append(w)
        heads.append(h)
        labels.append([label_dict.index(rng.choice(LABELS)) for _ in w])
        toks.append([rng.randrange(d.nspecial, len(d)) for _ in w] + [d.eos()])
    side = SideSyntax(TensorList(words), TensorList(heads), TensorList(labels), label_dict, name)
    return toks, side


def make_dictionaries():
    d = Dictionary()
    for i in range(60):
        d.add_symbol(f"tok{i}")
    ld = Dictionary()
    for x in LABELS:
        ld.add_symbol(x)
    return d, ld


def random_dataset(rng, n_sent=40, **kw):
    d, ld = make_dictionaries()
    s_toks, s_side = random_side(rng, n_sent, d, ld, "src")
    t_toks, t_side = random_side(rng, n_sent, d, ld, "tgt")
    with_target = kw.get("with_target", True)
    base = LanguagePairDataset(
        TensorList(s_toks), np.array([len(x) for x in s_toks]), d,
        TensorList(t_toks) if with_target else None,
        np.array([len(x) for x in t_toks]) if with_target else None, d if with_target else None,
        left_pad_source=kw.get("left_pad_source", True), left_pad_target=kw.get("left_pad_target", False),
    )
    fields = list(SIDE_FIELDS)
    src_fields = frozenset(kw.get("source", rng.sample(fields, rng.randint(0, 4))))
    tgt_fields = frozenset(kw.get("target", rng.sample(fields, rng.randint(0, 4))))
    inputs = frozenset("src_" + f for f in src_fields if rng.random() < 0.5)
    req = SyntaxRequest(strategy=kw.get("strategy", "chain"), source=src_fields, target=tgt_fields, inputs=inputs,
                        target_strategy=kw.get("target_strategy"),
                        target_coordinates=kw.get("target_coordinates", "target"))
    return SyntaxLanguagePairDataset(base, req, s_side, t_side if kw.get("target_syntax", True) else None)


def assert_same_batch(new, ref):
    assert set(new) == set(ref)
    for key in ref:
        a, b = new[key], ref[key]
        if isinstance(b, dict):
            assert_same_batch(a, b)
        elif torch.is_tensor(b):
            assert torch.is_tensor(a), key
            assert a.dtype == b.dtype and a.shape == b.shape, (key, a.dtype, b.dtype, a.shape, b.shape)
            assert torch.equal(a, b), key
        else:
            assert a == b, key


STRATEGIES = ["chain", "middle", "first"]


# ---------------------------------------------------------------------------------------------------------------
# property tests
# ---------------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("seed", range(12))
def test_vectorised_collation_equals_the_per_sentence_reference(seed):
    rng = random.Random(seed)
    for trial in range(8):
        kw = dict(
            strategy=rng.choice(STRATEGIES),
            target_strategy=rng.choice([None] + STRATEGIES),
            target_coordinates=rng.choice(["target", "decoder_input"]),
            left_pad_source=rng.random() < 0.7,
            left_pad_target=rng.random() < 0.3,
        )
        if trial == 0:  # every field on both sides at least once per seed
            kw.update(source=SIDE_FIELDS, target=SIDE_FIELDS)
        ds = random_dataset(rng, **kw)
        for _ in range(4):
            idx = rng.sample(range(len(ds)), rng.randint(1, len(ds)))
            new = ds.collater([ds[i] for i in idx])
            ref = _ref_collate(ds, idx)
            assert_same_batch(new, ref)


@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize("coordinates", ["target", "decoder_input"])
def test_every_field_and_padding_side(strategy, coordinates):
    rng = random.Random(hash((strategy, coordinates)) % 1000)
    for lps in (True, False):
        for lpt in (True, False):
            ds = random_dataset(rng, n_sent=60, strategy=strategy, target_coordinates=coordinates,
                                left_pad_source=lps, left_pad_target=lpt, source=SIDE_FIELDS, target=SIDE_FIELDS)
            idx = list(range(len(ds)))
            rng.shuffle(idx)
            assert_same_batch(ds.collater([ds[i] for i in idx]), _ref_collate(ds, idx))
            assert_same_batch(ds.collater([ds[idx[0]]]), _ref_collate(ds, idx[:1]))  # a batch of one


def test_without_target_or_target_syntax():
    rng = random.Random(7)
    for kw in (dict(with_target=False), dict(target_syntax=False)):
        ds = random_dataset(rng, source=SIDE_FIELDS, target=SIDE_FIELDS, **kw)
        idx = rng.sample(range(len(ds)), 17)
        assert_same_batch(ds.collater([ds[i] for i in idx]), _ref_collate(ds, idx))


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_collate_rows_equals_the_reference(strategy):
    rng = random.Random(3)
    d, ld = make_dictionaries()
    toks, side = random_side(rng, 23, d, ld, "input")
    width = max(len(t) for t in toks) + 2
    for left_pad in (True, False):
        for fields in (SIDE_FIELDS, ("parents",), ("depths", "labels")):
            new = collate_rows(side, fields, strategy, width, left_pad, prefix="src_")
            ref = _ref_collate_rows(side, fields, strategy, width, left_pad, prefix="src_")
            assert_same_batch(new, ref)


def test_reference_check_can_fail():
    """The comparison notices a single wrong entry (guards against comparing a tensor with itself)."""
    rng = random.Random(11)
    ds = random_dataset(rng, source=SIDE_FIELDS, target=SIDE_FIELDS)
    idx = list(range(10))
    new = ds.collater([ds[i] for i in idx])
    new["syntax"]["src_parents"][0, -1] += 1
    with pytest.raises(AssertionError):
        assert_same_batch(new, _ref_collate(ds, idx))


# ---------------------------------------------------------------------------------------------------------------
# malformed data still names the sentence
# ---------------------------------------------------------------------------------------------------------------
def test_a_cycle_names_the_sentence():
    rng = random.Random(5)
    ds = random_dataset(rng, source=("depths",), target=())
    bad = next(i for i in range(5, len(ds)) if int(ds.src_syntax.words.items[i][-1]) >= 2)
    w = ds.src_syntax.words.items[bad]
    # words 1 and 2 head each other: no path to the root
    heads = [2 if x == 1 else 1 if x == 2 else 1 for x in w.tolist()]
    ds.src_syntax.heads.items[bad] = torch.tensor(heads)
    with pytest.raises(SyntaxDataError, match=rf"src, sentence {bad}: malformed syntax data: heads contain a cycle"):
        ds.collater([ds[i] for i in (1, bad, 3)])


def test_out_of_range_heads_name_the_sentence_in_getitem():
    rng = random.Random(9)
    ds = random_dataset(rng, source=("parents",), target=("parents",))
    bad = 4
    ds.tgt_syntax.heads.items[bad] = ds.tgt_syntax.heads.items[bad] + 1000
    with pytest.raises(SyntaxDataError, match=rf"tgt, sentence {bad}: malformed syntax data: .*heads lie in 0..W"):
        ds[bad]
    ds.tgt_syntax.heads.items[bad] = ds.tgt_syntax.heads.items[bad] - 1000
    ds.tgt_syntax.words.items[bad] = ds.tgt_syntax.words.items[bad] + 1  # word indices start at 2
    with pytest.raises(SyntaxDataError, match=rf"tgt, sentence {bad}: malformed syntax data: word indices must run"):
        ds[bad]


# ---------------------------------------------------------------------------------------------------------------
# memory-mapped syntax datasets (what preprocess/binarize.py writes): read as zero-copy int32 views
# ---------------------------------------------------------------------------------------------------------------
def mmap_side(side, prefix):
    from fairseq.data.indexed_dataset import MMapIndexedDataset

    from fairseq_syntax.data.alignment.syntax_io import write_mmap

    out = {}
    for field in ("words", "heads", "labels"):
        items = getattr(side, field).items
        write_mmap(f"{prefix}.{field}", array_of(items), [len(x) for x in items])
        out[field] = MMapIndexedDataset(f"{prefix}.{field}")
    return SideSyntax(out["words"], out["heads"], out["labels"], side.label_dict, side.name)


def array_of(items):
    from array import array

    return array("i", [int(v) for x in items for v in x.tolist()])


@pytest.mark.parametrize("coordinates", ["target", "decoder_input"])
def test_memory_mapped_syntax_equals_the_reference(tmp_path, coordinates):
    rng = random.Random(21)
    for k, strategy in enumerate(STRATEGIES):
        ds = random_dataset(rng, n_sent=50, strategy=strategy, target_coordinates=coordinates, source=SIDE_FIELDS,
                            target=SIDE_FIELDS, left_pad_target=k == 1)
        ds.src_syntax = mmap_side(ds.src_syntax, str(tmp_path / f"{k}.src"))
        ds.tgt_syntax = mmap_side(ds.tgt_syntax, str(tmp_path / f"{k}.tgt"))
        ds[0]
        assert ds.src_syntax.read(0, True)[0].dtype == np.int32  # the zero-copy path, not fairseq's int64 copies
        for _ in range(3):
            idx = rng.sample(range(len(ds)), rng.randint(1, len(ds)))
            assert_same_batch(ds.collater([ds[i] for i in idx]), _ref_collate(ds, idx))
        width = max(len(ds.dataset.src[i]) for i in range(len(ds)))
        assert_same_batch(collate_rows(ds.src_syntax, SIDE_FIELDS, strategy, width, True),
                          _ref_collate_rows(ds.src_syntax, SIDE_FIELDS, strategy, width, True))


def test_memory_mapped_malformed_sentence_is_named(tmp_path):
    rng = random.Random(22)
    ds = random_dataset(rng, source=("parents",), target=())
    bad = 3
    ds.src_syntax.heads.items[bad] = torch.full_like(ds.src_syntax.heads.items[bad], -1)
    ds.src_syntax = mmap_side(ds.src_syntax, str(tmp_path / "src"))
    ds[bad - 1]
    with pytest.raises(SyntaxDataError, match=rf"src, sentence {bad}: malformed syntax data: .*heads lie in 0..W"):
        ds[bad]
