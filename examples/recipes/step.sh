#!/usr/bin/env bash
# examples/<dataset>/{prepare,train,evaluate}.sh are links to this file: it runs that step of the
# dataset's recipe (examples/<dataset>/config.sh + examples/recipes/recipe.sh).
#
#   bash examples/<dataset>/prepare.sh [MODEL...]  fetch (or LOCAL_DATA / SAMPLE=1), tokenise, parse, BPE,
#                                                  binarize: the data-bins of these models (default: all)
#   bash examples/<dataset>/train.sh MODEL [...]   the paper's settings for MODEL (extra fairseq-train options)
#   bash examples/<dataset>/evaluate.sh MODEL      beam search on test, sacreBLEU / chrF (+ RIBES), bootstrap
#                                                  against the baseline, BLEU by source length (table + PNG)
# Variables: see examples/recipes/recipe.sh; `bash examples/<dataset>/train.sh` lists the models.
set -euo pipefail
dataset_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
step="$(basename "${BASH_SOURCE[0]}" .sh)"
# shellcheck disable=SC1091
source "$dataset_dir/../recipes/recipe.sh"
# shellcheck disable=SC1091
source "$dataset_dir/config.sh"
recipe "$step" "$@"
