# News Commentary v11 English->German (PASCAL paper, low-resource; valid newstest2015, test newstest2016);
# training pairs that langdetect identifies as the pair's languages (the paper's filtered NC11).
NAME=nc11-en-de SRC=en TGT=de
source "$ROOT/examples/recipes/pascal.sh"
pascal_data 16000 langdetect  # the data of a small corpus; its models: fairseq_syntax/recipes/datasets.py (Table 2)
source "$ROOT/examples/recipes/wmt.sh"
download() { wmt_train "$NC11|news-commentary-v11.de-en"; wmt_test valid wmt15; wmt_test test wmt16; }
