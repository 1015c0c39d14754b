#!/usr/bin/env bash
# The GPU run, one command per step, for a CUDA machine with torch and no network (the carry folder that
# examples/gpu/build_carry.sh makes holds the rest); run from the repository root:
#
#   bash examples/gpu/run.sh check   # install, then device_check.py: CUDA against CPU on every preset, fp16 /
#                                    # memory-efficient fp16 / amp training through the CLIs, speed and memory
#                                    # at Transformer base (about 7 minutes on one H100, the install included)
#   bash examples/gpu/run.sh table   # install, then tanaka_base.py: the Tanaka Ja->En table at Transformer base
#
# On your own GPU machine, in an environment with fairseq and the plugin (docs/install.md), and no carry folder:
#   DATA=work/tanaka-ja-en/main/data-bin SRC=ja TGT=en bash examples/gpu/run.sh check
#   TANAKA=work/tanaka-ja-en bash examples/gpu/run.sh table
# Variables: OUT (where the JSON, logs and archives go) [$OUT or ./gpu-out]; CARRY [.carry: installed when it
# exists]; SITE (where the carry is installed) [/tmp/site]; DATA SRC TGT (check's data-bin, with syntax on both
# sides) [the carry's Tanaka, ja, en]; TANAKA (table's recipe WORK) [the carry's]; BUDGET (seconds for the
# step; table keeps to it: give it the device time left less a minute for the start and install) [check 360
# (with the install, about 7 minutes), table 400]; FAIRSEQ_SYNTAX_COMMIT (the commit device_check.json records where the tree has no .git); DEVICE=cpu TINY=1: the dry run on a CPU (tests/test_gpu_scripts.py); EXTRA: more
# options of the step's script (device_check.py / tanaka_base.py --help).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
step=${1:?usage: run.sh check|table}
OUT="${OUT:-$ROOT/gpu-out}"
CARRY="${CARRY:-$ROOT/.carry}"
SITE="${SITE:-/tmp/site}"
DEVICE="${DEVICE:-cuda}"
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 PYTHONWARNINGS="${PYTHONWARNINGS:-ignore}"
say() { echo "[run.sh $(date +%T)] $*" >&2; }

if [ "$DEVICE" = cuda ] && [ -d "$CARRY" ]; then  # a bare machine: install the carry first
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader >&2 || true
  stamp="$SITE/.installed-$(cat "$CARRY/manifest.txt" "$ROOT/setup.py" | sha256sum | cut -c1-16)"
  if [ ! -f "$stamp" ]; then
    python3 "$ROOT/examples/gpu/install.py" --carry "$CARRY" --target "$SITE"
    touch "$stamp"
  else
    say "installed before: $SITE"
  fi
  export PYTHONPATH="$SITE:$ROOT${PYTHONPATH:+:$PYTHONPATH}" PATH="$SITE/bin:$PATH" FAIRSEQ_SYNTAX_VENV=none
  DATA="${DATA:-$CARRY/tanaka/main/data-bin}" SRC="${SRC:-ja}" TGT="${TGT:-en}"
  python=python3
else  # an environment that has fairseq and the plugin (yours, or the dry run's)
  say "no install: this environment's $(command -v python) (no $CARRY, or DEVICE=$DEVICE)"
  python=python
fi
read -r -a extra <<< "${EXTRA:-}"

case $step in
  check)
    : "${DATA:?DEVICE=cpu: set DATA (a data-bin with syntax on both sides), SRC and TGT}" "${SRC:?}" "${TGT:?}"
    tiny=(); [ "${TINY:-0}" = 1 ] && tiny=(--tiny)
    say "device_check.py on $DEVICE"
    $python "$ROOT/examples/gpu/device_check.py" --device "$DEVICE" --data "$DATA" -s "$SRC" -t "$TGT" \
      --out "$OUT" --budget "${BUDGET:-360}" "${tiny[@]}" "${extra[@]}" ;;
  table)
    cpu=(); [ "$DEVICE" = cpu ] && cpu=(--cpu --size cpu)
    say "tanaka_base.py on $DEVICE"
    $python "$ROOT/examples/gpu/tanaka_base.py" --data "${TANAKA:-$CARRY/tanaka}" --out "$OUT" \
      --budget "${BUDGET:-400}" "${cpu[@]}" "${extra[@]}" ;;
  *) echo "usage: run.sh check|table" >&2; exit 2 ;;
esac
