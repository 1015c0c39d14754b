"""Hydra configs of the named architectures, for ``fairseq-hydra-train``, generated from the preset table
(:mod:`fairseq_syntax.models.presets`: the model) and the table of training settings
(:mod:`fairseq_syntax.settings`: the paper's training settings of the preset's recipe, at Transformer base).

    python examples/recipes/hydra_configs.py            # (re)write fairseq_syntax/config/*.yaml
    python examples/recipes/hydra_configs.py --check    # exit 1 (and show the differences) if out of date

It is a developer's tool, kept in ``examples/`` (the package itself never runs ``examples/``); its output, the YAML
files, ships in the package.

One ``<arch>.yaml`` per named architecture of the table:

* ``model``: ``_name`` = the architecture and every option it resolves to, so that any of them can be
  overridden on the command line (``model.dropout=0.3``), except the mechanisms' options at their defaults
  (``+model.rel_dep_l=8`` adds one: an option off by default rewrites no config), and so that the dataclass model ``attention_lstm``
  gets its preset's values (fairseq fills a dataclass model's config with the dataclass defaults before the
  architecture function runs); the recipe's model options (dropout, shared embeddings, the paper's per-corpus
  values) come first, except those a ``_tiny`` variant sets itself;
* ``task``: ``syntax_translation`` with the syntax fields the model asks for (``translation`` where the
  recipe trains with it, the LSTMs), plus the recipe's task options; ``task.data`` is mandatory (``???``);
* ``criterion``, ``optimizer``, ``lr_scheduler``: the recipe's, with every value; ``optimization``,
  ``dataset``, ``checkpoint``: what the recipe's ``fairseq-train`` options set, as fairseq's own parser reads
  them (its batch: ``tokens:N`` -> ``dataset.max_tokens``, ``sentences:N`` -> ``dataset.batch_size``, one GPU).
"""
import argparse
import difflib
import os
import sys
from argparse import Namespace
from typing import Dict, List, Tuple

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PACKAGE = os.path.join(ROOT, "fairseq_syntax")
DEFAULT_DIR = os.path.join(PACKAGE, "config")
SECTIONS = ("criterion", "optimizer", "lr_scheduler", "optimization", "dataset", "checkpoint")


def recipe_command(recipe: str) -> Tuple[List[str], str, str]:
    """(fairseq-train options, batch, task) of ``DATASET:MODEL`` at the papers' size (the table of training
    settings, :mod:`fairseq_syntax.settings`)."""
    from fairseq_syntax.settings.datasets import entry

    settings = entry(recipe, "base")
    return list(settings.train), settings.batch, settings.task


def _parse(argv: List[str]) -> dict:
    """fairseq-train's configuration of a command line (OmegaConf container)."""
    from fairseq import options
    from fairseq.dataclass.utils import convert_namespace_to_omegaconf
    from omegaconf import OmegaConf

    parser = options.get_training_parser()
    args = options.parse_args_and_arch(parser, ["DATA", "--user-dir", PACKAGE, *argv])
    return OmegaConf.to_container(convert_namespace_to_omegaconf(args), resolve=False)


def _changed(full, base) -> dict:
    """The entries of ``full`` that ``base`` does not have with the same value (a legacy model's config is a
    Namespace)."""
    full, base = (vars(x) if isinstance(x, Namespace) else (x or {}) for x in (full, base))
    return {k: v for k, v in full.items() if base.get(k, object()) != v and not k.startswith("_")}


def recipe_settings(recipe: str, arch: str) -> Dict[str, dict]:
    """The sections the recipe's command sets (what differs from fairseq's defaults for the same task and
    architecture), with the criterion's, optimizer's and scheduler's ``_name``."""
    train, batch, task = recipe_command(recipe)
    kind, n = batch.split(":")
    batch_opts = ["--max-tokens", n] if kind == "tokens" else ["--batch-size", n]
    given_arch = train.index("--arch")
    train = train[:given_arch] + ["--arch", arch] + train[given_arch + 2:]
    full = _parse(["--task", task, *train, *batch_opts])
    named = [x for section, option in (("criterion", "--criterion"), ("optimizer", "--optimizer"),
                                       ("lr_scheduler", "--lr-scheduler")) if full[section] is not None
             for x in (option, full[section]["_name"])]
    base = _parse(["--task", task, "--arch", arch, *named])  # fairseq's defaults of the same components
    out = {"task": {"_name": task, **_changed(full["task"], base["task"])},
           "model": {k: v for k, v in _changed(full["model"], base["model"]).items() if k in model_options(arch)}}
    for section in SECTIONS:
        if section in ("criterion", "optimizer", "lr_scheduler"):  # every value of the component, explicit,
            linked = _interpolated(section, full[section]["_name"]) if full[section] else set()
            out[section] = {k: v for k, v in (full[section] or {}).items() if k not in linked}  # but lr & co.
        else:
            out[section] = _changed(full[section], base[section])
    return out


