"""The one table of training settings (fairseq_syntax/settings): held still (the committed results were trained
with these commands), read by the recipes exactly (bash quoting), named by every preset, and shown in
docs/settings.md.

After a deliberate change of the table: ``python tests/test_settings.py --write`` rewrites the held copy
(tests/data/training_settings.json) and docs/settings.md; say in the commit which trained results it affects."""
import json
import os
import re
import shlex
import subprocess
import sys
from dataclasses import asdict

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from helpers import ROOT, env, run, tool  # noqa: E402

from fairseq_syntax.settings.datasets import DATASETS, SIZES, entry, settings  # noqa: E402

HELD = os.path.join(ROOT, "tests", "data", "training_settings.json")
DOCS = os.path.join(ROOT, "docs", "settings.md")


def _table():
    """The table as held: the options as command lines (one line per model and field in a diff)."""
    return {f"{d}/{size}": {m: dict(asdict(s), train=shlex.join(s.train), decode=shlex.join(s.decode),
                                    also_against=list(s.also_against))
                            for m, s in sorted(settings(d, size).items())}
            for d in sorted(DATASETS) for size in SIZES}


def _jsonable(table):
    return json.loads(json.dumps(table))


def test_the_table_is_held_still():
    """Every model's options, batch, data, decoding and baselines of every recipe at both sizes, word for word
    (the first version was taken from the bash tables the committed results were trained with)."""
    with open(HELD, encoding="utf-8") as f:
        held = json.load(f)
    table = _jsonable(_table())
    assert sorted(table) == sorted(held)
    changed = [f"{key} {m}" for key in held for m in set(held[key]) | set(table[key])
               if held[key].get(m) != table[key].get(m)]
    assert not changed, f"the training settings changed (python tests/test_settings.py --write): {changed}"


def _recipe_arrays(dataset, size):
    """The models and data variants the recipe's runner (examples/recipes/runner) reads for ``dataset``."""
    from runner.recipe import load

    recipe = load(dataset, {"SIZE": size})
    models = {m: {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(s).items()}
              for m, s in recipe.models.items()}
    return models, list(recipe.variants)


#: the recipes whose round trip the quick tier checks (every quoting the table uses: '(0.9, 0.98)', the JSON of
#: --eval-bleu-args, a model subset); the rest are marked slow (a bash and a python3 each, about 0.4 s)
QUICK = {("tanaka-en-ja", "cpu"), ("aspec-ja-en", "cpu"), ("multi30k-en-de", "base")}


@pytest.mark.parametrize("dataset,size", [
    (d, z) if (d, z) in QUICK else pytest.param(d, z, marks=pytest.mark.slow)
    for d, z in [(d, "cpu") for d in sorted(DATASETS)] + [("multi30k-en-de", "base")]])
def test_the_recipes_read_the_table_word_for_word(dataset, size):
    """What train.sh and evaluate.sh read is the table: quoted words ('(0.9, 0.98)', the JSON of --eval-bleu-args)
    stay one word each, and the English->Japanese recipe has its source-side models only; every model's data
    variant is one its recipe.json prepares."""
    arrays, variants = _recipe_arrays(dataset, size)
    assert {a["data"] for a in arrays.values()} <= set(variants), variants
    table = {m: {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(s).items()}
             for m, s in settings(dataset, size).items()}
    assert arrays == table
    if dataset == "tanaka-en-ja":
        assert "syncattn" not in arrays and "dep_rel_self_own" in arrays
    if dataset == "aspec-ja-en":
        words = arrays["omote19-rel"]["train"]
        assert words[words.index("--eval-bleu-args") + 1] == '{"beam": 1, "lenpen": 1}'


def test_every_preset_names_an_entry_that_trains_it():
    """A preset's recipe trains that architecture; a preset with no recipe (``recipe=None``: a mechanism no
    paper's recipe trains, docs/extending.md) needs no entry, and its hydra config takes its model's baseline's
    settings, which must be an entry of the table."""
    import importlib.util

    from fairseq_syntax.models.presets import PRESETS

    spec = importlib.util.spec_from_file_location("hydra_configs", os.path.join(ROOT, "examples", "recipes",
                                                                                "hydra_configs.py"))
    generator = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(generator)
    for model, baseline in generator.BASELINES.items():
        assert PRESETS[baseline].model == model and PRESETS[baseline].recipe is not None, (model, baseline)
    for name, preset in PRESETS.items():
        if preset.recipe is None:
            continue
        arch = entry(preset.recipe).arch
        assert arch == name or (name, arch) == ("syntax_transformer", "transformer"), (name, preset.recipe, arch)


def test_the_settings_table_in_the_docs_is_generated():
    from fairseq_syntax.cli.settings import markdown

    with open(DOCS, encoding="utf-8") as f:
        assert f.read() == markdown(), "docs/settings.md is out of date: python tests/test_settings.py --write"


