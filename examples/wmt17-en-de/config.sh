# WMT17 English->German (PASCAL paper, large: Europarl v7, CommonCrawl, NC v12, Rapid 2016; valid
# newstest2016, test newstest2017).
NAME=wmt17-en-de SRC=en TGT=de
source "$ROOT/examples/recipes/pascal.sh"
pascal_data 32000  # the data of a large corpus; its models: fairseq_syntax/recipes/datasets.py (Table 2)
source "$ROOT/examples/recipes/wmt.sh"
download() {
  wmt_train "$EUROPARL7|europarl-v7.de-en" "$COMMONCRAWL|commoncrawl.de-en" "$NC12|news-commentary-v12.de-en" \
    "$RAPID2016|rapid2016.de-en"
  wmt_test valid wmt16; wmt_test test wmt17
}
