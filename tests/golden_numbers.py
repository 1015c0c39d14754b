"""What every preset computes on a fixed batch of real aligned data (tests/data/golden): the numbers a
refactoring must hold still.

For each case (a named architecture with its criterion, tiny sizes, seed 1), built through fairseq-train's
own option parsing with ``--user-dir`` and ``--task syntax_translation`` over the golden data-bin: the
logging outputs of the criterion (loss, NLL, parse and sync terms) over ``STEPS`` Adam steps on the whole
batch, and beam search (beam 3) on its first ``BEAM_SENTENCES`` sentences after ``BEAM_AFTER`` steps: tokens
and scores. Adam at this learning rate on one batch amplifies the rounding differences between CPUs, so the
test holds the first ``EXACT_STEPS`` steps and the beam to 1e-4 and the next steps, up to ``HELD_STEPS`` of the
``STEPS`` recorded, only loosely (docs/development.md, "Numbers held still").

    python tests/golden_numbers.py --record CASE...  # add or rewrite these cases' records only (a new case, or an
                                                     # intended change of these cases' numbers)
    python tests/golden_numbers.py --record          # rewrite every case (an intended change of every number only)
    python tests/golden_numbers.py [CASE...]         # print what the cases compute now

``--record CASE`` leaves every other case's record as it is, byte for byte, since some cases (the CKY ones)
round differently from CPU to CPU and re-recording them elsewhere would change their numbers for no reason.
"""
import argparse
import copy
import functools
import json
import os

from helpers import tiny_sizes

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GOLDEN = os.path.join(ROOT, "tests", "data", "golden")
RECORDS = os.path.join(GOLDEN, "records.json")
STEPS = 30
EXACT_STEPS = 5  # steps 0..4 held to 1e-4 on any CPU
HELD_STEPS = 12  # the steps the test compares (of the STEPS recorded): the later ones only to a quarter
BEAM_AFTER = 4  # beam search on the weights after this many Adam steps (the same on any CPU to about 1e-5)
BEAM_SENTENCES = 6
LR = 1e-2

TINY = tiny_sizes()  # the tiny presets' sizes: d 32, FFN 64, 4 heads
LS = ["--criterion", "label_smoothed_cross_entropy", "--label-smoothing", "0.1"]
DEP = ["--criterion", "label_smoothed_cross_entropy_with_dependency", "--label-smoothing", "0.1",
       "--dependency-lambda-enc", "1.0", "--dependency-lambda-dec", "1.0"]
SYNC = ["--criterion", "label_smoothed_cross_entropy_with_sync", "--label-smoothing", "0.1",
        "--dependency-lambda-enc", "0.5", "--dependency-lambda-dec", "0.5", "--sync-lambda", "0.5"]
LSTM = ["--criterion", "cross_entropy"]

#: case -> fairseq-train arguments (architecture, criterion, options); every preset once, and the options that
#: choose another code path (decoder rows, the materialised relative terms, the literal CKY deduction unit, ...)
CASES = {
    "syntax_transformer_tiny": ["--arch", "syntax_transformer_tiny", *LS],
    "transformer_dbsa_tiny": ["--arch", "transformer_dbsa_tiny", *DEP],
    "transformer_dbsa_tiny_input_rows": ["--arch", "transformer_dbsa_tiny", "--dbsa-decoder-rows", "input", *DEP],
    "transformer_dbsa_tiny_arcs_keybias": ["--arch", "transformer_dbsa_tiny", "--dbsa-bias", "key",
                                           "--dependency-normalization", "arcs", *DEP],
    "transformer_dbsa_enc": ["--arch", "transformer_dbsa_enc", *TINY, "--encoder-layers", "4", "--decoder-layers",
                             "2", *DEP],
    "transformer_dbsa_dec": ["--arch", "transformer_dbsa_dec", *TINY, "--encoder-layers", "2", "--decoder-layers",
                             "4", *DEP],
    "transformer_sisa_tiny": ["--arch", "transformer_sisa_tiny", *DEP],
    "transformer_rel_tiny": ["--arch", "transformer_rel_tiny", *LS],
    "transformer_dep_tiny": ["--arch", "transformer_dep_tiny", *LS],
    "transformer_dep_rel_tiny": ["--arch", "transformer_dep_rel_tiny", *LS],
    "transformer_dep_rel_tiny_materialised": ["--arch", "transformer_dep_rel_tiny", "--rel-implementation",
                                              "materialised", *LS],
    "transformer_dep_tiny_noabs_key": ["--arch", "transformer_dep_tiny", "--rel-no-absolute-positions",
                                       "--rel-dep-terms", "key", "--rel-encoder-layers", "1", *LS],
    "transformer_pascal_tiny": ["--arch", "transformer_pascal_tiny", "--pascal-ignore-prob", "0.4", *LS],
    "transformer_pascal_tiny_parent_only": ["--arch", "transformer_pascal_tiny", "--pascal-weights", "parent-only",
                                            *LS],
    "transformer_sh_tiny": ["--arch", "transformer_sh_tiny", *LS],
    "transformer_syncattn_tiny": ["--arch", "transformer_syncattn_tiny", *SYNC],
    "transformer_pascal_dbsa_dec_sync": ["--arch", "syntax_transformer_tiny", "--pascal-layer", "1",
                                         "--pascal-heads", "2", "--dbsa-decoder-layer", "2", *DEP],
    "lstm_luong_tiny": ["--arch", "lstm_luong_tiny", *LSTM],
    "cky_lstm_tiny": ["--arch", "cky_lstm_tiny", *LSTM],
    "cky_lstm_tiny_literal_du": ["--arch", "cky_lstm_tiny", "--cky-norm", "none", *LSTM],
}


