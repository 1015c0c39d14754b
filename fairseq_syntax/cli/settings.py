"""Print the recipes' training settings (the table in fairseq_syntax/settings): a dataset's models with
their fairseq-train options, batch, data variant, decoding and baselines.

    fairseq-syntax-settings                              # the recipes and their models' names
    fairseq-syntax-settings tanaka-ja-en                 # the models, one line each
    fairseq-syntax-settings tanaka-ja-en dep_rel --json  # one model's settings
    fairseq-syntax-settings tanaka-ja-en --bash          # the same as bash arrays, for a shell recipe
    fairseq-syntax-settings wmt14-en-de --gpus 4         # the per-GPU batch and --update-freq on 4 GPUs
    fairseq-syntax-settings --gpus 4 --batch-tokens 25000  # the same for a corpus of one's own: 25,000 per update
    fairseq-syntax-settings --markdown > docs/settings.md
"""
import argparse
import json
import re
import shlex
import sys
from dataclasses import asdict
from typing import Dict

from fairseq_syntax.cli import run
from fairseq_syntax.errors import OptionError
from fairseq_syntax.settings.datasets import DATASETS, SIZES, settings
from fairseq_syntax.settings.gpu_batch import split_batch
from fairseq_syntax.settings.model_settings import ModelSettings


