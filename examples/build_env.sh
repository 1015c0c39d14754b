#!/usr/bin/env bash
# Builds the project's virtual environment at $1 (called once by setup_env.sh).
#
# Why the steps look like this: PyPI's fairseq 0.12.2 does not build on
# Python 3.11; the fork fairseq-fixed==0.12.3.1 does, but only when built
# against the torch that is already installed (--no-build-isolation), else pip
# pulls a multi-GB CUDA torch into its build env. Its run-time needs are
# installed by hand for the same reason (and torchaudio never: fairseq imports
# it lazily and it would drag in a CUDA torch).
set -euo pipefail
venv="$1"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"${PYTHON:-python3.11}" -m venv "$venv"
touch "$venv/.fairseq_syntax_building"
pip="$venv/bin/python -m pip --disable-pip-version-check -q"
con="-c $root/examples/constraints.txt"
$pip install $con --upgrade pip 'setuptools<81' wheel
$pip install $con torch==2.13.0 numpy cython
echo "[setup] building fairseq-fixed 0.12.3.1 (C++ extensions, a few minutes)" >&2
$pip install $con --no-build-isolation --no-deps fairseq-fixed==0.12.3.1
$pip install $con cffi hydra-core omegaconf regex 'sacrebleu[ja]' tqdm bitarray scikit-learn packaging
echo "[setup] (if pip reported above that fairseq-fixed requires torchaudio: expected, fairseq imports it lazily and it is never needed here)" >&2
$pip install $con stanza subword-nmt pytest pytest-xdist ufal.udpipe ja-ginza
FAIRSEQ_SYNTAX_KEEP_FAIRSEQ=1 $pip install $con --no-build-isolation -e "$root[test]"
"$venv/bin/python" -c "import fairseq, fairseq_syntax, torch; print('[setup] fairseq', fairseq.__version__, 'torch', torch.__version__)" >&2
