#!/usr/bin/env bash
# The README's test command: sets up the environment once (examples/setup_env.sh,
# reused on later runs), then runs the whole test suite over every core
# (pytest-xdist; TEST_WORKERS=N for N processes, TEST_WORKERS=0 for one), its temporary folders on a RAM disk
# when there is one with 2 GB free (TEST_TMPDIR).
# Extra arguments go to pytest, e.g. `bash tests/run.sh -k collater`.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck disable=SC1091
source "$ROOT/examples/setup_env.sh"
cd "$ROOT"
export PYTHONWARNINGS="${PYTHONWARNINGS:-ignore::DeprecationWarning}"
# The tests' temporary folders (about 0.5 GB of small files, each synced as it is written) on a RAM disk when one
# has room: on a virtual disk the syncs slowed the I/O-bound tests (docs/development.md, "Tests").
# TEST_TMPDIR=DIR chooses the folder; TEST_TMPDIR= (empty) keeps $TMPDIR.
if [ -z "${TEST_TMPDIR+set}" ] && [ -d /dev/shm ] && [ -w /dev/shm ] \
   && [ "$(df -Pk /dev/shm 2>/dev/null | awk 'NR == 2 {print $4}')" -gt 2097152 ] 2>/dev/null; then
  TEST_TMPDIR=/dev/shm
fi
[ -n "${TEST_TMPDIR:-}" ] && export TMPDIR="$TEST_TMPDIR"
exec python -m pytest -q -p no:cacheprovider -n "${TEST_WORKERS:-auto}" --dist worksteal "$@" tests
