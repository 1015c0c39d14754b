# WAT English->Japanese (PASCAL paper, large: ASPEC-JE, all 3M training pairs; dev / test 1,790 / 1,812).
# ASPEC is not public: ASPEC_DIR (your ASPEC-JE folder) or LOCAL_DATA. Japanese: KyTea tokens (the
# paper: Cabocha's), BLEU on those tokens and RIBES, as at WAT.
NAME=wat-en-ja SRC=en TGT=ja
source "$ROOT/examples/recipes/pascal.sh"
pascal_data 32000  # the data of a large corpus; its models: fairseq_syntax/recipes/datasets.py (Table 2)
source "$ROOT/examples/recipes/wmt.sh"
download() { aspec_extract train-1.txt train-2.txt train-3.txt; }
