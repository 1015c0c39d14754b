#!/usr/bin/env bash
# The GPU run, one command per step, for a CUDA machine with torch and no network (the carry folder that
# examples/gpu/build_carry.sh makes holds the rest); run from the repository root:
#
#   bash examples/gpu/run.sh check   # install, then device_check.py: CUDA against CPU on every preset, fp16 /
#                                    # memory-efficient fp16 / amp training through the CLIs, speed and memory
#                                    # at Transformer base (about 7 minutes on one H100, the install included)
#   bash examples/gpu/run.sh table   # install, then tanaka_base.py: the Tanaka Ja->En table at Transformer base
#   bash examples/gpu/run.sh stall   # install, then paired_timing.py (speed and peak memory, at most
#                                    # TIMING_BUDGET s), then stall_matrix.py (eight trainings side by side, the
#                                    # time left): the one command examples/gpu/stage.sh prepares and prints
#
# On your own GPU machine, in an environment with fairseq and the plugin (docs/install.md), and no carry folder:
#   DATA=work/tanaka-ja-en/main/data-bin SRC=ja TGT=en bash examples/gpu/run.sh check
#   TANAKA=work/tanaka-ja-en bash examples/gpu/run.sh table
# Variables: RESULTS (where the JSON, logs and archives go) [gpu-out/ in the checkout]; CARRY [.carry: installed when it
# exists]; SITE (where the carry is installed) [/tmp/site]; DATA SRC TGT (check's data-bin, with syntax on both
# sides) [the carry's Tanaka, ja, en]; TANAKA (table's recipe WORK) [the carry's]; BUDGET (seconds for the
# step; table keeps to it: give it the job's time limit less a minute for the install) [check 360
# (with the install, about 7 minutes), table 400]; FAIRSEQ_SYNTAX_COMMIT (the commit device_check.json records where the tree has no .git); DEVICE=cpu TINY=1: the dry run on a CPU (tests/test_gpu_scripts.py); EXTRA: more
# options of the step's script (device_check.py / tanaka_base.py / stall_matrix.py --help). stall only:
# BUDGET is counted from this script's start (the install included) [530]; TIMING_BUDGET (seconds for
# paired_timing.py, killed past it; the matrix gets what is left) [150]; TIMING_EXTRA (paired_timing.py's
# options: the dry run's smaller blocks) [--blocks wmt:8192,wmt:32768 --batches 2: the WMT-like blocks that
# decide, in both dtypes]; UPDATES (each training's) [600].
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
step=${1:?usage: run.sh check|table|stall}
started=$(date +%s)
RESULTS="${RESULTS:-$ROOT/gpu-out}"
CARRY="${CARRY:-$ROOT/.carry}"
SITE="${SITE:-/tmp/site}"
DEVICE="${DEVICE:-cuda}"
mkdir -p "$RESULTS"
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
      --out "$RESULTS" --budget "${BUDGET:-360}" "${tiny[@]}" "${extra[@]}" ;;
  table)
    cpu=(); [ "$DEVICE" = cpu ] && cpu=(--cpu --size cpu)
    say "tanaka_base.py on $DEVICE"
    $python "$ROOT/examples/gpu/tanaka_base.py" --data "${TANAKA:-$CARRY/tanaka}" --out "$RESULTS" \
      --budget "${BUDGET:-400}" "${cpu[@]}" "${extra[@]}" ;;
  stall)
    deadline=$(( started + ${BUDGET:-530} ))
    cpu=(); tiny=(); [ "$DEVICE" = cpu ] && cpu=(--cpu --size cpu) && tiny=(--tiny)
    timing="$ROOT/examples/gpu/paired_timing.py" tlog="${TMPDIR:-/tmp}/paired_timing.log" tbudget=${TIMING_BUDGET:-150}
    read -r -a textra <<< "${TIMING_EXTRA---blocks wmt:8192,wmt:32768 --batches 2}"  # both dtypes in the budget
    if [ -f "$timing" ]; then  # RESULTS/paired_timing.json (rewritten after each block) and its log
      say "paired_timing.py on $DEVICE, at most $tbudget s"
      code=0
      timeout -k 10 "$tbudget" $python "$timing" --device "$DEVICE" --out "$RESULTS" --budget $(( tbudget - 20 )) \
        "${tiny[@]}" "${textra[@]}" > "$tlog" 2>&1 || code=$?
      [ "$code" = 0 ] || say "paired_timing.py: exit $code (124: killed at $tbudget s); the matrix runs on"
      tail -c 20000 "$tlog" > "$RESULTS/paired_timing.log"
    else
      say "no $timing: the speed and memory step is skipped"
    fi
    left=$(( deadline - $(date +%s) ))
    say "stall_matrix.py on $DEVICE: $left s left of BUDGET ${BUDGET:-530}"
    $python "$ROOT/examples/gpu/stall_matrix.py" --data "${TANAKA:-$CARRY/tanaka}" --out "$RESULTS" --budget "$left" \
      --updates "${UPDATES:-600}" "${cpu[@]}" "${extra[@]}" ;;
  *) echo "usage: run.sh check|table|stall" >&2; exit 2 ;;
esac
