"""A dataset's recipe: ``examples/DATASET/recipe.json``, the user's variables and the models of the table of
training settings (:mod:`fairseq_syntax.settings`) at ``SIZE``.

recipe.json holds (only ``name``, ``src``, ``tgt`` and ``variants`` are required):

- ``about``: the lines ``--help`` prints first; ``base``: another dataset's recipe.json this one starts from
- ``variants``: VARIANT -> ``syntax`` (source | target | source,target | none), ``prepare`` (preprocess/prepare.py's
  options, shell words in one string: the string is part of the data-bin's key, :mod:`.prepare_step`),
  ``lang_filter`` (langid | langdetect, not applied to the sample), ``multitask`` (C&H's corpus)
- ``train_first``, ``test_sets`` (several test sets joined into the test split and scored one by one),
  ``bleu_on_tokens`` (BLEU on the target's tokens as the preparation wrote them, WAT's rule: the scoring plan of
  :mod:`fairseq_syntax.evaluation.scoring_plan`), ``data_from`` (the dataset whose data-bins this one reads)
- ``defaults``: VARIABLE -> value, the dataset's default of a user's variable (e.g. ``PARSER_en``)
- ``source``: where the raw data comes from: ``{"module": NAME, ...}``, a module of :mod:`.sources` given the rest
"""
import json
import os
import re
import sys
from dataclasses import dataclass, field
from typing import Dict, List

from fairseq_syntax.settings.datasets import SIZES, settings
from fairseq_syntax.settings.model_settings import ModelSettings
from runner.common import ROOT, SPLITS, RecipeError  # noqa: F401  (the steps import them from here too)



@dataclass
class Variant:
    syntax: str
    prepare: str = ""
    lang_filter: str = ""
    multitask: bool = False


