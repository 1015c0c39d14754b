#!/usr/bin/env python
"""Collation cost: milliseconds per batch of the syntax_translation task's data pipeline, on CPU.

What fairseq's data loader does for every batch, timed end to end: read each
sentence (``dataset[i]``) and collate the batch (``dataset.collater``), at
the papers' batch sizes (``--max-tokens 4096`` and ``--batch-size 224``),
for the syntax fields of each model family:

* ``DBSA``    chain parents of source and target (supervision of the parse heads)
* ``PASCAL``  middle parents of the source (model input)
* ``dep``     dependency depths of the source (Omote et al.; model input)
* ``S&H``     dependency labels of the source (Sennrich & Haddow; model input)

beside references on the same batches: ``tokens`` (fairseq's own
LanguagePairDataset, tokens only: what every collater paid before the task
built its token batches itself), ``task tokens`` (the task's collater with no
syntax fields: ``fairseq_syntax/data/datasets/token_collation.py``) and
``DBSA authors`` (a re-implementation, for timing only, of the per-batch work
of the authors' DBSA plugin, de9uch1/dbsa ``LanguagePairDatasetWithDependency``:
its ``__getitem__`` adds one memory-mapped item of (position, parent) pairs
per side; its collater, after fairseq's token collation, offsets every
sample's pairs by ``row * width`` (+ the left-pad offset), checks them against
the sentence length and concatenates them; target arcs to later positions are
dropped). Its pairs are our chain parents, binarized once like the authors'
``.dep`` files. Implementations take turns batch by batch so that drift of a
busy machine hits all of them alike; every pass over the batches gives a mean
per batch, and the best pass (``--repeats``) is reported.

Data: ``--data DIR`` (a data-bin with source and target syntax), or by
default both of: UD English EWT train (``$FAIRSEQ_SYNTAX_SHARED/data``; gold trees, BPE
through ``preprocess/prepare.py``, the treebank on both sides: real sentence
lengths and trees) and the synthetic corpus (``preprocess/synth.py``), built
once under ``--workdir``.

    OMP_NUM_THREADS=1 taskset -c 1 python examples/benchmark/collation.py --json collation.json
"""
import argparse
import gc
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, ROOT)

SHARED = os.environ.get("FAIRSEQ_SYNTAX_SHARED", os.path.join(os.path.dirname(ROOT), "shared"))
EWT_TRAIN = os.path.join(SHARED, "data", "UD_English-EWT", "en_ewt-ud-train.conllu")
#: the papers' batch sizes: (label, max_tokens, max_sentences)
SETTINGS = (("4096 tokens", 4096, None), ("224 sentences", None, 224))
#: model family -> what its models ask the task to collate
FAMILIES = {
    "DBSA": dict(strategy="chain", source={"parents"}, target={"parents"}),
    "PASCAL": dict(strategy="middle", source={"parents"}, inputs={"src_parents"}),
    "dep": dict(strategy="chain", source={"depths"}, inputs={"src_depths"}),
    "S&H": dict(strategy="chain", source={"labels"}, inputs={"src_labels"}),
}
COLUMNS = ["tokens", "DBSA authors", "task tokens", "DBSA", "PASCAL", "dep", "S&H"]


# ---------------------------------------------------------------------------------------------------------------
# data
# ---------------------------------------------------------------------------------------------------------------
def ewt_data_bin(workdir):
    """UD English EWT train as a data-bin with gold syntax on both sides (None without the shared data)."""
    data = os.path.join(workdir, "ewt-data-bin")
    if os.path.exists(os.path.join(data, "train.src-tgt.tgt.heads.idx")):
        return data
    if not os.path.exists(EWT_TRAIN):
        return None
    raw = os.path.join(workdir, "ewt-raw")
    os.makedirs(raw, exist_ok=True)
    for lang in ("src", "tgt"):
        shutil.copyfile(EWT_TRAIN, os.path.join(raw, f"train.{lang}.conllu"))
    subprocess.run([sys.executable, os.path.join(ROOT, "preprocess", "prepare.py"), "-s", "src", "-t", "tgt",
                    "--trainpref", os.path.join(raw, "train"), "--destdir", data, "--no-progress"],
                   check=True, stdout=subprocess.DEVNULL)
    return data


def synthetic_data_bin(workdir, train):
    sys.path.insert(0, HERE)
    import suite

    return suite.synthetic_data_bin(workdir, train)


