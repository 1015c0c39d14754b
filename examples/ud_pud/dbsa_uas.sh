#!/usr/bin/env bash
# Encoder parse-head UAS of DBSA on UD PUD English-German (gold trees on both
# sides) after a short CPU run: 900 training pairs, 50 valid, 50 test.
#
#   bash examples/ud_pud/dbsa_uas.sh
# Variables: PUD_DIR [work/ud_pud], SHARED [$FAIRSEQ_SYNTAX_SHARED or ../shared], UPDATES [500] (dbsa_uas.py).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
# shellcheck disable=SC1091
source "$ROOT/examples/setup_env.sh"
cd "$ROOT"
export PYTHONWARNINGS="${PYTHONWARNINGS:-ignore}"
exec python examples/ud_pud/dbsa_uas.py
