# WMT18 English->Turkish (PASCAL paper, low-resource: SETIMES2; valid newstest2016, test newstest2017).
NAME=wmt18-en-tr SRC=en TGT=tr
source "$ROOT/examples/recipes/pascal.sh"
pascal_systems 0.0007 "(0.9, 0.98)" 7 0.3 small 16000  # Table 2
source "$ROOT/examples/recipes/wmt.sh"
download() { wmt_train "$SETIMES2_EN_TR|SETIMES.en-tr"; wmt_test valid wmt16; wmt_test test wmt17; }
