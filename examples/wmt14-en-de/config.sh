# WMT14 English->German (SyncAttn paper: Europarl v7, CommonCrawl, NC v9; valid newstest2013, test
# newstest2014). Moses normalisation + tokenisation (aggressive hyphens), stanza parses of both sides,
# joint BPE 37k, training sentences of at most 100 words and length ratio 1.5, training pairs whose
# sides langid identifies as English and German (as Ng et al. 2019).
NAME=wmt14-en-de SRC=en TGT=de
VARIANTS=main
SYNTAX[main]=source,target
PREPARE[main]="--bpe-merges 37000 --max-words 100 --max-ratio 1.5"; LANG_FILTER[main]=langid
# Models: the SyncAttn paper's three (fairseq_syntax/recipes/datasets.py: its lambda_sync and batch)
source "$ROOT/examples/recipes/wmt.sh"
download() {
  wmt_train "$EUROPARL7|europarl-v7.de-en" "$COMMONCRAWL|commoncrawl.de-en" "$NC9|news-commentary-v9.de-en"
  wmt_test valid wmt13; wmt_test test wmt14/full
}
