#!/usr/bin/env bash
# Stages one job for a GPU machine without network access and with a job time limit. Here, where pip can
# download: the Tanaka Ja->En data-bin (the recipe's prepare, once), the carry folder (build_carry.sh: wheels,
# fairseq's source, the data), where a cluster limits what a job may copy, a check of the carry and the working
# tree against it (LIMIT_MIB), then the job to submit: its command, the folder to copy beside the checkout, its limit.
#
#   bash examples/gpu/stage.sh             # the real staging: about 10 minutes the first time (GiNZA parses the
#                                          # 51,000 Japanese sentences), a minute after (the carry alone)
#   SLICE=300 bash examples/gpu/stage.sh   # dry: the first SLICE pairs of each split, prepared and carried under
#                                          # /tmp/stage-slice (a carry that checks the staging only), same checks
#   bash examples/gpu/stage.sh --print     # the job only (tests/test_gpu_scripts.py runs its command)
#
# Variables: TANAKA_WORK (the recipe's WORK) [work/tanaka-ja-en]; CARRY [.carry]; TANAKA_DIR (the corpus, as
# examples/tanaka-ja-en/recipe.json's download reads it); PYTHON_VERSION (the GPU machine's Python,
# build_carry.sh) [3.12]; TIME_LIMIT_S (the job's time limit on your cluster, at least 300) [560]; LIMIT_MIB (where
# set, the most the job may copy to the machine, the working tree and the carry together).
# The command (examples/gpu/run.sh stall): install the carry (about 30 s), paired_timing.py (at most 150 s),
# then stall_matrix.py's eight trainings until BUDGET s from the start; BUDGET, 30 s below TIME_LIMIT_S, is a
# deadline the scripts keep (each writes its JSON as it goes). A failure in the
# first two minutes (the install, a bad option: every training fails within its first 40 s) shows in run.log.
# What it writes to gpu-out/ in the checkout (RESULTS=DIR: another folder): run.log, paired_timing.json and its log, stall_matrix.json, stall_matrix_logs.tar.gz.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
TIME_LIMIT_S=${TIME_LIMIT_S:-560}
[[ "$TIME_LIMIT_S" =~ ^[0-9]+$ ]] && [ "$TIME_LIMIT_S" -ge 300 ] || {
  echo "[stage] error: TIME_LIMIT_S=$TIME_LIMIT_S: the job needs at least 300 s (install, timing, trainings)" >&2; exit 1; }
BUDGET_S=$(( TIME_LIMIT_S - 30 ))  # the scripts' own deadline, before the cluster's
COMMAND="set -o pipefail; out=\"\${RESULTS:-gpu-out}\"; mkdir -p \"\$out\"; BUDGET=$BUDGET_S RESULTS=\"\$out\" bash examples/gpu/run.sh stall 2>&1 | tee \"\$out/run.log\""
say() { echo "[stage $(date +%T)] $*" >&2; }
die() { echo "[stage] error: $*" >&2; exit 1; }

print_job() {  # $1 = the carry folder as the job names it (relative to the repository root)
  python3 - "$COMMAND" "$1" "$TIME_LIMIT_S" <<'EOF'
import json, sys
command, carry, limit = sys.argv[1], sys.argv[2], int(sys.argv[3])
print("The GPU job. Copy the checkout with the folder below to the machine and run the command in the checkout")
print("with this time limit; its results go to gpu-out/ there (RESULTS=DIR before it: another folder):")
print(f"  command:    {command}")
print(f"  copy:       {json.dumps([carry])}")
print(f"  time limit: {limit} s")
print("job: " + json.dumps({"command": command, "copy": [carry], "time_limit_s": limit}))
EOF
}

if [ "${1:-}" = --print ]; then print_job .carry; exit 0; fi
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
# 3. what the GPU machine needs, and the size of what is copied to it
for f in manifest.txt tanaka/main/data-bin/.prepared tanaka/main/data-bin/dict.ja.txt; do
  [ -f "$CARRY/$f" ] || die "$CARRY/$f missing"
done
ls "$CARRY"/fairseq*.tar.gz > /dev/null 2>&1 || die "no fairseq source distribution in $CARRY"
[ -n "$(ls "$CARRY"/wheels/*.whl 2>/dev/null)" ] || die "no wheels in $CARRY/wheels"
carry_bytes=$(du -sb "$CARRY" | cut -f1)
tree_bytes=$(git ls-files -co --exclude-standard -z | xargs -0 -r stat -c %s 2>/dev/null | awk '{s += $1} END {print s + 0}')
total_mib=$(( (carry_bytes + tree_bytes + 1048575) / 1048576 ))
say "carry $(( carry_bytes / 1048576 )) MiB + working tree $(( tree_bytes / 1048576 )) MiB = $total_mib MiB to copy"
[ -z "${LIMIT_MIB:-}" ] || [ "$total_mib" -le $(( LIMIT_MIB - 2 )) ] ||
  die "$total_mib MiB to copy: over LIMIT_MIB=$LIMIT_MIB (less 2 MiB for what the job writes)"
say "staged in $(( $(date +%s) - started )) s"
carry_path=.carry
if [ "$(cd "$CARRY" && pwd)" != "$ROOT/.carry" ]; then
  carry_path="$CARRY"
  say "this carry is not the checkout's .carry: the job below does not apply as it is (a dry staging)"
fi
print_job "$carry_path"
