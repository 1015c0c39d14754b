#!/usr/bin/env bash
# Sourced by examples/demo/run.sh and tests/run.sh: builds the project's
# virtual environment once (examples/build_env.sh) and activates it. Later
# calls find the finished environment and only activate it.
#
#   FAIRSEQ_SYNTAX_VENV   where the environment lives (default <repo>/.venv)
#   PYTHON                the interpreter used to create it (default python3.11)
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
    touch "$_fs_stamp"
  else
    echo "[setup] building $_fs_venv failed (see above); the next run starts it again" >&2
    return 1 2>/dev/null || exit 1
  fi
fi
# shellcheck disable=SC1091
source "$_fs_venv/bin/activate"
export OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}"
