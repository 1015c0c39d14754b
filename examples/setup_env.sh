#!/usr/bin/env bash
# Sourced by examples/demo/run.sh and tests/run.sh: builds the project's
# virtual environment once (examples/build_env.sh) and activates it. Later
# calls find the finished environment and only activate it; after setup.py changed they reinstall the
# plugin into it. Scripts started together build or reinstall once: under a lock (flock) on <venv>.setup-lock.
#
#   FAIRSEQ_SYNTAX_VENV   where the environment lives (default <repo>/.venv); "none": use the python and the
#                         commands on PATH as they are (an environment made otherwise, e.g. examples/gpu/install.py)
#   PYTHON                the interpreter used to create it (default python3.11)
if [ "${FAIRSEQ_SYNTAX_VENV:-}" = none ]; then
  export OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}"
  return 0 2>/dev/null || exit 0
fi
_fs_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
_fs_venv="${FAIRSEQ_SYNTAX_VENV:-$_fs_root/.venv}"
_fs_stamp="$_fs_venv/.fairseq_syntax_setup_v1"
_fs_setup_hash="$(sha256sum "$_fs_root/setup.py" | cut -c1-16)"
_fs_setup() {  # build the environment, or reinstall the plugin after setup.py changed; run under the lock
  if [ ! -f "$_fs_stamp" ]; then
    echo "[setup] creating $_fs_venv (one time, about 5-10 minutes)" >&2
    if [ -e "$_fs_venv" ]; then
      if [ -f "$_fs_venv/.fairseq_syntax_building" ]; then
        rm -rf "$_fs_venv"  # an unfinished build of ours (no other build runs: we hold the lock)
      else
        echo "[setup] $_fs_venv exists but is not a fairseq-syntax environment: remove it or set FAIRSEQ_SYNTAX_VENV" >&2
        return 1
      fi
    fi
    if bash "$_fs_root/examples/build_env.sh" "$_fs_venv"; then
      echo "$_fs_setup_hash" > "$_fs_stamp"
    else
      echo "[setup] building $_fs_venv failed (see above); the next run starts it again" >&2
      return 1
    fi
  fi
  # setup.py changed since the build (new console scripts or requirements): reinstall the plugin and any
  # new requirement (fairseq and torch stay as built)
  if [ "$(cat "$_fs_stamp")" != "$_fs_setup_hash" ]; then
    if [ -s "$_fs_stamp" ]; then echo "[setup] setup.py changed: reinstalling fairseq-syntax into $_fs_venv" >&2; fi
    FAIRSEQ_SYNTAX_KEEP_FAIRSEQ=1 "$_fs_venv/bin/python" -m pip --disable-pip-version-check -q install \
      -c "$_fs_root/examples/constraints.txt" --no-build-isolation -e "$_fs_root[test]" >&2 \
      && echo "$_fs_setup_hash" > "$_fs_stamp" \
      || echo "[setup] reinstalling failed (see above): going on with $_fs_venv as it is; the next run tries again" >&2
  fi
}
# Two scripts started together (the two training queues, a recipe beside the tests) must not build or
# reinstall into one environment at once: the first to arrive does it under a lock beside the environment,
# the other waits and then finds it done.
if [ ! -f "$_fs_stamp" ] || [ "$(cat "$_fs_stamp")" != "$_fs_setup_hash" ]; then
  if command -v flock > /dev/null; then
    mkdir -p "$(dirname "$_fs_venv")"
    { flock 9 && _fs_setup; } 9> "$_fs_venv.setup-lock" || { return 1 2>/dev/null || exit 1; }
  else
    _fs_setup || { return 1 2>/dev/null || exit 1; }
  fi
fi
# shellcheck disable=SC1091
source "$_fs_venv/bin/activate"
export OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}"
