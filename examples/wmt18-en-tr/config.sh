# WMT18 English->Turkish (PASCAL paper, low-resource: SETIMES2; valid newstest2016, test newstest2017).
NAME=wmt18-en-tr SRC=en TGT=tr
source "$ROOT/examples/recipes/pascal.sh"
pascal_data 16000  # the data of a small corpus; its models: fairseq_syntax/recipes/datasets.py (Table 2)
source "$ROOT/examples/recipes/wmt.sh"
download() { wmt_train "$SETIMES2_EN_TR|SETIMES.en-tr"; wmt_test valid wmt16; wmt_test test wmt17; }
