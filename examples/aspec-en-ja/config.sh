# ASPEC English->Japanese (WAT), CKY-based convolutional attention (Watanabe, Tamura, Ninomiya 2017):
# lowercased Moses English and KyTea Japanese words (no BPE, no parses), the first 100,000 training pairs,
# of them those under 50 words; words seen once -> <unk>. d 256; Adam lr 0.01, (0.9, 0.99), halved after
# epochs 9 and 12 (15 epochs: the paper does not say how many); gradient clipping 3.0, weight decay 1e-6,
# dropout 0.2 (LSTMs) / 0.3 (CNN); greedy decoding; BLEU on KyTea tokens and RIBES. The paper gives no
# batch size: 128 sentences here. ASPEC is not public: ASPEC_DIR (your ASPEC-JE folder) or LOCAL_DATA.
# cky_lstm's Deduction Unit output is layer-normalised (--cky-norm layer, the default; docs/cky.md): the
# paper's literal DU (--cky-norm none) made the cells explode on Multi30k at this rate and overflowed on
# the synthetic corpus at 2e-3.
NAME=aspec-en-ja SRC=en TGT=ja
TRAIN_FIRST=100000
VARIANTS=words
SYNTAX[words]=none
PREPARE[words]="--bpe-merges 0 --separate-bpe --max-words 49 --lowercase
  --preprocess-args '--thresholdsrc 2 --thresholdtgt 2'"
# the models (lstm_luong, cky_lstm) and their settings: fairseq_syntax/recipes/paper_tables.py
source "$ROOT/examples/recipes/wmt.sh"
download() { aspec_extract train-1.txt; }