def test_a_model_shown_as_its_baseline_plus_options_trains_with_exactly_those():
    """docs/settings.md writes a model as BASELINE + OPTIONS [without DROPPED]: read back that way (the
    baseline's options, OPTIONS set, DROPPED removed; the last of an option given twice winning, as fairseq's
    parser does), every model of every table is its own options."""
    from fairseq_syntax.cli.settings import _groups, _relative

    for d in DATASETS:
        for size in SIZES:
            table = settings(d, size)
            for m, s in table.items():
                for r, ref in table.items():
                    shown = _relative(s.train, ref.train, r)
                    if shown.startswith("`"):  # in full
                        assert shlex.split(shown.strip("`")) == list(s.train)
                        continue
                    read = dict(_groups(ref.train))
                    plus, _, without = shown[len(r):].partition(" without ")
                    if plus.startswith(" + "):
                        read.update(_groups(shlex.split(plus[3:].strip("`"))))
                    for o in shlex.split(without.strip("`")):
                        del read[o]
                    assert read == _groups(s.train), (d, m, r, shown)


def test_a_size_shown_as_the_other_sizes_options_changed_reads_back():
    """docs/settings.md writes a recipe's size base as its size cpu with options set and dropped, the models that
    change alike in one row (and so a recipe of another's models): read back, each is its own options and batch."""
    from fairseq_syntax.cli.settings import _groups, _size_changes

    pairs = [(settings(d, "cpu"), settings(d, "base")) for d in DATASETS]  # a recipe's two sizes
    pairs += [(settings(a), settings(b)) for a in DATASETS for b in DATASETS  # recipes of the same models
              if a != b and set(settings(a)) == set(settings(b))]
    for cpu, base in pairs:
        rows = _size_changes(cpu, base)
        if cpu == base or rows is None:
            continue
        for models, changed, dropped, batch in rows:
            for m in models:
                read = dict(_groups(cpu[m].train))
                read.update(_groups(changed))
                for o in dropped:
                    del read[o]
                assert read == _groups(base[m].train) and batch == base[m].batch, m


def test_a_model_name_that_bash_would_read_as_code_is_refused():
    from dataclasses import replace

    from fairseq_syntax.cli.settings import bash
    from fairseq_syntax.errors import OptionError

    good = settings("wmt14-en-de")["transformer"]
    assert bash({"transformer": good}).startswith("DATA[transformer]=main ")
    with pytest.raises(OptionError, match="letters, digits"):
        bash({"a]=x; rm -rf y; b[": replace(good)})


def test_the_command_line():
    ok = run([tool("fairseq-syntax-settings"), "tanaka-ja-en", "dep_rel", "--json"])
    assert ok.returncode == 0, ok.stderr
    assert json.loads(ok.stdout)["dep_rel"]["baseline"] == "transformer"
    plain = run([tool("fairseq-syntax-settings"), "multi30k-en-de", "transformer", "dep_rel"]).stdout.splitlines()
    assert plain[0].startswith("transformer\t") and plain[0].endswith("\t(baseline)"), plain
    assert plain[1].startswith("dep_rel\t") and plain[1].endswith("\tagainst transformer"), plain
    for argv, message in ((["tanaka-ja-x"], "no recipe named 'tanaka-ja-x'"),
                          (["tanaka-en-ja", "syncattn"], "recipe tanaka-en-ja has no model 'syncattn'")):
        bad = run([tool("fairseq-syntax-settings"), *argv], check=False)
        assert bad.returncode == 2 and bad.stderr.startswith("error: ") and message in bad.stderr, bad.stderr
        assert len(bad.stderr.strip().splitlines()) == 1


def test_the_batch_on_n_gpus():
    """The per-GPU batch and --update-freq: the recipe's batch exactly where G x update-freq divides it, else
    rounded up by less than that and said; never more than --max-tokens per GPU; the fewest accumulations."""
    from fairseq_syntax.errors import OptionError
    from fairseq_syntax.settings.gpu_batch import split_batch

    exact = split_batch("tokens:25000", 4)
    assert (exact.options, exact.describe()) == ("--max-tokens 3125 --update-freq 2", "4 x 2 x 3125 = 25000 tokens")
    assert split_batch("tokens:32000", 1).options == "--max-tokens 4000 --update-freq 8"
    over = split_batch("tokens:8192", 3)
    assert over.options == "--max-tokens 2731 --update-freq 1"
    assert over.describe() == ("3 x 1 x 2731 = 8193 tokens (1 over 8192: 3 GPUs x update-freq 1 = 3 does not divide "
                               "8192)")
    assert split_batch("sentences:128", 3).describe().startswith("3 x 1 x 43 = 129 sentences (1 over 128")
    assert split_batch("tokens:4096", 1, max_tokens=1000).options == "--max-tokens 820 --update-freq 5"
    for n in (1, 999, 4096, 6000, 12000, 25000, 32000, 100003):
        for gpus in (1, 2, 3, 4, 7, 8, 64):
            for cap in (500, 4096):
                b = split_batch(f"tokens:{n}", gpus, cap)
                assert b.per_gpu <= cap and gpus * cap * (b.update_freq - 1) < n <= b.per_update
                assert b.per_update - n < gpus * b.update_freq and ("over" in b.describe()) == (b.per_update != n)
    for bad, message in ((("tokens:x", 4), "tokens:N or sentences:N"), (("tokens:100", 0), "--gpus 0")):
        with pytest.raises(OptionError, match=message):
            split_batch(*bad)


