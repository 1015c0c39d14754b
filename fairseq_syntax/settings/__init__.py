"""The recipes' training settings: for every dataset recipe, each model it trains with the paper's
fairseq-train options, its batch, its data-bin, how it decodes and the baselines it is tested against.

This is the one table of training settings. A recipe's train and evaluate steps read it, a shell script through
``fairseq-syntax-settings DATASET --bash`` (run as ``python3 -m fairseq_syntax.cli.settings`` with the checkout on
``PYTHONPATH``: only the standard library is needed); the hydra configs in ``fairseq_syntax/config`` are generated from it
and the preset table (``fairseq_syntax/models/presets.py``: each preset names the recipe entry that carries its
training settings); ``docs/settings.md`` is written from it (``python tests/test_settings.py --write``). How the data
is prepared (BPE, parsers, filters) stays in each dataset's ``recipe.json``; a model's ``data`` names one of its
variants.

Nothing here imports torch or fairseq: a recipe reads the table in a fraction of a second.
"""
