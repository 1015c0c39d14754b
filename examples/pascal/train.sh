#!/usr/bin/env bash
# PASCAL (Bugliarello & Okazaki 2020) training recipe with the paper's per-corpus
# hyper-parameters (Table 2) and its common settings (Transformer base, 8,000
# warm-up steps, label smoothing 0.1, 32k-token batches; beam 4, length penalty
# 0.6 at test time).
#
#   bash examples/pascal/train.sh CORPUS DATA-BIN SAVE-DIR [extra fairseq-train args]
#
# CORPUS: nc11-en-de | nc11-de-en | wmt18-en-tr | wmt16-en-de | wmt17-en-de | wat-en-ja
# DATA-BIN: made by preprocess/prepare.py (source syntax needed; the task derives
# 'middle' parents itself). DRY_RUN=1 prints the commands instead of running them.
# MAX_TOKENS x UPDATE_FREQ x GPUs should be about 32k (defaults 4096 x 8 for one GPU).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
[ $# -ge 3 ] || { sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
corpus=$1 data=$2 save=$3
shift 3
# Table 2: lr, (beta1, beta2), h_pascal, q
case $corpus in
  nc11-en-de)  lr=0.0007 betas='(0.9, 0.997)' heads=2 q=0.4 ;;
  nc11-de-en)  lr=0.0007 betas='(0.9, 0.997)' heads=8 q=0.0 ;;
  wmt18-en-tr) lr=0.0007 betas='(0.9, 0.98)'  heads=7 q=0.3 ;;
  wmt16-en-de) lr=0.0007 betas='(0.9, 0.98)'  heads=5 q=0.0 ;;
  wmt17-en-de) lr=0.0007 betas='(0.9, 0.997)' heads=7 q=0.3 ;;
  wat-en-ja)   lr=0.0007 betas='(0.9, 0.997)' heads=7 q=0.0 ;;
  *) echo "unknown corpus $corpus (see the list at the top of $0)" >&2; exit 2 ;;
esac
train=(fairseq-train "$data" --user-dir "$ROOT/fairseq_syntax" --task syntax_translation
  --arch transformer_pascal --pascal-layer 1 --pascal-heads "$heads" --pascal-ignore-prob "$q" --pascal-variance 1
  --share-all-embeddings --criterion label_smoothed_cross_entropy --label-smoothing 0.1
  --optimizer adam --adam-betas "$betas" --lr "$lr" --lr-scheduler inverse_sqrt --warmup-updates 8000
  --max-tokens "${MAX_TOKENS:-4096}" --update-freq "${UPDATE_FREQ:-8}" --save-dir "$save" "$@")
generate=(fairseq-generate "$data" --user-dir "$ROOT/fairseq_syntax" --task syntax_translation
  --path "$save/checkpoint_best.pt" --beam 4 --lenpen 0.6 --remove-bpe)
if [ "${DRY_RUN:-0}" = 1 ]; then
  printf '%q ' "${train[@]}"; echo
  printf '%q ' "${generate[@]}"; echo
  exit 0
fi
# shellcheck disable=SC1091
source "$ROOT/examples/setup_env.sh"
"${train[@]}"
"${generate[@]}" > "$save/generate.test.out"
grep '^D-' "$save/generate.test.out" | sort -t- -k2,2n | cut -f3 > "$save/hyp.txt"
grep '^T-' "$save/generate.test.out" | sort -t- -k2,2n | cut -f2 > "$save/ref.txt"
sacrebleu "$save/ref.txt" -i "$save/hyp.txt" -m bleu