#: the cases marked slow (pytest -m "not slow" leaves them out): CKY's cells cost 10 s over the 30 steps
#: the cases of the quick tier: every mechanism once (DBSA both sides, dependency + relative positions, PASCAL,
#: SyncAttn, PASCAL + decoder DBSA composed, the LSTM); the others and CKY (slow on a CPU) in the full suite
QUICK_CASES = ("transformer_dbsa_tiny", "transformer_dep_rel_tiny", "transformer_pascal_tiny",
               "transformer_syncattn_tiny", "transformer_pascal_dbsa_dec_sync", "lstm_luong_tiny")


def case_params():
    """The cases as pytest parameters, those outside QUICK_CASES marked slow."""
    from helpers import quick_subset

    return quick_subset(sorted(CASES), QUICK_CASES)


@functools.lru_cache(maxsize=None)
def _config(case):
    """The case's fairseq config, parsed as fairseq-train parses its command line (hydra's compose: nine tenths
    of a build's time), once per process; :func:`build` takes a copy."""
    from fairseq import options
    from fairseq.dataclass.utils import convert_namespace_to_omegaconf

    import fairseq_syntax.plugin  # noqa: F401  (run as a script: the package is imported before fairseq reads
    # --user-dir, which then skips its tasks; docs/design.md, "Registration")

    argv = [os.path.join(GOLDEN, "data-bin"), "--user-dir", os.path.join(ROOT, "fairseq_syntax"),
            "--task", "syntax_translation", "--source-lang", "en", "--target-lang", "de",
            "--share-all-embeddings", "--seed", "1", "--cpu", "--optimizer", "adam", "--lr", str(LR),
            *CASES[case]]
    if "lstm" in CASES[case][1]:  # the LSTMs have no shared-embedding option
        argv.remove("--share-all-embeddings")
    return convert_namespace_to_omegaconf(options.parse_args_and_arch(options.get_training_parser(), argv))


def build(case):
    """(task, model, criterion, the golden batch) of a case, as fairseq-train builds them."""
    import torch
    from fairseq import tasks

    cfg = copy.deepcopy(_config(case))
    torch.manual_seed(1)
    task = tasks.setup_task(cfg.task)
    model = task.build_model(cfg.model)
    criterion = task.build_criterion(cfg.criterion)
    task.load_dataset("train")
    ds = task.dataset("train")
    batch = ds.collater([ds[i] for i in range(len(ds))])
    return task, model, criterion, batch


def compute(case, n_steps=STEPS):
    """The case's numbers: logging outputs of ``n_steps`` training steps, then beam search outputs."""
    import torch
    from fairseq.sequence_generator import SequenceGenerator

    task, model, criterion, batch = build(case)
    torch.manual_seed(1)
    opt = torch.optim.Adam(model.parameters(), lr=LR)
    def beam_search():
        model.eval()
        ids = list(range(BEAM_SENTENCES))
        ds = task.dataset("train")
        sample = ds.collater([ds[i] for i in ids])
        gen = SequenceGenerator([model], task.target_dictionary, beam_size=3, max_len_b=30)
        with torch.no_grad():
            hyps = task.inference_step(gen, [model], sample)
        model.train()
        by_id = {sid: [{"tokens": h["tokens"].tolist(), "score": float(h["score"])} for h in hyps[b]]
                 for b, sid in enumerate(sample["id"].tolist())}
        return [by_id[i] for i in ids]

    steps, beam = [], None
    model.train()
    for k in range(n_steps):
        if k == BEAM_AFTER:
            beam = beam_search()
        loss, sample_size, log = criterion(model, batch)
        (loss / sample_size).backward()
        opt.step()
        opt.zero_grad()
        steps.append({k: float(v) for k, v in sorted(log.items()) if k not in ("ntokens", "nsentences",
                                                                                "sample_size")})
    return {"steps": steps, "beam": beam}


def record(cases, path=RECORDS, compute=compute):
    """Write the numbers of ``cases`` (every case of CASES when empty) to ``path``; with named cases, the other
    cases' records are kept as they are. Returns the cases written."""
    unknown = sorted(set(cases) - set(CASES))
    if unknown:
        raise SystemExit(f"{path}: no case {', '.join(unknown)} in CASES of tests/golden_numbers.py: add it there "
                         "first")
    protocol = {"steps": STEPS, "beam_after": BEAM_AFTER, "lr": LR}
    kept = {}
    if cases and os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            held = json.load(f)
        if {k: held.get(k) for k in protocol} != protocol:
            raise SystemExit(f"{path}: recorded with {({k: held.get(k) for k in protocol})}, the cases now run "
                             f"{protocol}: record every case (--record with no case names)")
        kept = {c: v for c, v in held["cases"].items() if c in CASES and c not in cases}
    written = list(cases) or list(CASES)
    out = {**kept, **{case: compute(case) for case in written}}
    tmp = f"{path}.tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump({**protocol, "cases": out}, f, indent=1, sort_keys=True)
        f.write("\n")
    os.replace(tmp, path)
    return written


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("cases", nargs="*", help="cases to compute (default: all)")
    p.add_argument("--record", action="store_true",
                   help=f"write the numbers of the named cases (default: every case) to {RECORDS}, keeping the "
                   "other cases' records")
    args = p.parse_args(argv)
    if args.record:
        written = record(args.cases)
        print(f"recorded {len(written)} case(s) -> {RECORDS}: {' '.join(written)}")
        return
    for case in args.cases or list(CASES):
        numbers = compute(case)
        last = numbers["steps"][-1]
        print(case, {k: round(v, 4) for k, v in last.items()}, numbers["beam"][0][0]["tokens"][:8])


if __name__ == "__main__":
    main()