@dataclass
class Recipe:
    name: str
    src: str
    tgt: str
    variants: Dict[str, Variant]
    about: List[str] = field(default_factory=list)
    train_first: int = 0
    test_sets: List[str] = field(default_factory=list)
    bleu_on_tokens: bool = False
    data_from: str = ""
    source: dict = field(default_factory=dict)
    env: Dict[str, str] = field(default_factory=dict)  # the user's variables, over the dataset's defaults
    models: Dict[str, ModelSettings] = field(default_factory=dict)
    work: str = ""
    data_work: str = ""
    step: str = ""  # prepare | train | evaluate

    # ------------------------------------------------------------------ variables and paths
    def var(self, name: str, default: str = "") -> str:
        value = self.env.get(name, "")
        return value if value != "" else default

    @property
    def sample(self) -> bool:
        return self.var("SAMPLE", "0") == "1"

    @property
    def dry_run(self) -> bool:
        return self.var("DRY_RUN", "0") == "1"

    @property
    def raw(self) -> str:
        return os.path.join(self.data_work, "raw")

    def log(self, message: str) -> None:
        print(f"[{self.name}] {message}", file=sys.stderr, flush=True)

    # ------------------------------------------------------------------ models
    def model_list(self) -> List[str]:
        """The models, baselines first (their hypotheses serve the bootstrap tests)."""
        names = sorted(self.models)
        return ([m for m in names if self.models[m].baseline == m] +
                [m for m in names if self.models[m].baseline != m])

    def model(self, name: str, usage: str) -> ModelSettings:
        """``name``'s settings (MODEL_seedN: MODEL reseeded), or a stop listing the models."""
        listed = " ".join(self.model_list())
        if not name:
            raise RecipeError(f"usage: {usage} MODEL [extra fairseq options]; models: {listed}")
        self.seeded(name)
        if name not in self.models:
            raise RecipeError(f"unknown model '{name}' for {self.name}; models: {listed} (and MODEL_seedN: MODEL "
                              "with --seed N)")
        return self.models[name]

    def seeded(self, name: str) -> None:
        """MODEL_seedN, N > 1: MODEL's settings with --seed N, tested against its baseline's same seed (a
        baseline: against its seed 1), and so for the paper's other baselines; a name of the table keeps its
        settings."""
        m = re.fullmatch(r"(.+)_seed([0-9]+)", name)
        if not m or name in self.models or m.group(1) not in self.models:
            return
        base, seed = m.group(1), int(m.group(2))
        if seed <= 1:
            raise RecipeError(f"{name}: seed 1 is {base} itself")
        s = self.models[base]
        train = list(s.train)
        at = next((i for i in range(len(train) - 1) if train[i] == "--seed" and train[i + 1] == "1"), None)
        if at is None:
            raise RecipeError(f"{name}: the settings of {base} have no --seed 1 to replace")
        train[at + 1] = m.group(2)
        suffix = f"_seed{m.group(2)}"
        baseline = base if s.baseline == base else s.baseline + suffix
        self.models[name] = ModelSettings(
            data=s.data, batch=s.batch, train=tuple(train), task=s.task, decode=s.decode, baseline=baseline,
            also_against=tuple(b + suffix for b in s.also_against),
            checkpoint_of=s.checkpoint_of + suffix if s.checkpoint_of else None,
            starts_from=s.starts_from + suffix if s.starts_from else None)
        for other in (baseline if baseline != base else None, *(b + suffix for b in s.also_against),
                      s.starts_from + suffix if s.starts_from else None):
            if other:
                self.seeded(other)

    # ------------------------------------------------------------------ batch
    def gpu_count(self) -> int:
        if self.var("GPUS"):
            return int(self.var("GPUS"))
        import shutil
        import subprocess

        if shutil.which("nvidia-smi"):
            p = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True)
            if p.returncode == 0:
                return len(p.stdout.splitlines())
        return 1

    def batch_args(self, batch: str) -> List[str]:
        """``tokens:N`` | ``sentences:N`` -> MAX_TOKENS per GPU batch and the --update-freq making N per update
        (:mod:`fairseq_syntax.settings.gpu_batch` gives the smallest per-GPU batch; the recipe passes
        MAX_TOKENS)."""
        kind, _, n = batch.partition(":")
        gpus, n, most = self.gpu_count(), int(n), int(self.var("MAX_TOKENS", "4096"))
        if kind == "tokens":
            return ["--max-tokens", str(most), "--update-freq", str(-(-n // (most * gpus)))]
        return ["--batch-size", str(-(-n // gpus)), "--update-freq", "1"]


def recipe_file(dataset: str) -> str:
    return os.path.join(ROOT, "examples", dataset, "recipe.json")


def _read(dataset: str) -> dict:
    with open(recipe_file(dataset), encoding="utf-8") as f:
        data = json.load(f)
    if "base" in data:
        base = _read(data.pop("base"))
        base.update(data)
        data = base
    return data


def load(dataset: str, env: Dict[str, str]) -> Recipe:
    """The recipe of ``examples/DATASET`` with the variables ``env`` (the process's environment) and its models at
    SIZE; the work folders are set by :func:`place`."""
    if not os.path.exists(recipe_file(dataset)):
        raise RecipeError(f"no recipe {recipe_file(dataset)}")
    data = _read(dataset)
    variants = {v: Variant(**spec) for v, spec in data.pop("variants").items()}
    defaults = data.pop("defaults", {})
    recipe = Recipe(variants=variants, **data)
    recipe.env = {**defaults, **{k: v for k, v in env.items() if v != ""}}
    if recipe.source.get("module"):  # a dataset's defaults that depend on other variables
        from runner.sources import module

        hook = getattr(module(recipe.source["module"]), "defaults", None)
        if hook:
            hook(recipe)
    size = recipe.var("SIZE", "cpu")
    if size not in SIZES:
        raise RecipeError(f"could not read the training settings of {recipe.name}: SIZE={size}: invalid choice: "
                          f"'{size}' (choose from {', '.join(SIZES)})")
    try:
        recipe.models = dict(settings(recipe.name, size))
    except ValueError as e:
        raise RecipeError(f"could not read the training settings of {recipe.name} (fairseq-syntax-settings "
                          f"{recipe.name} --size {size}): {e}") from None
    return recipe


def place(recipe: Recipe) -> None:
    """WORK [<repo>/work/NAME] and the folder holding the data (DATA_WORK: DATA_FROM's, next to WORK)."""
    # absolute: the staged inputs are links into WORK/text, which a relative WORK would leave dangling
    recipe.work = os.path.abspath(recipe.var("WORK", os.path.join(ROOT, "work", recipe.name)))
    if recipe.data_from:
        recipe.data_work = os.path.abspath(recipe.var("DATA_WORK", os.path.join(os.path.dirname(recipe.work),
                                                                                recipe.data_from)))
    else:
        recipe.data_work = recipe.work