def _interpolated(section: str, name: str) -> set:
    """The fields of a registered component that fairseq takes from another section (``lr`` from
    ``optimization.lr``, ``sentence_avg``, ``tpu``, ...): not repeated in the component's section."""
    from fairseq.criterions import CRITERION_DATACLASS_REGISTRY
    from fairseq.optim import OPTIMIZER_DATACLASS_REGISTRY
    from fairseq.optim.lr_scheduler import LR_SCHEDULER_DATACLASS_REGISTRY

    registry = {"criterion": CRITERION_DATACLASS_REGISTRY, "optimizer": OPTIMIZER_DATACLASS_REGISTRY,
                "lr_scheduler": LR_SCHEDULER_DATACLASS_REGISTRY}[section]
    dc = registry.get(name)
    if dc is None:
        return set()
    return {f.name for f in dc.__dataclass_fields__.values() if isinstance(f.default, str) and f.default.startswith("${")}


def model_options(arch: str) -> set:
    """The option names of an architecture's model (its add_args, or its dataclass's fields)."""
    from fairseq.models import ARCH_MODEL_REGISTRY

    model = ARCH_MODEL_REGISTRY[arch]
    dc = getattr(model, "__dataclass", None)
    if dc is not None:
        return {f for f in dc.__dataclass_fields__ if not f.startswith("_")}
    parser = argparse.ArgumentParser(add_help=False)
    model.add_args(parser)
    return {a.dest for a in parser._actions}


def syntax_fields(options: dict) -> Dict[str, str]:
    """The task's syntax options for a syntax_transformer configuration: what its model asks the task to
    collate."""
    from fairseq.data import Dictionary

    from fairseq_syntax.models.syntax_transformer import SyntaxTransformerModel

    d = Dictionary()
    for i in range(8):
        d.add_symbol(f"w{i}")
    args = Namespace(**options)
    for side in ("encoder", "decoder"):  # the needs depend on the syntax options only: build it small
        setattr(args, f"{side}_embed_dim", 8 * args.__dict__[f"{side}_attention_heads"] + 8)
        setattr(args, f"{side}_ffn_embed_dim", 8)
    task = Namespace(source_dictionary=d, target_dictionary=d, src_label_dict=d)
    needs = SyntaxTransformerModel.build_model(args, task).syntax_needs()
    return {"source_syntax": ",".join(sorted(needs.source)) or "none",
            "target_syntax": ",".join(sorted(needs.target)) or "none"}


def own_defaults() -> dict:
    """The defaults of the options the plugin's mechanisms add to fairseq's transformer (SyntaxTransformerConfig)."""
    from fairseq_syntax.models.syntax_transformer_config import SyntaxTransformerConfig

    return {f.name: (f.default.value if hasattr(f.default, "value") else f.default)
            for f in SyntaxTransformerConfig.__dataclass_fields__.values() if not f.name.startswith("_")}


#: model -> the preset whose recipe's training settings a preset without a recipe of its own (an extension,
#: ``recipe=None``) takes
BASELINES = {"syntax_transformer": "syntax_transformer", "attention_lstm": "lstm_luong"}


def training_recipe(preset) -> str:
    """The entry of the table of training settings a preset's config carries: its own recipe, or its model's
    baseline's (``--arch`` replaced by the preset's, as for every recipe)."""
    from fairseq_syntax.models.presets import PRESETS

    return preset.recipe or PRESETS[BASELINES[preset.model]].recipe


