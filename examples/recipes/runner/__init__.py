"""The runner of the dataset recipes: ``examples/DATASET/{prepare,train,evaluate}.sh`` start
``python -m runner DATASET STEP [ARGS...]``.

It reads the plugin's table of training settings (:mod:`fairseq_syntax.settings`). What a dataset prepares (its
language pair, data variants, test sets, scoring and where its raw data comes from) is data,
``examples/DATASET/recipe.json`` (:mod:`.recipe`); code a dataset needs of its own (downloads) is a module of
:mod:`.sources`. The steps: :mod:`.prepare_step` (raw data by :mod:`.raw_data`, tokens and parses, the data-bins),
:mod:`.train_step`, :mod:`.evaluate_step`; :mod:`.run_locks` keeps a prepare, a training and an evaluation of the
same data or model from running beside each other; :mod:`.commands` runs the fairseq commands; :mod:`.common`
holds what they all share.

Importing it imports neither torch nor fairseq: ``--help`` and the model listing need only the standard library.
"""
