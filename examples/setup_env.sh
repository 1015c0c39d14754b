#!/usr/bin/env bash
# Creates the project's virtual environment once (default: <repo>/.venv) and
# activates it. Sourced by examples/demo/run.sh and tests/run.sh; a second
# call finds the finished environment and only activates it.
#
#   FAIRSEQ_SYNTAX_VENV   where the environment lives (default <repo>/.venv)
#   PYTHON                the interpreter used to create it (default python3.11)
#
# Why the steps look like this: PyPI's fairseq 0.12.2 does not build on
# Python 3.11; the fork fairseq-fixed==0.12.3.1 does, but only when built
# against the torch that is already installed (--no-build-isolation), else pip
# pulls a multi-GB CUDA torch into its build env. Its run-time needs are
# installed by hand for the same reason (and torchaudio never: fairseq imports
# it lazily and it would drag in a CUDA torch).
_fs_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
_fs_venv="${FAIRSEQ_SYNTAX_VENV:-$_fs_root/.venv}"
_fs_stamp="$_fs_venv/.fairseq_syntax_setup_v1"
if [ ! -f "$_fs_stamp" ]; then
  (
    set -euo pipefail
    echo "[setup] creating $_fs_venv (one time, about 5-10 minutes)" >&2
    "${PYTHON:-python3.11}" -m venv "$_fs_venv"
    pip="$_fs_venv/bin/python -m pip --disable-pip-version-check -q"
    con="-c $_fs_root/examples/constraints.txt"
    $pip install $con --upgrade pip 'setuptools<81' wheel
    $pip install $con torch==2.13.0 numpy cython
    echo "[setup] building fairseq-fixed 0.12.3.1 (C++ extensions, a few minutes)" >&2
    $pip install $con --no-build-isolation --no-deps fairseq-fixed==0.12.3.1
    $pip install $con cffi hydra-core omegaconf regex sacrebleu tqdm bitarray \
      scikit-learn packaging
    $pip install $con stanza subword-nmt pytest ufal.udpipe ja-ginza
    FAIRSEQ_SYNTAX_KEEP_FAIRSEQ=1 $pip install $con --no-build-isolation -e "$_fs_root"
    touch "$_fs_stamp"
  ) || { echo "[setup] failed; remove $_fs_venv and retry" >&2; return 1 2>/dev/null || exit 1; }
fi
# shellcheck disable=SC1091
source "$_fs_venv/bin/activate"
export OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}"
