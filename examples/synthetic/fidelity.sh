#!/usr/bin/env bash
# Fidelity report on the synthetic corpus: BLEU of each model at equal updates,
# and the UAS of the parse heads of the models that have them.
#
#   bash examples/synthetic/fidelity.sh [MODEL ...]     (default: transformer dbsa)
#
# MODEL is one of: transformer, dbsa, dbsa_enc, dbsa_dec, sisa (parse heads);
# rel, dep, dep_rel (relative positions, k = l = 2); noabs, dep_noabs (no
# absolute encoder positions: the setting of Omote et al.'s Table 3 ablation);
# pascal (2 of 4 heads in layer 1), sh (10-dim label embeddings), ch (a plain
# transformer on the C&H translate + parse corpus, built by preprocess/multitask.py);
# syncattn (parse heads in layer 1, C from decoder layer 3, lambda_dep 0.5,
# lambda_sync 0.5) and dbsa_l1 (its DBSA baseline: the same heads and lambda_dep);
# lstm_luong and cky_lstm (LSTM ANMT with dot / CKY-based attention, d 128,
# gradient clipping 3.0 as in Watanabe et al. 2017; no parse); cky_lstm_du (cky_lstm with the paper's
# Deduction Unit literally: no normalisation of its output, --cky-norm none).
# Models train one after another (PARALLEL=1: all at once, one core each).
# Variables: FIDELITY_DIR [work/fidelity], UPDATES [2000], TRAIN [20000], SEED [1].
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
# shellcheck disable=SC1091
source "$ROOT/examples/setup_env.sh"
# shellcheck disable=SC1091
source "$ROOT/examples/recipes/pipeline.sh"
cd "$ROOT"
DIR="${FIDELITY_DIR:-$ROOT/work/fidelity}"
UPDATES="${UPDATES:-2000}"
TRAIN="${TRAIN:-20000}"
SEED="${SEED:-1}"
MODELS=("$@")
[ ${#MODELS[@]} -gt 0 ] || MODELS=(transformer dbsa)
export PYTHONWARNINGS="${PYTHONWARNINGS:-ignore}"
mkdir -p "$DIR"
if [ ! -f "$DIR/data-bin/train.src-tgt.tgt.heads.idx" ]; then
  python preprocess/synth.py -o "$DIR/raw" --seed "$SEED" --train "$TRAIN" --valid 500 --test 500
  python preprocess/prepare.py -s src -t tgt --trainpref "$DIR/raw/train" --validpref "$DIR/raw/valid" \
    --testpref "$DIR/raw/test" --destdir "$DIR/data-bin" --bpe-merges 2000 --no-progress > "$DIR/prepare.log" 2>&1
fi
DEP=(--criterion label_smoothed_cross_entropy_with_dependency)

model_args() {
  case $1 in
    transformer) echo "--arch transformer --criterion label_smoothed_cross_entropy" ;;
    dbsa) echo "--arch transformer_dbsa --dbsa-encoder-layer 2 --dbsa-decoder-layer 2 ${DEP[*]}" ;;
    dbsa_enc) echo "--arch transformer_dbsa_enc --dbsa-encoder-layer 2 ${DEP[*]}" ;;
    dbsa_dec) echo "--arch transformer_dbsa_dec --dbsa-decoder-layer 2 ${DEP[*]}" ;;
    sisa) echo "--arch transformer_sisa --dbsa-encoder-layer 2 ${DEP[*]}" ;;
    rel) echo "--arch transformer_rel --criterion label_smoothed_cross_entropy" ;;
    dep) echo "--arch transformer_dep --criterion label_smoothed_cross_entropy" ;;
    dep_rel) echo "--arch transformer_dep_rel --criterion label_smoothed_cross_entropy" ;;
    noabs) echo "--arch syntax_transformer --rel-no-absolute-positions --criterion label_smoothed_cross_entropy" ;;
    pascal) echo "--arch transformer_pascal --pascal-heads 2 --criterion label_smoothed_cross_entropy" ;;
    sh) echo "--arch transformer_sh --criterion label_smoothed_cross_entropy" ;;
    ch) echo "--arch transformer --criterion label_smoothed_cross_entropy" ;;
    syncattn) echo "--arch transformer_syncattn --sync-layer 3 --criterion label_smoothed_cross_entropy_with_sync" ;;
    dbsa_l1) echo "--arch transformer_dbsa --dbsa-encoder-layer 1 --dbsa-decoder-layer 1 ${DEP[*]} \
      --dependency-lambda-enc 0.5 --dependency-lambda-dec 0.5" ;;
    lstm_luong) echo "--arch lstm_luong --embed-dim 128 --clip-norm 3.0 --criterion label_smoothed_cross_entropy" ;;
    cky_lstm) echo "--arch cky_lstm --embed-dim 128 --clip-norm 3.0 --criterion label_smoothed_cross_entropy" ;;
    cky_lstm_du) echo "--arch cky_lstm --cky-norm none --embed-dim 128 --clip-norm 3.0 \
      --criterion label_smoothed_cross_entropy" ;;
    dep_noabs) echo "--arch transformer_dep --rel-no-absolute-positions --criterion label_smoothed_cross_entropy" ;;
    *) echo "unknown model $1" >&2; exit 2 ;;
  esac
}

