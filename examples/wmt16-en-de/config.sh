# WMT16 English->German (PASCAL paper, large: Europarl v7, CommonCrawl, NC v11; valid newstest2015,
# test newstest2016); training pairs that langdetect identifies as English and German (the paper's
# filtered WMT16).
NAME=wmt16-en-de SRC=en TGT=de
source "$ROOT/examples/recipes/pascal.sh"
pascal_data 32000 langdetect  # the data of a large corpus; its models: fairseq_syntax/recipes/datasets.py (Table 2)
source "$ROOT/examples/recipes/wmt.sh"
download() {
  wmt_train "$EUROPARL7|europarl-v7.de-en" "$COMMONCRAWL|commoncrawl.de-en" "$NC11|news-commentary-v11.de-en"
  wmt_test valid wmt15; wmt_test test wmt16
}
