# WMT16 English->Romanian (SyncAttn paper: Europarl v8, SETIMES2; valid newsdev2016, test newstest2016).
# Joint BPE 40k, training sentences of at most 100 words and length ratio 1.5.
NAME=wmt16-en-ro SRC=en TGT=ro
VARIANTS=main
SYNTAX[main]=source,target
PREPARE[main]="--bpe-merges 40000 --max-words 100 --max-ratio 1.5"
# Models: the SyncAttn paper's three (fairseq_syntax/recipes/datasets.py: its lambda_sync and batch)
source "$ROOT/examples/recipes/wmt.sh"
download() {
  wmt_train "$EUROPARL8|europarl-v8.ro-en" "$SETIMES2_EN_RO|SETIMES.en-ro"
  wmt_test valid wmt16/dev; wmt_test test wmt16
}