run_model() {
  local m=$1 data="$DIR/data-bin"
  if [ "$m" = ch ]; then  # C&H: its own corpus (translate + parse), same BPE settings
    data="$DIR/ch-bin"
    if [ ! -f "$data/dict.tgt.txt" ]; then
      python preprocess/multitask.py -s src -t tgt --trainpref "$DIR/raw/train" --validpref "$DIR/raw/valid" \
        --testpref "$DIR/raw/test" -o "$DIR/ch-raw" > "$DIR/multitask.log"
      python preprocess/prepare.py -s src -t tgt --trainpref "$DIR/ch-raw/train" --validpref "$DIR/ch-raw/valid" \
        --testpref "$DIR/ch-raw/test" --destdir "$data" --syntax none --bpe-merges 2000 --no-progress \
        >> "$DIR/multitask.log" 2>&1
    fi
  fi
  local size=("${SMALL_TRANSFORMER[@]}" --share-all-embeddings)
  if [[ "$m" == *lstm* ]]; then size=(); fi  # the LSTM models take their size from model_args
  # shellcheck disable=SC2046
  pipeline_train "$DIR/train.$m.log" "$data" "$DIR/checkpoints/$m" \
    $(model_args "$m") "${size[@]}" --dropout 0.1 --label-smoothing 0.1 \
    --optimizer adam --adam-betas '(0.9, 0.98)' --lr 2e-3 --lr-scheduler inverse_sqrt --warmup-updates 200 \
    --max-tokens 4096 --max-update "$UPDATES" --seed "$SEED" --cpu --num-workers 0 \
    --no-epoch-checkpoints --disable-validation --log-format simple --log-interval 100
  pipeline_generate "$DIR/gen/$m" "$data" "$DIR/checkpoints/$m/checkpoint_last.pt" --beam 4 --batch-size 128 --cpu
  pipeline_bleu "$DIR/gen/$m/ref.tok" "$DIR/gen/$m/hyp.tok" > "$DIR/bleu.$m"
  if [[ "$m" == dbsa* || "$m" == sisa || "$m" == syncattn ]]; then  # models with parse heads
    pipeline_induce "$DIR/induced/$m" "$DIR/data-bin" "$DIR/checkpoints/$m/checkpoint_last.pt" --cpu \
      > "$DIR/uas.$m" || true
  fi
}

if [ "${PARALLEL:-0}" = 1 ]; then
  for m in "${MODELS[@]}"; do run_model "$m" & done
  wait
else
  for m in "${MODELS[@]}"; do run_model "$m"; done
fi
echo "== synthetic corpus, $UPDATES updates, test set (500 sentences, beam 4)"
for m in "${MODELS[@]}"; do
  printf '%-12s sacreBLEU %s\n' "$m" "$(cat "$DIR/bleu.$m")"
  if [ -f "$DIR/uas.$m" ]; then sed 's/^/             /' "$DIR/uas.$m"; fi
done
