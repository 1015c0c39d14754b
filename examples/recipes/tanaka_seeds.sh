#!/usr/bin/env bash
# The Tanaka multi-seed runs (seeds 2 and 3 of the rows that matter; seed 1 is each model's committed row), as
# two queues, one per core (examples/recipes/queue.sh: resumable, a finished model is skipped):
#
#   bash examples/recipes/tanaka_seeds.sh A    # Ja->En transformer family: 15 models
#   bash examples/recipes/tanaka_seeds.sh B    # En->Ja (9 models), then the Ja->En LSTM pair (3)
#   bash examples/recipes/tanaka_seeds.sh list # both lists
#
# WORK_ROOT (default <repo>/work) holds tanaka-ja-en/ and tanaka-en-ja/ (prepare.sh tanaka-ja-en first). Each
# queue puts a model's baseline of the same seed before it (the per-seed bootstrap test of evaluate.sh); a seed-2
# baseline that was trained before (transformer_seed2, lstm_luong_lr001_seed2) gets its committed translations
# as its evaluation when WORK has none, so its seed-2 models are tested against it too.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
WORK_ROOT="${WORK_ROOT:-$root/work}"
A="rel_seed2 dep_rel_seed2 pascal_seed2 sh_seed2 dbsa_enc_seed2 dbsa_sync_seed2 syncattn_seed2
   transformer_seed3 rel_seed3 dep_rel_seed3 pascal_seed3 sh_seed3 dbsa_enc_seed3 dbsa_sync_seed3 syncattn_seed3"
B_EN_JA="rel_seed2 dep_rel_seed2 pascal_wat_seed2 sh_seed2
         transformer_seed3 rel_seed3 dep_rel_seed3 pascal_wat_seed3 sh_seed3"
B_JA_EN="cky_lstm_lr001_seed2 lstm_luong_lr001_seed3 cky_lstm_lr001_seed3"

restore() {  # $1 = dataset, $2 = model: its committed translations as WORK's evaluation, unless WORK has one
  local dataset=$1 model=$2 hyp
  [ -f "$WORK_ROOT/$dataset/eval/$model/hyp.txt" ] && return
  hyp=$(ls "$root/examples/$dataset/results"/*/translations/"$model.txt" 2>/dev/null | head -1)
  [ -n "$hyp" ] || return 0
  mkdir -p "$WORK_ROOT/$dataset/eval/$model"
  cp "$hyp" "$WORK_ROOT/$dataset/eval/$model/hyp.txt"
  echo "[seeds] $dataset $model: the committed translations ($hyp) stand for its evaluation"
}

case "${1:-}" in
  A) restore tanaka-ja-en transformer_seed2
     WORK="$WORK_ROOT/tanaka-ja-en" bash "$root/examples/recipes/queue.sh" tanaka-ja-en $A ;;
  B) restore tanaka-en-ja transformer_seed2; restore tanaka-ja-en lstm_luong_lr001_seed2
     WORK="$WORK_ROOT/tanaka-en-ja" bash "$root/examples/recipes/queue.sh" tanaka-en-ja $B_EN_JA
     WORK="$WORK_ROOT/tanaka-ja-en" bash "$root/examples/recipes/queue.sh" tanaka-ja-en $B_JA_EN ;;
  list) echo "A (tanaka-ja-en):" $A; echo "B (tanaka-en-ja):" $B_EN_JA; echo "B (tanaka-ja-en):" $B_JA_EN ;;
  *) sed -n '2,13s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"; exit 1 ;;
esac