def config(arch: str) -> Tuple[str, dict]:
    """(header comment, config) of one named architecture."""
    import fairseq_syntax.plugin  # noqa: F401  (the models, tasks and criterions the recipe's options name)
    from fairseq_syntax.models.presets import PRESETS, TINY, preset_of, resolve

    name, tiny = arch[: -len("_tiny")] if arch.endswith("_tiny") else arch, arch.endswith("_tiny")
    preset = PRESETS[name]
    recipe = training_recipe(preset)
    settings = recipe_settings(recipe, arch)
    given = settings.pop("model")
    if tiny:  # the tiny variant's own values win over the paper's
        given = {k: v for k, v in given.items() if k not in {**preset.tiny, **TINY[preset.model]}}
    args = Namespace(**given)
    resolve(args, name, tiny)
    assert preset_of(arch) == (preset, tiny)
    options = {k: v for k, v in sorted(vars(args).items()) if not k.startswith("_")}
    # the mechanisms' options at their defaults are left out (the architecture gives them): a new option off by
    # default changes no config
    if preset.model == "syntax_transformer":
        defaults = own_defaults()
        options = {k: v for k, v in options.items() if defaults.get(k, object()) != v}
    task = settings.pop("task")
    if task["_name"] == "syntax_translation":
        task = {**task, **syntax_fields(options), "parent_strategy": "auto"}
    cfg = {
        "hydra": {"run": {"dir": "."}},  # as fairseq's own config: no output folder, paths relative to the cwd
        "common": {"user_dir": "fairseq_syntax", "log_format": "simple", "log_interval": 100},
        "task": {"_name": task.pop("_name"), "data": "???", **task},
        "model": {"_name": arch, **options},
        **{section: settings[section] for section in SECTIONS if settings[section]},
    }
    borrowed = "" if preset.recipe else ", its model's baseline (no recipe trains it)"
    header = (f"# {arch}: fairseq-hydra-train config of the named architecture (--arch {arch}; {preset.paper}).\n"
              f"# Written by `python examples/recipes/hydra_configs.py` from the preset table (fairseq_syntax/models/"
              f"presets.py)\n# and the training settings of recipe {recipe.replace(':', ' model ')}{borrowed} (fairseq_syntax/settings): "
              f"do not edit, regenerate.\n"
              "# Give task.data=DATA-BIN; common.user_dir=fairseq_syntax resolves from the checkout's root, else\n"
              "# give its path. Any value can be overridden on the command line (model.dropout=0.3). See docs/hydra.md.\n")
    return header, cfg


def render(arch: str) -> str:
    from omegaconf import OmegaConf

    header, cfg = config(arch)
    return header + OmegaConf.to_yaml(OmegaConf.create(cfg), sort_keys=False)


def architectures() -> List[str]:
    from fairseq_syntax.models.presets import architectures as table

    return sorted(arch for arch, _, _ in table())


def write_all(out: str) -> List[str]:
    os.makedirs(out, exist_ok=True)
    written = []
    for arch in architectures():
        path = os.path.join(out, f"{arch}.yaml")
        with open(path, "w") as f:
            f.write(render(arch))
        written.append(path)
    return written


def check(out: str, archs: List[str] = None) -> List[str]:
    """Differences between the configs in ``out`` and what the generator writes (empty: in sync); ``archs``:
    render and compare only these (a part of the table; a config of no preset is named all the same)."""
    problems = []
    every = architectures()
    expected = {f"{arch}.yaml": render(arch) for arch in (every if archs is None else archs)}
    present = {f for f in os.listdir(out) if f.endswith(".yaml")} if os.path.isdir(out) else set()
    for name in sorted(present - {f"{arch}.yaml" for arch in every}):
        problems.append(f"{os.path.join(out, name)}: no such preset in the table")
    for name, text in sorted(expected.items()):
        path = os.path.join(out, name)
        if name not in present:
            problems.append(f"{path}: missing")
            continue
        with open(path) as f:
            have = f.read()
        if have != text:
            diff = "".join(difflib.unified_diff(have.splitlines(True), text.splitlines(True), path, "generated"))
            problems.append(f"{path}: out of date\n{diff}")
    return problems


def main(argv=None):
    p = argparse.ArgumentParser(
        prog="python examples/recipes/hydra_configs.py",
        description="Write (or check) one fairseq-hydra-train config per named architecture of fairseq-syntax.")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--out", metavar="DIR", help=f"write the configs into DIR (default: {DEFAULT_DIR})")
    g.add_argument("--check", metavar="DIR", nargs="?", const=DEFAULT_DIR,
                   help="exit 1 and show the differences if the configs in DIR (default: the package's) are not what "
                   "the generator writes")
    a = p.parse_args(argv)
    if a.check:
        problems = check(a.check)
        for line in problems:
            print(line)
        if problems:
            sys.exit(1)
        print(f"{a.check}: {len(architectures())} configs up to date")
        return
    for path in write_all(a.out or DEFAULT_DIR):
        print(path)


if __name__ == "__main__":
    main()
