# WAT English->Japanese (PASCAL paper, large: ASPEC-JE, all 3M training pairs; dev / test 1,790 / 1,812).
# ASPEC is not public: ASPEC_DIR (your ASPEC-JE folder) or LOCAL_DATA. Japanese: KyTea tokens (the
# paper: Cabocha's), BLEU on those tokens and RIBES, as at WAT.
NAME=wat-en-ja SRC=en TGT=ja
source "$ROOT/examples/recipes/pascal.sh"
pascal_systems 0.0007 "(0.9, 0.997)" 7 0.0 large 32000  # Table 2
source "$ROOT/examples/recipes/wmt.sh"
download() { aspec_extract train-1.txt train-2.txt train-3.txt; }
