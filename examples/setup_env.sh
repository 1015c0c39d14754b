#!/usr/bin/env bash
# Sourced by every recipe script, examples/demo/run.sh and tests/run.sh: the environment the commands run in.
#
# The active environment is used as it is when its python (`python`, else `python3`) has fairseq and THIS
# checkout's fairseq_syntax (`pip install -e .`; another checkout's plugin does not count). Otherwise the project's
# own environment is built once (examples/build_env.sh, announced in one line first) and activated; after setup.py
# changed the plugin is reinstalled into it. Scripts started together build once, under a lock (flock) on
# <venv>.setup-lock.
#
#   FAIRSEQ_SYNTAX_VENV   where the project's environment lives (default <repo>/.venv; when set, it is used even
#                         where the active one would do); "none": use the python and the commands on PATH as they
#                         are, unchecked (an environment made otherwise, e.g. examples/gpu/install.py)
#   PYTHON                the interpreter used to create it (default python3.11)
if [ "${FAIRSEQ_SYNTAX_VENV:-}" = none ]; then
  export OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}"
  return 0 2>/dev/null || exit 0
fi
_fs_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# the active python's verdict, asked from / (a python's folder comes first on its path), importing nothing:
# "self" (the project's .venv, active), "use PREFIX" (fairseq and this checkout's plugin), else why not
_fs_probe='import importlib.util as u, os, sys
root, venv, exe = sys.argv[1:]
p, prefix = u.find_spec("fairseq_syntax"), os.path.realpath(sys.prefix)
plugin = os.path.dirname(os.path.dirname(os.path.realpath(p.origin))) if p and p.origin else None
print("self" if prefix == venv else f"the active python ({exe}) has no fairseq" if not u.find_spec("fairseq")
      else f"the active python ({exe}) has fairseq but not fairseq_syntax" if not plugin else f"the active python "
      f"({exe}) imports fairseq_syntax from {plugin}, not from this checkout" if plugin != root else f"use {prefix}")'
_fs_python="$(command -v python || command -v python3 || true)"
_fs_why=""  # why the active environment is not used (said in the line announcing a build)
if [ -n "${FAIRSEQ_SYNTAX_VENV:-}" ]; then
  _fs_why="FAIRSEQ_SYNTAX_VENV names it"
elif [ -z "$_fs_python" ]; then
  _fs_why="no python on PATH"
else
  _fs_seen="$(cd / && "$_fs_python" -c "$_fs_probe" "$(realpath "$_fs_root")" "$(realpath -m "$_fs_root/.venv")" \
    "$_fs_python" 2>/dev/null)" || _fs_seen="$_fs_python does not run"
  case $_fs_seen in
    self) ;;  # the project's environment itself, active: checked and kept up to date below
    "use "*)  # the active environment has fairseq and this checkout's plugin: use it as it is
      _fs_missing=""
      for _fs_cmd in $(grep -o '"fairseq-syntax-[a-z-]*=' "$_fs_root/setup.py" | tr -d '"='); do
        command -v "$_fs_cmd" > /dev/null || _fs_missing="$_fs_missing $_fs_cmd"
      done
      [ -z "$_fs_missing" ] || echo "[setup] the active environment (${_fs_seen#use }) lacks the console" \
        "scripts$_fs_missing (installed from an older setup.py): run pip install -e $_fs_root there" >&2
      export OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}"
      return 0 2>/dev/null || exit 0 ;;
    *) _fs_why="$_fs_seen" ;;
  esac
fi
_fs_venv="${FAIRSEQ_SYNTAX_VENV:-$_fs_root/.venv}"
_fs_stamp="$_fs_venv/.fairseq_syntax_setup_v1"
_fs_setup_hash="$(sha256sum "$_fs_root/setup.py" | cut -c1-16)"
_fs_setup() {  # build the environment, or reinstall the plugin after setup.py changed; run under the lock
  if [ ! -f "$_fs_stamp" ]; then
    echo "[setup] building a virtual environment in $_fs_venv (torch CPU, fairseq, this plugin: about 2 GB, 5-10" \
      "minutes, once) because ${_fs_why:-it is not built yet}; to use your own environment instead, install this" \
      "checkout into it (pip install -e $_fs_root), activate it and run again, or set FAIRSEQ_SYNTAX_VENV=none" >&2
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
# Two scripts started together (two training queues, a recipe beside the tests): the first builds under the lock,
# the other waits and finds it done.
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
