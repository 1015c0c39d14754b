#!/usr/bin/env bash
# Sourced by examples/demo/run.sh and tests/run.sh: builds the project's
# virtual environment once (examples/build_env.sh) and activates it. Later
# calls find the finished environment and only activate it.
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
if [ ! -f "$_fs_stamp" ]; then
  echo "[setup] creating $_fs_venv (one time, about 5-10 minutes)" >&2
  if [ -e "$_fs_venv" ]; then
    if [ -f "$_fs_venv/.fairseq_syntax_building" ]; then
      rm -rf "$_fs_venv"  # an unfinished build of ours
    else
      echo "[setup] $_fs_venv exists but is not a fairseq-syntax environment: remove it or set FAIRSEQ_SYNTAX_VENV" >&2
      return 1 2>/dev/null || exit 1
    fi
  fi
  if bash "$_fs_root/examples/build_env.sh" "$_fs_venv"; then
    sha256sum "$_fs_root/setup.py" | cut -c1-16 > "$_fs_stamp"
  else
    echo "[setup] building $_fs_venv failed (see above); the next run starts it again" >&2
    return 1 2>/dev/null || exit 1
  fi
fi
# setup.py changed since the build (new console scripts or requirements): reinstall the plugin and any
# new requirement (fairseq and torch stay as built)
_fs_setup_hash="$(sha256sum "$_fs_root/setup.py" | cut -c1-16)"
if [ "$(cat "$_fs_stamp")" != "$_fs_setup_hash" ]; then
  if [ -s "$_fs_stamp" ]; then echo "[setup] setup.py changed: reinstalling fairseq-syntax into $_fs_venv" >&2; fi
  FAIRSEQ_SYNTAX_KEEP_FAIRSEQ=1 "$_fs_venv/bin/python" -m pip --disable-pip-version-check -q install \
    -c "$_fs_root/examples/constraints.txt" --no-build-isolation -e "$_fs_root[test]" >&2 \
    && echo "$_fs_setup_hash" > "$_fs_stamp"
fi
# shellcheck disable=SC1091
source "$_fs_venv/bin/activate"
export OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}"
