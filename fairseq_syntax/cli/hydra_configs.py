"""Hydra configs of the named architectures, for ``fairseq-hydra-train``.

    python -m fairseq_syntax.cli.hydra_configs --out fairseq_syntax/config   # (re)write them
    python -m fairseq_syntax.cli.hydra_configs --check fairseq_syntax/config # exit 1 if out of date

One ``<arch>.yaml`` per preset of ``syntax_transformer`` and ``attention_lstm``
(the registry decides the list), written from the registry so they stay in
sync with the presets:

* ``model``: ``_name`` = the preset and every option the preset resolves to
  (its architecture function applied to the recipe's model options), so that
  any of them can be overridden on the command line (``model.dropout=0.3``)
  and so that the dataclass model ``attention_lstm`` gets its preset's values
  (fairseq fills a dataclass model's config with the dataclass defaults before
  the architecture function runs, so ``model._name=cky_lstm`` alone would
  train without CKY attention);
* ``task``: ``syntax_translation`` with the syntax fields the preset's model
  asks for (``translation`` for the LSTMs, as in the recipes); ``task.data``
  is mandatory (``???``);
* ``criterion``, ``optimizer``, ``lr_scheduler``, ``optimization``,
  ``dataset``: the settings of the recipe named in the file's header.
"""
import argparse
import difflib
import os
import sys
from argparse import Namespace
from typing import Dict, List, Tuple

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_DIR = os.path.join(HERE, "config")
MODELS = ("syntax_transformer", "attention_lstm")

# --- the recipes' settings (examples/<dataset>/config.sh, examples/recipes/*.sh) -------------------------------
_VASWANI = dict(
    optimizer={"_name": "adam", "adam_betas": "(0.9, 0.98)", "adam_eps": 1e-9},
    lr_scheduler={"_name": "inverse_sqrt", "warmup_updates": 4000},
)
_LS = {"_name": "label_smoothed_cross_entropy", "label_smoothing": 0.1}


def _dep(lam_enc, lam_dec):
    return {"_name": "label_smoothed_cross_entropy_with_dependency", "label_smoothing": 0.1,
            "dependency_lambda_enc": lam_enc, "dependency_lambda_dec": lam_dec, "dependency_normalization": "arcs"}


#: family -> (recipe, model options, criterion, optimizer, lr_scheduler, optimization, dataset)
FAMILIES: Dict[str, dict] = {
    "dbsa": dict(
        recipe="Deguchi et al. (2019), examples/aspec-ja-en (deguchi19-*): Adam (0.9, 0.98), lr 0.0007, 4,000 "
               "warm-up steps, batches of 224 sentences, 20 epochs, lambda_enc = lambda_dec = 1.0",
        model={"dropout": 0.1, "share_all_embeddings": True}, criterion=_dep(1.0, 1.0), **_VASWANI,
        optimization={"lr": [0.0007], "max_epoch": 20}, dataset={"batch_size": 224}),
    "rel": dict(
        recipe="Omote et al. (2019), examples/aspec-ja-en (omote19-*): Adam (0.9, 0.98), lr 0.0007, 4,000 "
               "warm-up steps, batches of 256 sentences, 30 epochs, k = l = 2",
        model={"dropout": 0.1, "share_all_embeddings": True}, criterion=_LS, **_VASWANI,
        optimization={"lr": [0.0007], "max_epoch": 30}, dataset={"batch_size": 256}),
    "pascal": dict(
        recipe="Bugliarello & Okazaki (2020), examples/wat-en-ja (pascal_systems, large setting): Adam "
               "(0.9, 0.997), lr 0.0007, 8,000 warm-up steps, 100,000 updates, dropout 0.1, 32k-token batches",
        model={"dropout": 0.1, "share_all_embeddings": True}, criterion=_LS,
        optimizer={"_name": "adam", "adam_betas": "(0.9, 0.997)"},
        lr_scheduler={"_name": "inverse_sqrt", "warmup_updates": 8000},
        optimization={"lr": [0.0007], "max_update": 100000}, dataset={"max_tokens": 32000}),
    "syncattn": dict(
        recipe="Deguchi et al. (2021), examples/wmt14-en-de (syncattn_systems): Adam (0.9, 0.98), lr 0.0007, "
               "4,000 warm-up steps, 100,000 updates, 25k-token batches, lambda_dep 0.5, lambda_sync 0.5 "
               "(WMT16 En-Ro: 0.1, ASPEC Ja-En: 10.0)",
        model={"dropout": 0.1, "share_all_embeddings": True},
        criterion={**_dep(0.5, 0.5), "_name": "label_smoothed_cross_entropy_with_sync", "sync_lambda": 0.5},
        optimizer={"_name": "adam", "adam_betas": "(0.9, 0.98)"},
        lr_scheduler={"_name": "inverse_sqrt", "warmup_updates": 4000},
        optimization={"lr": [0.0007], "max_update": 100000}, dataset={"max_tokens": 25000}),
    "lstm": dict(
        recipe="Watanabe et al. (2017), examples/aspec-en-ja: Adam (0.9, 0.99), lr 0.01 halved after epochs 9 "
               "and 12, 15 epochs, clipping 3.0, weight decay 1e-6, batches of 128 sentences, cross-entropy",
        model={}, criterion={"_name": "cross_entropy"},
        optimizer={"_name": "adam", "adam_betas": "(0.9, 0.99)", "weight_decay": 1e-6},
        lr_scheduler={"_name": "fixed"},
        optimization={"lr": [0.01] * 9 + [0.005] * 3 + [0.0025], "max_epoch": 15, "clip_norm": 3.0},
        dataset={"batch_size": 128}),
}
# the SISA baseline is trained as in the PASCAL paper, with the encoder parse-head loss (lambda 1.0)
FAMILIES["sisa"] = dict(FAMILIES["pascal"], criterion=_dep(1.0, 1.0),
                        recipe=FAMILIES["pascal"]["recipe"] + "; SISA's encoder parse-head loss, lambda 1.0")


