#!/usr/bin/env bash
# Fidelity report on the synthetic corpus: BLEU of each model at equal updates, and the UAS of the parse heads
# of the models that have them (docs/benchmarks.md "Fidelity"; the models: examples/synthetic/fidelity.py --help).
#
#   bash examples/synthetic/fidelity.sh [MODEL ...]     (default: transformer dbsa)
#
# Models train one after another (PARALLEL=1: all at once, one core each).
# Variables: FIDELITY_DIR [work/fidelity], UPDATES [2000], TRAIN [20000], SEED [1].
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
# shellcheck disable=SC1091
source "$ROOT/examples/setup_env.sh"
export PYTHONWARNINGS="${PYTHONWARNINGS:-ignore}"
exec python "$ROOT/examples/synthetic/fidelity.py" "$@"