def get_parser():
    p = argparse.ArgumentParser(prog="fairseq-syntax-settings", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("dataset", nargs="?", help="the dataset recipe; without one, the recipes and their "
                   f"models: {', '.join(sorted(DATASETS))}")
    p.add_argument("models", nargs="*", metavar="MODEL", help="only these models (default: all of the recipe's)")
    p.add_argument("--size", choices=SIZES, default="cpu",
                   help="cpu: the CPU table's 3+3 layers, d 128 (Multi30k, Tanaka); base: Transformer base, the "
                   "papers' size (the other recipes train at the paper's size either way) [cpu]")
    out = p.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_true", help="every field of each model, as JSON")
    out.add_argument("--bash", action="store_true",
                     help="bash assignments to the recipe's arrays (DATA, TRAIN, BATCH, TASK, DECODE, BASELINE, "
                     "ALSO_AGAINST, CHECKPOINT_OF), for a shell script of one's own")
    out.add_argument("--markdown", action="store_true",
                     help="the page docs/settings.md: every recipe's table (no DATASET)")
    out.add_argument("--gpus", type=int, metavar="N",
                     help="each model's per-GPU batch and --update-freq that make its batch per update on N GPUs "
                     "(docs/distributed.md)")
    p.add_argument("--max-tokens", type=int, default=4096, metavar="M",
                   help="with --gpus: the most tokens one GPU's batch may hold (the recipe's MAX_TOKENS) [4096]")
    p.add_argument("--batch-tokens", type=int, default=None, metavar="N",
                   help="with --gpus and no DATASET: the batch per update, in tokens, of a corpus of one's own (the "
                   "papers': 25,000 for Transformer base on WMT) split into --max-tokens and --update-freq")
    return p


def own_batch(tokens: int, gpus: int, max_tokens: int) -> str:
    """The fairseq-train options that make ``tokens`` per update on ``gpus`` GPUs, and what they give."""
    b = split_batch(f"tokens:{tokens}", gpus, max_tokens)
    return (f"# {tokens} tokens per update on {gpus} GPU{'s' * (gpus > 1)}, at most {max_tokens} tokens per GPU "
            f"batch\n{b.options}  # {b.describe()}")


def select(dataset: str, models, size: str) -> Dict[str, ModelSettings]:
    table = settings(dataset, size)
    unknown = [m for m in models if m not in table]
    if unknown:
        raise OptionError(f"recipe {dataset} has no model {', '.join(map(repr, unknown))}; its models: "
                          f"{' '.join(sorted(table))}")
    return {m: table[m] for m in (models or sorted(table))}


def bash(table: Dict[str, ModelSettings]) -> str:
    lines = []
    for m, s in table.items():
        if not re.fullmatch(r"[A-Za-z0-9_.-]+", m):  # a key of the recipe's arrays, written unquoted
            raise OptionError(f"model name {m!r}: letters, digits, '_', '.' and '-' only")
        q = shlex.quote
        line = (f"DATA[{m}]={q(s.data)} BATCH[{m}]={q(s.batch)} TASK[{m}]={q(s.task)} BASELINE[{m}]={q(s.baseline)} "
                f"TRAIN[{m}]={q(shlex.join(s.train))} DECODE[{m}]={q(shlex.join(s.decode))}")
        if s.also_against:
            line += f" ALSO_AGAINST[{m}]={q(' '.join(s.also_against))}"
        if s.checkpoint_of:
            line += f" CHECKPOINT_OF[{m}]={q(s.checkpoint_of)}"
        lines.append(line)
    return "\n".join(lines)


def listing(size: str) -> str:
    """Every recipe and its models' names, one recipe a line."""
    return "\n".join(f"{d}: {' '.join(sorted(settings(d, size)))}" for d in sorted(DATASETS))


def on_gpus(dataset: str, table: Dict[str, ModelSettings], gpus: int, max_tokens: int) -> str:
    """Each model's batch per update and the fairseq-train options that make it on ``gpus`` GPUs, in columns."""
    rows = []
    for m, s in table.items():
        b = split_batch(s.batch, gpus, max_tokens)
        rows.append((m, s.batch, b.options, b.describe()))
    head = f"# {dataset} on {gpus} GPU{'s' * (gpus > 1)}"
    if any(s.batch.startswith("tokens:") for s in table.values()):
        head += f", at most {max_tokens} tokens per GPU batch (train.sh: GPUS={gpus} MAX_TOKENS=its --max-tokens)"
    widths = [max(len(r[i]) for r in rows) for i in range(3)]
    return "\n".join([head] + ["  ".join(c.ljust(w) for c, w in zip(r, widths + [0])).rstrip() for r in rows])


def _code(words) -> str:
    return "`" + shlex.join(words).replace("|", "\\|") + "`"


def markdown() -> str:
    out = ["# Training settings", "",
           "Every model of every dataset recipe (`train.sh MODEL`) with the options it trains with. Generated "
           "from `fairseq_syntax/settings/` by `python tests/test_settings.py --write` (do not edit: the test "
           "checks it). "
           "`fairseq-syntax-settings DATASET MODEL --json` prints one entry, `fairseq-syntax-settings` alone the "
           "recipes and their models.", "",
           "The recipe adds the data-bin, `--task`, the language pair, `--save-dir` and the batch "
           "(`tokens:N` is `--max-tokens`, `sentences:N` `--batch-size`, split over GPUs with `--update-freq`: "
           "`fairseq-syntax-settings DATASET --gpus N` and [distributed.md](distributed.md)). "
           "`MODEL_seedN` is MODEL with `--seed N` against its baseline's seed N. A model with a checkpoint of "
           "another is that model decoded another way (nothing to train). Preparation (BPE, parsers, "
           "filters: the data variants) is in each dataset's `recipe.json`. The recipes with two sizes take "
           "`SIZE=cpu` (the default) or `SIZE=base`. A baseline's options are given in full; another model's as "
           "BASELINE + OPTIONS: the baseline's options, OPTIONS given another value or added (the last of a "
           "repeated option wins, as in fairseq), \"without\" those it drops.", ""]
    tables = [(dataset, size, settings(dataset, size)) for dataset in sorted(DATASETS) for size in SIZES
              if size == "cpu" or settings(dataset, "cpu") != settings(dataset, "base")]
    shown = []  # (title, table) rendered so far: a recipe whose models are some of those is named, not repeated
    for dataset, size, table in sorted(tables, key=lambda t: -len(t[2])):
        two = any(d == dataset and z != size for d, z, _ in tables)
        title = dataset + (f", size {size}" if two else "")
        same = next(((t, other) for t, other in shown if all(other.get(m) == s for m, s in table.items())), None)
        if same:
            missing = sorted(set(same[1]) - set(table))
            models = (f"its models but {', '.join(missing)}" if len(missing) < len(table) else
                      f"its models {', '.join(sorted(table))}")
            out += [f"## {title}", "", f"The settings of {same[0]}: {models}.", ""]
            continue
        cpu_title = f"{dataset}, size cpu"
        # another size of this recipe, or a recipe of the same models set a few options otherwise: shown as those
        like = [(t, other) for t, other in shown if t == cpu_title and size == "base"] or \
            [(t, other) for t, other in shown if set(other) == set(table)]
        rows = _size_changes(like[0][1], table) if like else None
        if rows is not None and (like[0][0] == cpu_title or len(rows) <= 2):
            out += [f"## {title}", "", f"The models of {like[0][0]}, each with its options there but those "
                    "below (set or added; dropped: the architecture's default), and its batch:", "",
                    "| models | options set | options dropped | batch |", "| --- | --- | --- | --- |"]
            out += [f"| {', '.join(models)} | {_code(changed) if changed else '-'} | "
                    f"{_code(dropped) if dropped else '-'} | {batch} |" for models, changed, dropped, batch in rows]
            out.append("")
            shown.append((title, table))
            continue
        shown.append((title, table))
        # the baselines' options in full, every other model's as the nearest baseline's with some changed
        references = [m for m, s in sorted(table.items()) if s.baseline == m and not (s.checkpoint_of or s.starts_from)]
        out += [f"## {title}", "", "| model | data | batch | fairseq-train options | decoding | against |",
                "| --- | --- | --- | --- | --- | --- |"]
        for m, s in sorted(table.items()):
            against = ", ".join((s.baseline,) + s.also_against) if s.baseline != m else "(baseline)"
            data = s.data + (f", checkpoint of {s.checkpoint_of}" if s.checkpoint_of else "")
            data += f", from {s.starts_from}'s best checkpoint" if s.starts_from else ""
            train = _code(s.train) if m in references else min(
                (_relative(s.train, table[r].train, r) for r in references), key=len, default=_code(s.train))
            task = "" if s.task == "syntax_translation" else f" (task {s.task})"
            out.append(f"| {m} | {data} | {s.batch} | {train}{task} | {_code(s.decode)} | {against} |")
        out.append("")
    return "\n".join(out)


def _size_changes(cpu: Dict[str, ModelSettings], base: Dict[str, ModelSettings]):
    """What turns each model of ``cpu`` into its ``base`` namesake, the models that change alike as one row:
    [(models, options set, options dropped, batch)]; None unless both have the same models alike in everything
    but their options and batch."""
    if set(cpu) != set(base):
        return None
    rows: Dict[tuple, list] = {}
    for m, s in sorted(cpu.items()):
        b = base[m]
        if (s.data, s.task, s.decode, s.baseline, s.also_against, s.checkpoint_of, s.starts_from) != \
                (b.data, b.task, b.decode, b.baseline, b.also_against, b.checkpoint_of, b.starts_from):
            return None
        own, other = _groups(s.train), _groups(b.train)
        changed = tuple(w for o, v in other.items() if own.get(o) != v for w in (o, *v))
        dropped = tuple(o for o in own if o not in other)
        rows.setdefault((changed, dropped, b.batch), []).append(m)
    return [(models, *key) for key, models in sorted(rows.items(), key=lambda kv: -len(kv[1]))]


def _groups(words) -> Dict[str, tuple]:
    """An option line as option -> its values, the last given winning (as fairseq's parser reads it)."""
    groups: Dict[str, tuple] = {}
    for w in words:
        if w.startswith("--"):
            groups.pop(w, None)
            groups[w] = ()
            last = w
        else:
            groups[last] += (w,)
    return groups


def _relative(train, reference_train, reference) -> str:
    """``train`` as the reference's options with some changed, added or dropped, where that is shorter."""
    own, ref = _groups(train), _groups(reference_train)
    changed = [w for o, v in own.items() if ref.get(o) != v for w in (o, *v)]
    dropped = [o for o in ref if o not in own]
    if len(changed) + len(dropped) >= len(train) // 2:
        return _code(train)
    if not changed and not dropped:
        return f"as {reference}"
    return reference + (f" + {_code(changed)}" if changed else "") + (f" without {_code(dropped)}" if dropped else "")


def main(argv=None):
    p = get_parser()
    args = p.parse_args(argv)
    if args.markdown:
        if args.dataset:
            p.error("--markdown writes every recipe's table: give no DATASET")
        sys.stdout.write(markdown())
        return
    if args.batch_tokens is not None:
        if args.dataset or args.gpus is None:
            p.error("--batch-tokens is the batch of a corpus of one's own: give it with --gpus N and no DATASET "
                    "(a recipe has its own batch)")
        print(own_batch(args.batch_tokens, args.gpus, args.max_tokens))
        return
    if not args.dataset:
        if args.bash or args.gpus is not None:
            p.error(f"--{'bash' if args.bash else 'gpus'} needs a DATASET: {', '.join(sorted(DATASETS))}"
                    + ("" if args.bash else " (or --batch-tokens N for a corpus of one's own)"))
        if args.json:
            print(json.dumps({d: sorted(settings(d, args.size)) for d in sorted(DATASETS)}, indent=1))
        else:
            print(listing(args.size))
        return
    table = select(args.dataset, args.models, args.size)
    if args.gpus is not None:
        print(on_gpus(args.dataset, table, args.gpus, args.max_tokens))
    elif args.bash:
        print(bash(table))
    elif args.json:
        print(json.dumps({m: asdict(s) for m, s in table.items()}, indent=1))
    else:
        for m, s in table.items():
            print(f"{m}\t--arch {s.arch}\t{s.data}\t{s.batch}\t" + (f"against {s.baseline}" if s.baseline != m else "(baseline)"))


def cli_main(argv=None):
    run(main, argv)


if __name__ == "__main__":
    cli_main()
