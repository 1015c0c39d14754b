#!/usr/bin/env bash
# examples/<dataset>/{prepare,train,evaluate}.sh are links to this file: it runs that step of the dataset's
# recipe (examples/<dataset>/recipe.json, run by examples/recipes/runner: docs/recipes.md).
#
#   bash examples/<dataset>/prepare.sh [MODEL...]  fetch (or LOCAL_DATA / SAMPLE=1), tokenise, parse, BPE,
#                                                  binarize: the data-bins of these models (default: all)
#   bash examples/<dataset>/train.sh MODEL [...]   the paper's settings for MODEL (extra fairseq-train options)
#   bash examples/<dataset>/evaluate.sh MODEL      beam search on test, sacreBLEU / chrF (+ RIBES), bootstrap
#                                                  against the baseline, BLEU by source length (table + PNG)
# Variables: `bash examples/<dataset>/train.sh --help` lists them and the models.
set -euo pipefail
dataset="$(basename "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)")"
step="$(basename "${BASH_SOURCE[0]}" .sh)"
ROOT="$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../.." && pwd)"
export PYTHONPATH="$ROOT/examples/recipes:$ROOT${PYTHONPATH:+:$PYTHONPATH}"  # the recipes' runner and this checkout's plugin
case "${1:-}" in  # the help needs only python3 and the standard library: before any environment is built
  -h|--help) exec python3 -m runner "$dataset" "$step" "$@" ;;
esac
# shellcheck disable=SC1091
source "$ROOT/examples/setup_env.sh"
exec python -m runner "$dataset" "$step" "$@"
