# ASPEC Japanese->English (WAT): three papers, each with its own preprocessing (one data-bin each).
# All use the first 1.5M training pairs, KyTea-tokenised Japanese (JA_TOKENIZED=1 / kytea on PATH) parsed
# by EDA (give {split}.ja.conllu in LOCAL_DATA; otherwise GiNZA parses), Moses English parsed by stanza.
# BLEU on the tokens, as at WAT. ASPEC is not public: ASPEC_DIR (your ASPEC-JE folder) or LOCAL_DATA.
#   deguchi19-*: DBSA (Deguchi et al. 2019): joint BPE, a 100k vocabulary; subword sequences over 250
#       tokens skipped; batches of 224 sentences, 20 epochs, lambda_enc = lambda_dec = 1.0, the epoch with
#       the best validation BLEU, beam 4, lp 0.6.
#       Table 2: transformer, dbsa_enc, dbsa_dec, dbsa; Table 3: transformer-words, dbsa-words (no BPE,
#       words seen at least 5 times). Parse heads in the 2019 form (Eq. 14: unscaled, Q U2 bias); the parse
#       losses normalised as the authors' code does (--dependency-normalization arcs: the sum over all
#       gold arcs of the side, future target arcs included)
#   omote19-*: dependency-based relative positions (Omote et al. 2019): words (no BPE), pairs of at most
#       50 words, Japanese words seen >= 7 times, English >= 10; Adam (0.9, 0.98, 1e-9), 4,000 warm-up
#       steps, batches of 256 sentences, 30 epochs (the best on validation: BLEU here), k = l = 2, greedy
#       decoding (Table 2: transformer, rel,
#       dep, dep_rel; rel = Shaw et al. 2018, linear relative positions in the encoder and the decoder;
#       dep = tree depths in the encoder; dep_rel = both in the encoder + Shaw's decoder). Table 3 ablation (Sec. 5.3), Transformer_dep without absolute positions on the first
#       100k pairs (<= 50 words), words seen >= 2 times, batches of 100, 50 epochs: dep-kv (b^K and b^V),
#       dep-k, dep-v, and noabs (neither: no position information); bootstrap against dep-kv
#   deguchi21-*: SyncAttn (Deguchi et al. 2021): separate BPE 16k, <= 100 words, ratio 1.5, 12k-token
#       batches, lambda_sync 10.0 (fairseq_syntax/recipes/paper_tables.py)
NAME=aspec-ja-en SRC=ja TGT=en
TRAIN_FIRST=1500000
BLEU_ON_TOKENS=1
VARIANTS="dbsa19 dbsa19words omote19 omote19abl syncattn21"
SYNTAX[dbsa19]=source,target; PREPARE[dbsa19]="--bpe-merges 100000"
SYNTAX[dbsa19words]=source,target; PREPARE[dbsa19words]="--bpe-merges 0
  --preprocess-args '--thresholdsrc 5 --thresholdtgt 5'"
SYNTAX[omote19abl]=source; PREPARE[omote19abl]="--train-first 100000 --bpe-merges 0 --separate-bpe --max-words 50
  --preprocess-args '--thresholdsrc 2 --thresholdtgt 2'"
SYNTAX[omote19]=source; PREPARE[omote19]="--bpe-merges 0 --separate-bpe --max-words 50
  --preprocess-args '--thresholdsrc 7 --thresholdtgt 10'"
SYNTAX[syncattn21]=source,target; PREPARE[syncattn21]="--bpe-merges 16000 --separate-bpe --max-words 100 --max-ratio 1.5"
# the models of the three papers and their settings: fairseq_syntax/recipes/paper_tables.py
source "$ROOT/examples/recipes/wmt.sh"
download() { aspec_extract train-1.txt train-2.txt; }
