#!/usr/bin/env bash
# Encoder parse-head UAS of DBSA on UD PUD English-German (gold trees on both
# sides) after a short CPU run: 900 training pairs, 50 valid, 50 test.
#
#   bash examples/ud_pud/dbsa_uas.sh
# Variables: PUD_DIR [work/ud_pud], SHARED [../shared], UPDATES [500].
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
# shellcheck disable=SC1091
source "$ROOT/examples/setup_env.sh"
# shellcheck disable=SC1091
source "$ROOT/examples/recipes/pipeline.sh"
cd "$ROOT"
DIR="${PUD_DIR:-$ROOT/work/ud_pud}"
SHARED="${SHARED:-$ROOT/../shared}"
UPDATES="${UPDATES:-500}"
export PYTHONWARNINGS="${PYTHONWARNINGS:-ignore}"
mkdir -p "$DIR/raw"
python - "$SHARED" "$DIR/raw" <<'PY'
import sys
from fairseq_syntax.data.conllu import read_conllu, write_conllu
shared, out = sys.argv[1], sys.argv[2]
sents = {"en": list(read_conllu(f"{shared}/data/UD_English-PUD/en_pud-ud-test.conllu")),
         "de": list(read_conllu(f"{shared}/data/UD_German-PUD/de_pud-ud-test.conllu"))}
for split, sl in (("train", slice(0, 900)), ("valid", slice(900, 950)), ("test", slice(950, 1000))):
    for lang, ss in sents.items():
        with open(f"{out}/{split}.{lang}.conllu", "w", encoding="utf-8") as f:
            write_conllu(ss[sl], f)
PY
rm -rf "$DIR/data-bin"
python preprocess/prepare.py -s en -t de --trainpref "$DIR/raw/train" --validpref "$DIR/raw/valid" \
  --testpref "$DIR/raw/test" --destdir "$DIR/data-bin" --bpe-merges 4000 --no-progress > "$DIR/prepare.log" 2>&1
pipeline_train "$DIR/train.log" "$DIR/data-bin" "$DIR/checkpoints/dbsa" \
  --arch transformer_dbsa "${SMALL_TRANSFORMER[@]}" --dbsa-encoder-layer 2 --dbsa-decoder-layer 2 \
  --share-all-embeddings --dropout 0.1 --criterion label_smoothed_cross_entropy_with_dependency --label-smoothing 0.1 \
  --optimizer adam --adam-betas '(0.9, 0.98)' --lr 2e-3 --lr-scheduler inverse_sqrt --warmup-updates 100 \
  --max-tokens 2048 --max-update "$UPDATES" --seed 1 --cpu --num-workers 0 --disable-validation \
  --no-epoch-checkpoints --log-format simple --log-interval 100
pipeline_induce "$DIR/induced/test" "$DIR/data-bin" "$DIR/checkpoints/dbsa/checkpoint_last.pt" --cpu
