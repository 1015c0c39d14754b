# Tanaka corpus English->Japanese: the source-side models of examples/tanaka-ja-en (those that read or learn
# the source tree: fairseq_syntax/recipes/datasets.py) on the same data-bin
# (prepare.sh runs that recipe's preparation; its data lives in the folder next to WORK named tanaka-ja-en,
# or DATA_WORK). Japanese output is scored with its spaces removed, against the raw reference, with
# sacreBLEU's ja-mecab tokenizer (BLEU and RIBES), the same tokens whatever the model's segmentation.
source "$ROOT/examples/tanaka-ja-en/config.sh"
NAME=tanaka-en-ja SRC=en TGT=ja DATA_FROM=tanaka-ja-en
