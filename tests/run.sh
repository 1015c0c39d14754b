#!/usr/bin/env bash
# The README's test command: sets up the environment once (examples/setup_env.sh,
# reused on later runs), then runs the whole test suite over every core
# (pytest-xdist; TEST_WORKERS=N for N processes, TEST_WORKERS=0 for one).
# Extra arguments go to pytest, e.g. `bash tests/run.sh -k collater`.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck disable=SC1091
source "$ROOT/examples/setup_env.sh"
cd "$ROOT"
export PYTHONWARNINGS="${PYTHONWARNINGS:-ignore::DeprecationWarning}"
exec python -m pytest -q -p no:cacheprovider -n "${TEST_WORKERS:-auto}" --dist worksteal "$@" tests