def family(arch: str) -> str:
    base = arch[: -len("_tiny")] if arch.endswith("_tiny") else arch
    if base in ("lstm_luong", "cky_lstm"):
        return "lstm"
    if base == "transformer_sisa":
        return "sisa"
    if base in ("transformer_pascal", "transformer_sh"):
        return "pascal"
    if base == "transformer_syncattn":
        return "syncattn"
    if base in ("transformer_rel", "transformer_dep", "transformer_dep_rel", "syntax_transformer"):
        return "rel"  # the plain transformer: Vaswani et al.'s settings, as Omote et al. train it
    if base.startswith("transformer_dbsa"):
        return "dbsa"
    raise KeyError(f"no recipe settings for the architecture {arch!r}: add it to fairseq_syntax/cli/hydra_configs.py")


def presets() -> List[Tuple[str, str]]:
    """[(arch, model)] of every named architecture of the plugin's models (the bare model names excluded)."""
    from fairseq.models import ARCH_MODEL_NAME_REGISTRY

    import fairseq_syntax.plugin  # noqa: F401  (registers the models)

    return sorted((a, m) for a, m in ARCH_MODEL_NAME_REGISTRY.items() if m in MODELS and a != "attention_lstm")


def model_options(arch: str, extra: dict) -> dict:
    """Every option the preset resolves to, ``extra`` (the recipe's model options) given first."""
    from fairseq.models import ARCH_CONFIG_REGISTRY

    args = Namespace(**extra)
    ARCH_CONFIG_REGISTRY[arch](args)
    return {k: v for k, v in sorted(vars(args).items()) if not k.startswith("_")}


def syntax_fields(arch: str, options: dict) -> Dict[str, str]:
    """The task's syntax options for the preset: what its model asks the task to collate."""
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


def config(arch: str, model: str) -> Tuple[str, dict]:
    """(header comment, config) of one preset."""
    fam = FAMILIES[family(arch)]
    options = model_options(arch, fam["model"])
    if model == "syntax_transformer":
        task = {"_name": "syntax_translation", "data": "???", **syntax_fields(arch, options),
                "parent_strategy": "auto"}
    else:
        task = {"_name": "translation", "data": "???"}
    cfg = {
        "hydra": {"run": {"dir": "."}},  # as fairseq's own config: no output folder, paths relative to the cwd
        "common": {"user_dir": "fairseq_syntax", "log_format": "simple", "log_interval": 100},
        "task": task,
        "model": {"_name": arch, **options},
        "criterion": dict(fam["criterion"]),
        "optimizer": dict(fam["optimizer"]),
        "lr_scheduler": dict(fam["lr_scheduler"]),
        "optimization": dict(fam["optimization"]),
        "dataset": dict(fam["dataset"]),
    }
    header = (f"# {arch}: fairseq-hydra-train config of the named architecture (--arch {arch}).\n"
              f"# Written by `python -m fairseq_syntax.cli.hydra_configs`: do not edit, regenerate.\n"
              f"# Settings: {fam['recipe']}.\n"
              "# Give task.data=DATA-BIN; common.user_dir=fairseq_syntax resolves from the checkout's root, else\n"
              "# give its path. Any value can be overridden on the command line (model.dropout=0.3). See docs/hydra.md.\n")
    return header, cfg


def render(arch: str, model: str) -> str:
    from omegaconf import OmegaConf

    header, cfg = config(arch, model)
    return header + OmegaConf.to_yaml(OmegaConf.create(cfg), sort_keys=False)


def write_all(out: str) -> List[str]:
    os.makedirs(out, exist_ok=True)
    written = []
    for arch, model in presets():
        path = os.path.join(out, f"{arch}.yaml")
        with open(path, "w") as f:
            f.write(render(arch, model))
        written.append(path)
    return written


def check(out: str) -> List[str]:
    """Differences between the configs in ``out`` and what the generator writes (empty: in sync)."""
    problems = []
    expected = {f"{arch}.yaml": render(arch, model) for arch, model in presets()}
    present = {f for f in os.listdir(out) if f.endswith(".yaml")} if os.path.isdir(out) else set()
    for name in sorted(present - set(expected)):
        problems.append(f"{os.path.join(out, name)}: no such preset in the registry")
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


def cli_main(argv=None):
    p = argparse.ArgumentParser(
        prog="python -m fairseq_syntax.cli.hydra_configs",
        description="Write (or check) one fairseq-hydra-train config per named architecture of fairseq-syntax.")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--out", metavar="DIR", help=f"write the configs into DIR (default: {DEFAULT_DIR})")
    g.add_argument("--check", metavar="DIR", help="exit 1 and show the differences if the configs in DIR are not "
                                                  "what the generator writes")
    a = p.parse_args(argv)
    if a.check:
        problems = check(a.check)
        for line in problems:
            print(line)
        if problems:
            sys.exit(1)
        print(f"{a.check}: {len(presets())} configs up to date")
        return
    for path in write_all(a.out or DEFAULT_DIR):
        print(path)


if __name__ == "__main__":
    cli_main()