def load_dataset(data, split="train"):
    from omegaconf import OmegaConf

    from fairseq_syntax.tasks.syntax_translation import SyntaxTranslationConfig, SyntaxTranslationTask

    cfg = OmegaConf.structured(SyntaxTranslationConfig(data=data, source_syntax="parents,depths,labels",
                                                       target_syntax="parents"))
    cfg.train_subset, cfg.dataset_impl, cfg.required_seq_len_multiple = split, "mmap", 1
    task = SyntaxTranslationTask.setup_task(cfg)
    task.load_dataset(split)
    return task.dataset(split)


# ---------------------------------------------------------------------------------------------------------------
# the authors' DBSA collation, re-implemented for timing (see the module docstring)
# ---------------------------------------------------------------------------------------------------------------
def write_dbsa_pairs(side, path):
    """(position, chain parent) pairs of every sentence of ``side``, as a memory-mapped fairseq dataset."""
    from fairseq.data.indexed_dataset import MMapIndexedDataset, MMapIndexedDatasetBuilder

    from fairseq_syntax.data.alignment.parent_strategies import subword_parents

    builder = MMapIndexedDatasetBuilder(path + ".bin", dtype=np.int32)
    for i in range(len(side)):
        word, head, _ = side.read(i, False)
        n = len(word)
        pairs = np.stack([np.arange(n), subword_parents(word, head, "chain")], axis=1).reshape(-1)
        builder.add_item(torch.from_numpy(pairs.astype(np.int32)))
    builder.finalize(path + ".idx")
    return MMapIndexedDataset(path)


class DBSAAuthorsDataset(torch.utils.data.Dataset):
    """The authors' LanguagePairDatasetWithDependency: fairseq's dataset + (i, parent) pairs per side."""

    def __init__(self, base, src_dep, tgt_dep):
        self.base, self.src_dep, self.tgt_dep = base, src_dep, tgt_dep

    def __getitem__(self, index):
        example = self.base[index]
        example["src_dep"] = self.src_dep[index]
        example["tgt_dep"] = self.tgt_dep[index]
        return example

    def collater(self, samples):
        batch = self.base.collater(samples)  # the authors' collate() is fairseq's, plus the part below
        pos = {s["id"]: k for k, s in enumerate(samples)}
        sort_order = [pos[i] for i in batch["id"].tolist()]
        src_lengths = batch["net_input"]["src_lengths"]
        tgt_lengths = batch["target"].ne(self.base.tgt_dict.pad()).long().sum(1)

        def check_dependency(dependency, seq_len):
            if dependency is None or len(dependency) == 0:
                return False
            if dependency[:, 0].max().item() >= seq_len - 1 or dependency[:, 1].max().item() >= seq_len - 1:
                return False
            return True

        bsz, src_sz = batch["net_input"]["src_tokens"].shape
        offsets = torch.zeros((bsz, 2), dtype=torch.long)
        offsets[:, 0] += torch.arange(bsz, dtype=torch.long) * src_sz
        if self.base.left_pad_source:
            offsets += (src_sz - src_lengths)[:, None]
        source_dependency = [
            dependency + offset
            for dep_idx, offset, src_len in zip(sort_order, offsets, src_lengths)
            for dependency in [samples[dep_idx]["src_dep"].view(-1, 2)]
            if check_dependency(dependency, src_len)
        ]
        if source_dependency:
            batch["src_dep"] = torch.cat(source_dependency, dim=0)
        bsz, tgt_sz = batch["target"].shape
        offsets = torch.zeros((bsz, 2), dtype=torch.long)
        offsets[:, 0] += torch.arange(bsz, dtype=torch.long) * tgt_sz
        if self.base.left_pad_target:
            offsets += (tgt_sz - tgt_lengths)[:, None]
        target_dependency = [
            dependency[dependency[:, 0] >= dependency[:, 1], :] + offset
            for dep_idx, offset, tgt_len in zip(sort_order, offsets, tgt_lengths)
            for dependency in [samples[dep_idx]["tgt_dep"].view(-1, 2)]
            if check_dependency(dependency, tgt_len)
        ]
        if target_dependency:
            batch["tgt_dep"] = torch.cat(target_dependency, dim=0)
        return batch


# ---------------------------------------------------------------------------------------------------------------
# timing
# ---------------------------------------------------------------------------------------------------------------
def implementations(ds, dbsa_dir):
    from fairseq_syntax.data.datasets.syntax_dataset import SyntaxLanguagePairDataset, SyntaxRequest

    impls = {"tokens": ds.dataset}
    src_dep = write_dbsa_pairs(ds.src_syntax, os.path.join(dbsa_dir, "train.src.dep"))
    tgt_dep = write_dbsa_pairs(ds.tgt_syntax, os.path.join(dbsa_dir, "train.tgt.dep"))
    impls["DBSA authors"] = DBSAAuthorsDataset(ds.dataset, src_dep, tgt_dep)
    impls["task tokens"] = SyntaxLanguagePairDataset(ds.dataset, SyntaxRequest(), ds.src_syntax, ds.tgt_syntax)
    for name, need in FAMILIES.items():
        req = SyntaxRequest(strategy=need["strategy"], source=frozenset(need.get("source", ())),
                            target=frozenset(need.get("target", ())), inputs=frozenset(need.get("inputs", ())))
        impls[name] = SyntaxLanguagePairDataset(ds.dataset, req, ds.src_syntax, ds.tgt_syntax)
    return impls


