#!/usr/bin/env bash
# Stages the next GPU session's one command, here on the CPU, where pip can download: the Tanaka Ja->En data-bin
# (the recipe's prepare, once), the carry folder (build_carry.sh: wheels, fairseq's source, the data), checks of
# what will travel against the device's limits, and then prints the device call to make: one `run` with its
# command, carry and timeout_s, then `give_back`.
#
#   bash examples/gpu/stage.sh             # the real staging: about 10 minutes the first time (GiNZA parses the
#                                          # 51,000 Japanese sentences), a minute after (the carry alone)
#   SLICE=300 bash examples/gpu/stage.sh   # dry: the first SLICE pairs of each split, prepared and carried under
#                                          # /tmp/stage-slice (a carry nobody would take to a GPU), same checks
#   bash examples/gpu/stage.sh --print     # the call only (tests/test_gpu_scripts.py runs this call's command)
#
# Variables: TANAKA_WORK (the recipe's WORK) [work/tanaka-ja-en]; CARRY [.carry]; TANAKA_DIR (the corpus, as
# examples/tanaka-ja-en/recipe.json's download reads it); PYTHON_VERSION (the device's Python, build_carry.sh) [3.12].
# The command (examples/gpu/run.sh stall): install the carry (about 30 s), paired_timing.py (at most 150 s),
# then stall_matrix.py's eight trainings until BUDGET s from the start; BUDGET is a deadline the scripts keep
# (each writes its JSON as it goes), TIMEOUT_S the device tool's limit above it. One call of about 9.5 minutes
# and the machine's start (1-2 minutes) leave about 3 minutes of a session's 15: enough to run it again after a
# failure in its first two minutes (the install, a bad option: every training fails within its first 40 s),
# not after a full run. What comes back: run.log, paired_timing.json and its log, stall_matrix.json,
# stall_matrix_logs.tar.gz (5 of the 8 files a command returns).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
BUDGET_S=530
TIMEOUT_S=560
LIMIT_MIB=64  # the working tree and the carried paths, together
COMMAND="set -o pipefail; BUDGET=$BUDGET_S bash examples/gpu/run.sh stall 2>&1 | tee \"\$OUT/run.log\""
say() { echo "[stage $(date +%T)] $*" >&2; }
die() { echo "[stage] error: $*" >&2; exit 1; }

print_call() {  # $1 = the carry path as the call names it (relative to the repository root)
  python3 - "$COMMAND" "$1" "$TIMEOUT_S" <<'EOF'
import json, sys
command, carry, timeout = sys.argv[1], sys.argv[2], int(sys.argv[3])
assert len(command) < 2000 and timeout <= 600
print("The device call (run, then give_back unless it is run again at once):")
print(f"  command:   {command}")
print(f"  carry:     {json.dumps([carry])}")
print(f"  timeout_s: {timeout}")
print("call: " + json.dumps({"command": command, "carry": [carry], "timeout_s": timeout}))
EOF
}

if [ "${1:-}" = --print ]; then print_call .carry; exit 0; fi
[ -z "${1:-}" ] || die "usage: [SLICE=N] bash examples/gpu/stage.sh [--print]"
# shellcheck disable=SC1091
source "$ROOT/examples/setup_env.sh"
started=$(date +%s)
if [ -n "${SLICE:-}" ]; then  # dry: a slice of the corpus, nothing under the checkout
  base=/tmp/stage-slice
  TANAKA_WORK="${TANAKA_WORK:-$base/tanaka}" CARRY="${CARRY:-$base/carry}"
  corpus="${TANAKA_DIR:-${FAIRSEQ_SYNTAX_SHARED:-$ROOT/../shared}/data/small_parallel_enja}"
  [ -f "$corpus/train.ja" ] || die "SLICE needs the corpus in $corpus (set TANAKA_DIR)"
  mkdir -p "$base/local"
  for pair in train:train dev:valid test:test; do  # as the recipe's download (runner/sources/tanaka.py): the Japanese without KyTea's spaces
    head -n "$SLICE" "$corpus/${pair%%:*}.ja" | sed 's/ //g' > "$base/local/${pair#*:}.ja"
    head -n "$SLICE" "$corpus/${pair%%:*}.en" > "$base/local/${pair#*:}.en"
  done
  export LOCAL_DATA="$base/local"
else
  TANAKA_WORK="${TANAKA_WORK:-$ROOT/work/tanaka-ja-en}" CARRY="${CARRY:-$ROOT/.carry}"
fi
export TANAKA_WORK CARRY

# 1. the data-bin the trainings read (prepare.sh resumes an interrupted run and redoes nothing finished)
if [ -f "$TANAKA_WORK/main/data-bin/.prepared" ] && [ -f "$TANAKA_WORK/main/work/test.tok.en" ]; then
  say "data-bin prepared before: $TANAKA_WORK/main/data-bin"
else
  say "preparing Tanaka Ja->En into $TANAKA_WORK (GiNZA and UDPipe parse every sentence: about 9 minutes in full)"
  WORK="$TANAKA_WORK" bash examples/tanaka-ja-en/prepare.sh transformer dbsa_enc
fi
# 2. the carry (the wheels, fairseq's source, the data); rebuilt each time: a minute, mostly pip
bash examples/gpu/build_carry.sh "$TANAKA_WORK"
# 3. what the device needs and what travels
for f in manifest.txt tanaka/main/data-bin/.prepared tanaka/main/data-bin/dict.ja.txt; do
  [ -f "$CARRY/$f" ] || die "$CARRY/$f missing"
done
ls "$CARRY"/fairseq*.tar.gz > /dev/null 2>&1 || die "no fairseq source distribution in $CARRY"
[ -n "$(ls "$CARRY"/wheels/*.whl 2>/dev/null)" ] || die "no wheels in $CARRY/wheels"
carry_bytes=$(du -sb "$CARRY" | cut -f1)
tree_bytes=$(git ls-files -co --exclude-standard -z | xargs -0 -r stat -c %s 2>/dev/null | awk '{s += $1} END {print s + 0}')
total_mib=$(( (carry_bytes + tree_bytes + 1048575) / 1048576 ))
say "carry $(( carry_bytes / 1048576 )) MiB + working tree $(( tree_bytes / 1048576 )) MiB = $total_mib MiB of the $LIMIT_MIB MiB a call takes"
[ "$total_mib" -le $(( LIMIT_MIB - 2 )) ] || die "$total_mib MiB would travel: over the $LIMIT_MIB MiB limit (less 2 MiB for what is written meanwhile)"
say "staged in $(( $(date +%s) - started )) s"
carry_path=.carry
if [ "$(cd "$CARRY" && pwd)" != "$ROOT/.carry" ]; then
  carry_path="$CARRY"
  say "this carry is not the checkout's .carry: the call below does not apply as it is (a dry staging)"
fi
print_call "$carry_path"
