"""The one table of training settings (fairseq_syntax/recipes): held still (the committed results were trained
with these commands), read by the recipes exactly (bash quoting), named by every preset, and shown in
docs/settings.md.

After a deliberate change of the table: ``python tests/test_settings.py --write`` rewrites the held copy
(tests/data/training_settings.json) and docs/settings.md; say in the commit which trained results it affects."""
import json
import os
import shlex
import subprocess
import sys
from dataclasses import asdict

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from helpers import ROOT, env, run, tool  # noqa: E402
from test_recipes import sourced  # noqa: E402

from fairseq_syntax.recipes.datasets import DATASETS, SIZES, entry, settings  # noqa: E402

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


_DUMP = r"""
printf '%s\0' "$VARIANTS"
for m in $(printf '%s\n' "${!DATA[@]}" | sort); do
  words t "${TRAIN[$m]}"; words d "${DECODE[$m]}"
  printf '%s\0' "$m" "${DATA[$m]}" "${BATCH[$m]}" "${TASK[$m]}" "${BASELINE[$m]}" "${ALSO_AGAINST[$m]:-}" \
    "${CHECKPOINT_OF[$m]:-}" "${#t[@]}" "${t[@]}" "${#d[@]}" "${d[@]}"
done
"""


def _recipe_arrays(dataset, size):
    script = f"set -euo pipefail; SIZE={size}; {sourced(dataset)}{_DUMP}"
    out = subprocess.run(["bash", "-c", script], capture_output=True, check=True, env=env()).stdout.decode()
    items, models, i = out.split("\0")[:-1], {}, 1
    while i < len(items):
        m, data, batch, task, base, also, of, n = items[i:i + 8]
        train = items[i + 8:i + 8 + int(n)]
        i += 8 + int(n)
        decode = items[i + 1:i + 1 + int(items[i])]
        i += 1 + int(items[i])
        models[m] = dict(data=data, batch=batch, task=task, baseline=base, also_against=also.split(),
                         checkpoint_of=of or None, train=train, decode=decode)
    return models, items[0].split()


#: the recipes whose round trip the quick tier checks (every quoting the table uses: '(0.9, 0.98)', the JSON of
#: --eval-bleu-args, a model subset); the rest are marked slow (a bash and a python3 each, about 0.4 s)
QUICK = {("tanaka-en-ja", "cpu"), ("aspec-ja-en", "cpu"), ("multi30k-en-de", "base")}


@pytest.mark.parametrize("dataset,size", [
    (d, z) if (d, z) in QUICK else pytest.param(d, z, marks=pytest.mark.slow)
    for d, z in [(d, "cpu") for d in sorted(DATASETS)] + [("multi30k-en-de", "base")]])
def test_the_recipes_read_the_table_word_for_word(dataset, size):
    """What train.sh and evaluate.sh hold after `fairseq-syntax-settings --bash` is the table: quoted words
    ('(0.9, 0.98)', the JSON of --eval-bleu-args) stay one word each, and the English->Japanese recipe has its
    source-side models only; every model's data variant is one its config.sh prepares."""
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
    from fairseq_syntax.models.presets import PRESETS

    for name, preset in PRESETS.items():
        arch = entry(preset.recipe).arch
        assert arch == name or (name, arch) == ("syntax_transformer", "transformer"), (name, preset.recipe, arch)


def test_the_settings_table_in_the_docs_is_generated():
    from fairseq_syntax.cli.settings import markdown

    with open(DOCS, encoding="utf-8") as f:
        assert f.read() == markdown(), "docs/settings.md is out of date: python tests/test_settings.py --write"


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
    for argv, message in ((["tanaka-ja-x"], "no recipe named 'tanaka-ja-x'"),
                          (["tanaka-en-ja", "syncattn"], "recipe tanaka-en-ja has no model 'syncattn'")):
        bad = run([tool("fairseq-syntax-settings"), *argv], check=False)
        assert bad.returncode == 2 and bad.stderr.startswith("error: ") and message in bad.stderr, bad.stderr
        assert len(bad.stderr.strip().splitlines()) == 1


def test_a_recipe_stops_when_the_table_cannot_be_read(tmp_path):
    """A recipe whose NAME the table does not have stops with the reason, before it does anything; a SIZE
    other than cpu or base too."""
    script = (f'source "{ROOT}/examples/recipes/recipe.sh"; source "{ROOT}/examples/tanaka-ja-en/config.sh"; '
              'NAME=tanaka-xx; load_settings; echo reached')
    p = subprocess.run(["bash", "-c", script], capture_output=True, text=True, env=env(), cwd=tmp_path)
    assert p.returncode != 0 and "reached" not in p.stdout
    assert "no recipe named 'tanaka-xx'" in p.stderr and "could not read the training settings" in p.stderr
    p = subprocess.run(["bash", "-c", script.replace("NAME=tanaka-xx;", "SIZE=large;")], capture_output=True,
                       text=True, env=env(), cwd=tmp_path)
    assert p.returncode != 0 and "reached" not in p.stdout and "invalid choice: 'large'" in p.stderr


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
