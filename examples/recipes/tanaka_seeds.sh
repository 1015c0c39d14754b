#!/usr/bin/env bash
# The Tanaka multi-seed runs (seeds 2 and 3 of the rows that matter; seed 1 is each model's committed row), as
# two queues to run side by side (examples/recipes/queue.sh: resumable, a finished model is skipped):
#
#   bash examples/recipes/tanaka_seeds.sh A    # Ja->En transformer family: 16 models, then cky_lstm_lr001_seed3
#   bash examples/recipes/tanaka_seeds.sh B    # En->Ja (10 models), then the Ja->En LSTM pair (4)
#   bash examples/recipes/tanaka_seeds.sh list # both lists
#
# WORK_ROOT (default <repo>/work) holds tanaka-ja-en/ and tanaka-en-ja/ (prepare.sh tanaka-ja-en first). Each
# queue puts a model's baseline of the same seed before it (the per-seed bootstrap test of evaluate.sh). A model
# of the lists committed from this CPU (examples/DATASET/results/*/MODEL.json, its machine.cpu) is not trained
# again: its committed translations stand for its evaluation, so a new work folder on a machine of the same CPU
# trains only what is missing. On another CPU every model trains, so that every row is tested against a
# baseline of its own CPU. Both lists end with cky_lstm_lr001_seed3, so that queue A, the shorter by about 3.5
# CPU-hours, takes it when it gets there first; the other queue finds the model's lock held (queue.sh), waits,
# and skips it. Its baseline, lstm_luong_lr001_seed3, is B's second Ja->En item, due before A evaluates
# cky_lstm_lr001_seed3 (were it not, evaluate.sh scores the model alone and says so: evaluate it again once
# the baseline is in).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
WORK_ROOT="${WORK_ROOT:-$root/work}"
A="transformer_seed2 rel_seed2 dep_rel_seed2 pascal_seed2 sh_seed2 dbsa_enc_seed2 dbsa_sync_seed2 syncattn_seed2
   transformer_seed3 rel_seed3 dep_rel_seed3 pascal_seed3 sh_seed3 dbsa_enc_seed3 dbsa_sync_seed3 syncattn_seed3
   cky_lstm_lr001_seed3"
B_EN_JA="transformer_seed2 rel_seed2 dep_rel_seed2 pascal_wat_seed2 sh_seed2
         transformer_seed3 rel_seed3 dep_rel_seed3 pascal_wat_seed3 sh_seed3"
B_JA_EN="lstm_luong_lr001_seed2 lstm_luong_lr001_seed3 cky_lstm_lr001_seed2 cky_lstm_lr001_seed3"

this_cpu() { sed -n 's/^model name[[:space:]]*: *//; T; s/[[:space:]]*$//; p; q' /proc/cpuinfo 2> /dev/null; }

cpu_of() {  # $1 = a results JSON: exit 0 if it ran on the CPU named $2 (a name: none matches no name)
  [ -n "$2" ] || return 1
  python3 -c 'import json, sys
sys.exit(json.load(open(sys.argv[1])).get("machine", {}).get("cpu", "").strip() != sys.argv[2].strip())' "$1" "$2"
}

restore() {  # $1 = dataset, $2 = model: its committed run of this CPU as a finished item of the queue, if any
  # (WORK/eval/MODEL/.restored names the JSON it came from, in the repository); a restored run of another
  # CPU is taken back, so that the queue trains the model here. Translations without .done or .restored (an
  # evaluation at work or cut short) are left to evaluate.sh, which removes .restored when it evaluates here.
  local dataset=$1 model=$2 eval="$WORK_ROOT/$1/eval/$2" json cpu
  cpu=$(this_cpu)
  if [ -f "$eval/.restored" ]; then
    json="$root/$(cat "$eval/.restored")"
    if [ -f "$json" ] && cpu_of "$json" "$cpu"; then return 0; fi
    rm -f "$eval/hyp.txt" "$eval/.done" "$eval/.restored"
    echo "[seeds] $dataset $model: its restored run ($json) is not of this CPU ($cpu): the queue trains it"
  fi
  [ ! -f "$eval/.done" ] || return 0  # trained and evaluated here
  for json in "$root/examples/$dataset/results"/*/"$model.json"; do
    [ -f "$json" ] && cpu_of "$json" "$cpu" || continue
    if [ ! -f "$(dirname "$json")/translations/$model.txt" ]; then
      echo "[seeds] $dataset $model: $json has no translations/$model.txt beside it: the queue trains it"; continue
    fi
    mkdir -p "$eval"
    cp "$(dirname "$json")/translations/$model.txt" "$eval/hyp.txt"
    echo "${json#"$root"/}" > "$eval/.restored"  # relative to the repository, which may move
    touch "$eval/.done"
    echo "[seeds] $dataset $model: the committed translations of this CPU ($json) stand for its evaluation"
    return 0
  done
}

restore_all() {  # $1 = dataset, then its models: each committed run of this CPU as a finished queue item
  local dataset=$1 model; shift
  for model in "$@"; do restore "$dataset" "$model"; done
}

case "${1:-}" in
  A) restore_all tanaka-ja-en $A
     WORK="$WORK_ROOT/tanaka-ja-en" bash "$root/examples/recipes/queue.sh" tanaka-ja-en $A ;;
  B) restore_all tanaka-en-ja $B_EN_JA; restore_all tanaka-ja-en $B_JA_EN
     WORK="$WORK_ROOT/tanaka-en-ja" bash "$root/examples/recipes/queue.sh" tanaka-en-ja $B_EN_JA
     WORK="$WORK_ROOT/tanaka-ja-en" bash "$root/examples/recipes/queue.sh" tanaka-ja-en $B_JA_EN ;;
  list) echo "A (tanaka-ja-en):" $A; echo "B (tanaka-en-ja):" $B_EN_JA; echo "B (tanaka-ja-en):" $B_JA_EN ;;
  *) sed -n '2,18s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"; exit 1 ;;
esac