def time_batches(impls, batches, repeats):
    """Best (over passes) mean seconds per batch of ``collater([ds[i] for i in batch])``, per implementation."""
    names = list(impls)
    best = {n: float("inf") for n in names}
    for r in range(repeats):
        total = {n: 0.0 for n in names}
        gc.collect()
        for k, batch in enumerate(batches):
            turn = names[k % len(names):] + names[: k % len(names)]  # rotate who goes first
            for n in turn:
                ds = impls[n]
                t0 = time.perf_counter()
                ds.collater([ds[i] for i in batch])
                total[n] += time.perf_counter() - t0
        for n in names:
            best[n] = min(best[n], total[n] / len(batches))
    return best


def measure(data, label="", repeats=3, max_batches=0, settings=SETTINGS):
    """Rows of ms per batch for one data-bin (train split), one row per batch setting."""
    ds = load_dataset(data)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        impls = implementations(ds, tmp)
        order = ds.ordered_indices()
        for setting, max_tokens, max_sentences in settings:
            batches = [[int(i) for i in b] for b in ds.batch_by_size(
                order, max_tokens=max_tokens, max_sentences=max_sentences, required_batch_size_multiple=8)]
            if max_batches:
                rng = np.random.RandomState(1)
                batches = [batches[i] for i in sorted(rng.permutation(len(batches))[:max_batches])]
            secs = time_batches(impls, batches, repeats)
            n_sent = sum(len(b) for b in batches)
            n_src = sum(int(ds.dataset.src_sizes[i]) for b in batches for i in b)
            rows.append({
                "data": label or data, "batches": setting, "n_batches": len(batches),
                "sentences_per_batch": round(n_sent / len(batches), 1),
                "source_tokens_per_batch": round(n_src / len(batches)),
                "source_tokens_per_sentence": round(n_src / n_sent, 1),
                "ms_per_batch": {n: round(1000 * s, 2) for n, s in secs.items()},
            })
    return rows


def format_rows(rows):
    head = f"{'data':<22} {'batches':<14} {'n':>4} {'sent/b':>7} {'tok/sent':>8} " + " ".join(
        f"{c:>12}" for c in COLUMNS)
    lines = [head, "-" * len(head)]
    for r in rows:
        ms = r["ms_per_batch"]
        lines.append(f"{r['data']:<22} {r['batches']:<14} {r['n_batches']:>4} {r['sentences_per_batch']:>7} "
                     f"{r['source_tokens_per_sentence']:>8} " + " ".join(f"{ms[c]:>12.2f}" for c in COLUMNS))
    return "\n".join(lines)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", default=None, help="a data-bin with source and target syntax (default: EWT and synthetic)")
    p.add_argument("--workdir", default=os.path.join(ROOT, "work", "benchmark"), help="for the data-bins built")
    p.add_argument("--synthetic-train", type=int, default=5000, help="synthetic training pairs (default 5000)")
    p.add_argument("--repeats", type=int, default=3, help="passes over the batches; the best is reported (default 3)")
    p.add_argument("--max-batches", type=int, default=0, help="time this many batches per setting (default: all)")
    p.add_argument("--json", default=None, help="also write the rows here")
    args = p.parse_args(argv)
    torch.set_num_threads(1)
    if args.data:
        sets = [(os.path.basename(os.path.normpath(args.data)), args.data)]
    else:
        sets = []
        ewt = ewt_data_bin(args.workdir)
        if ewt is None:
            print(f"UD English EWT not found ({EWT_TRAIN}): synthetic corpus only", file=sys.stderr)
        else:
            sets.append(("UD English EWT train", ewt))
        sets.append(("synthetic", synthetic_data_bin(args.workdir, args.synthetic_train)))
    rows = []
    for label, data in sets:
        rows += measure(data, label, args.repeats, args.max_batches)
    print(f"ms per batch (read every sentence + collate), best of {args.repeats} passes; "
          f"'DBSA authors' is a re-implementation of the authors' collation, for timing")
    print(format_rows(rows))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    return rows


if __name__ == "__main__":
    main()