def test_the_recipes_pass_that_batch_with_gpus_and_max_tokens():
    """The recipes' runner (examples/recipes/runner) with GPUS=G and MAX_TOKENS= the printed --max-tokens passes
    the printed options: every batch of the table on 1 to 8 GPUs (and with its default MAX_TOKENS the same
    --update-freq)."""
    from runner.recipe import load
    from fairseq_syntax.settings.gpu_batch import split_batch

    batches = sorted({s.batch for d in DATASETS for z in SIZES for s in settings(d, z).values()})
    cases = [(b, g) for b in batches for g in range(1, 9)]
    for b, g in cases:
        given = " ".join(load("tanaka-ja-en", {"GPUS": str(g), "MAX_TOKENS": str(split_batch(b, g).per_gpu)})
                         .batch_args(b))
        default = " ".join(load("tanaka-ja-en", {"GPUS": str(g)}).batch_args(b))
        assert given == split_batch(b, g).options, (b, g)
        assert default.split()[-1] == given.split()[-1], (b, g)


def test_the_gpus_output_in_the_docs_is_the_commands():
    """docs/distributed.md shows `fairseq-syntax-settings ... --gpus N`: each command's output as printed."""
    with open(os.path.join(ROOT, "docs", "distributed.md"), encoding="utf-8") as f:
        shown = re.findall(r"^\$ (fairseq-syntax-settings .*)\n((?:[^$`].*\n)+)", f.read(), re.M)
    assert len(shown) >= 2 and all("--gpus" in command for command, _ in shown)
    for command, output in shown:
        printed = run([tool("fairseq-syntax-settings"), *shlex.split(command)[1:]])
        assert printed.stdout == output, command


def test_without_a_dataset_the_recipes_and_their_models():
    """No DATASET: each recipe and its models' names (what `fairseq-syntax-settings DATASET MODEL` takes), as
    text and as JSON; --bash and --gpus need a DATASET."""
    listed = run([tool("fairseq-syntax-settings")])
    lines = dict(line.split(": ") for line in listed.stdout.splitlines())
    assert lines == {d: " ".join(sorted(settings(d))) for d in DATASETS}
    assert "omote19-dep_rel" in lines["aspec-ja-en"].split()
    as_json = json.loads(run([tool("fairseq-syntax-settings"), "--json", "--size", "base"]).stdout)
    assert as_json == {d: sorted(settings(d, "base")) for d in DATASETS}
    for option in (["--bash"], ["--gpus", "4"]):
        bad = run([tool("fairseq-syntax-settings"), *option], check=False)
        assert bad.returncode == 2 and f"{option[0]} needs a DATASET" in bad.stderr


def test_a_recipe_stops_when_the_table_cannot_be_read(tmp_path):
    """A recipe whose NAME the table does not have stops with the reason, before it does anything; a SIZE
    other than cpu or base too."""
    from runner import recipe

    (tmp_path / "tanaka-xx").mkdir()
    (tmp_path / "tanaka-xx" / "recipe.json").write_text('{"base": "tanaka-ja-en", "name": "tanaka-xx"}')
    real = recipe.recipe_file
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(recipe, "recipe_file", lambda d: str(tmp_path / d / "recipe.json") if d == "tanaka-xx" else real(d))
        with pytest.raises(recipe.RecipeError,
                           match="could not read the training settings.*no recipe named 'tanaka-xx'"):
            recipe.load("tanaka-xx", {})
    script = os.path.join(ROOT, "examples", "tanaka-ja-en", "train.sh")
    p = subprocess.run(["bash", script, "transformer"], capture_output=True, text=True,
                       env={**env(), "SIZE": "large", "FAIRSEQ_SYNTAX_VENV": "none"}, cwd=tmp_path)
    assert p.returncode == 1 and "invalid choice: 'large'" in p.stderr
    assert os.listdir(tmp_path) == ["tanaka-xx"]  # nothing written


def test_a_recipes_help_needs_no_environment(tmp_path):
    """train.sh --help lists the models before any environment is built: the table needs only python3."""
    script = os.path.join(ROOT, "examples", "tanaka-en-ja", "train.sh")
    p = subprocess.run(["bash", script, "--help"], capture_output=True, text=True, cwd=tmp_path,
                       env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "FAIRSEQ_SYNTAX_VENV": str(tmp_path)})
    assert p.returncode == 0, p.stderr
    models = p.stdout.split("Models: ")[1].split()
    assert sorted(models) == sorted(settings("tanaka-en-ja")) and "[setup]" not in p.stderr


if __name__ == "__main__" and sys.argv[1:] == ["--write"]:
    from fairseq_syntax.cli.settings import markdown

    with open(HELD, "w", encoding="utf-8") as f:
        json.dump(_jsonable(_table()), f, indent=1, sort_keys=True)
        f.write("\n")
    with open(DOCS, "w", encoding="utf-8") as f:
        f.write(markdown())
    print(f"wrote {HELD} and {DOCS}")
