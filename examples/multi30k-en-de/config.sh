# Multi30k English->German, task 1 (Elliott et al. 2016): 29,000 training pairs (image descriptions), valid
# = val (1,014), two test sets scored one by one: test2016 (test_2016_flickr, 1,000) and test2017
# (test_2017_flickr, 1,000). Every model of the five papers against its baseline on the same data, budget
# and seed. Moses normalisation; English and German parsed by UDPipe 1 (../shared/models: the EWT English
# and the small German model); joint BPE 8k; one data-bin for every transformer and LSTM model (parses on
# both sides), plus the C&H multi-task corpus.
#   MULTI30K_DIR   the raw task-1 files {train,val,test_2016_flickr,test_2017_flickr}.{en,de}
#                  [../shared/data/multi30k/task1/raw; absent: downloaded from github.com/multi30k/dataset]
#   SHARED         the shared folder with models/*.udpipe [$FAIRSEQ_SYNTAX_SHARED or ../shared]
#   PARSER_en PARSER_MODEL_en PARSER_de PARSER_MODEL_de   [udpipe with the shared models]; e.g.
#                  PARSER_en=stanza PARSER_de=stanza (STANZA_DIR) swaps in stanza
#   SIZE           cpu (default): one CPU setting (config.sh) for every model on a 2-core machine; base:
#                  the papers' Transformer base (6+6 layers, d 512, FFN 2048, 8 heads) for GPUs
# Models (BASELINE: the transformer; the LSTMs: lstm_luong):
#   transformer, transformer_seed2 (the same with seed 2: seed noise)
#   rel, dep, dep_rel (Omote et al. 2019: Shaw k = 2, dependency depths l = 2, both)
#   dbsa_enc, dbsa_dec, dbsa (Deguchi et al. 2019: parse heads, lambda_enc = lambda_dec = 1.0)
#   pascal, sisa, sh, ch (Bugliarello & Okazaki 2020; ch trains on the parse + translate corpus)
#   dbsa_sync, syncattn (Deguchi et al. 2021: DBSA at its setting, l_dep 1, lambda_dep 0.5; + sync loss 0.5)
#   lstm_luong, cky_lstm (Watanabe et al. 2017: d 256, Adam 0.01 halved, greedy decoding)
# Tries of one principled change for a model that loses to its baseline or stays inside seed noise (the
# papers tune these on validation data; the change is kept only if the validation NLL of its best checkpoint
# is lower than the model's):
#   dbsa_enc_lambda05, dbsa_dec_lambda05, dbsa_lambda05 (dbsa_enc, dbsa_dec, dbsa with lambda 0.5, Deguchi et
#     al. 2021's weight)
#   dep_rel_l4, dep_l4 (dep_rel, dep with the tree-depth clip distance l = 4: Omote et al. tuned l on
#     development data)
#   pascal_h3 (pascal with 3 of the 4 heads of layer 1 parent-scaled: Bugliarello & Okazaki's grid search
#     chose 5-8 of 8 heads on their other corpora and found more syntax-aware heads better)
#   sisa_lambda05 (sisa with lambda 0.5, as dbsa_enc_lambda05)
#   sh_label3 (sh with 3-dimensional label embeddings: the paper's share of the embedding, 10 of 512
#     dimensions, at d 128; 10 of 128 takes 8% of every source embedding away from the word)
#   ch_u4000 (ch with 4,000 updates: half of the C&H corpus is parsing, so at 2,000 updates it sees half the
#     translation pairs that the transformer sees; at 4,000 it sees as many)
#   syncattn_sync2 (syncattn with L_sync on the penultimate decoder layer, 2 of 3: Deguchi et al. put l_sync at
#     5 of 6 because Garg et al. (2019) found the penultimate layer's cross-attention the best aligner; the
#     same relative depth rounds to the last layer, 3 of 3)
#   cky_lstm_lr001 against lstm_luong_lr001 (both LSTMs with Adam lr 0.001, halved at the same epochs: at
#     the paper's 0.01 on this data the layer-normalised CKY cells collapse to one vector per sentence
#     (docs/cky.md); the baseline gets the same rate so that the pair stays comparable)
NAME=multi30k-en-de SRC=en TGT=de
TEST_SETS="test2016 test2017"
SHARED="${SHARED:-${FAIRSEQ_SYNTAX_SHARED:-$ROOT/../shared}}"
MULTI30K_DIR="${MULTI30K_DIR:-$SHARED/data/multi30k/task1/raw}"
MULTI30K_URL=https://github.com/multi30k/dataset/raw/master/data/task1/raw
PARSER_en=${PARSER_en:-udpipe} PARSER_de=${PARSER_de:-udpipe}
if [ "$PARSER_en" = udpipe ]; then PARSER_MODEL_en=${PARSER_MODEL_en:-$SHARED/models/en_ewt_udpipe_small.udpipe}; fi
if [ "$PARSER_de" = udpipe ]; then PARSER_MODEL_de=${PARSER_MODEL_de:-$SHARED/models/de_udpipe_small.udpipe}; fi

# Data: one preprocessing for all models (same data): parses of both sides (the decoder-side parse heads
# and SyncAttn need the German trees), joint BPE with 8,000 merges (29k short pairs: a vocabulary of about
# 9k shared subwords, tied embeddings); C&H's multi-task corpus from the same parses and BPE merges.
VARIANTS="main ch"
SYNTAX[main]=source,target; PREPARE[main]="--bpe-merges 8000"
SYNTAX[ch]=source; PREPARE[ch]="--bpe-merges 8000"; MULTITASK[ch]=1

# ---------------------------------------------------------------- sizes and budget
# Multi30k is small enough for a narrow model (Wu et al. 2021, ACL: a 4-layer d 128 transformer is the
# strongest text-only system on it), so the shared CPU table (examples/recipes/cpu_models.sh: 3+3 layers, d 128,
# FFN 512, 4 heads) with 2,000 updates of 4,096 tokens (15 epochs; an epoch is 132 updates), warm-up 400, lr
# 0.002; the LSTMs 15 epochs. The vocabulary at 4k instead of 8k would save 6% of an update.
CPU_MAX_UPDATE=2000 CPU_WARMUP=400 CPU_LR=0.002 CPU_LSTM_EPOCHS=15
source "$ROOT/examples/recipes/cpu_models.sh"

download() {  # the shared copy of the task-1 files, else the dataset's GitHub repository
  local from to lang
  for from in train:train val:valid test_2016_flickr:test2016 test_2017_flickr:test2017; do
    to=${from#*:}; from=${from%%:*}
    for lang in "$SRC" "$TGT"; do
      if [ -f "$MULTI30K_DIR/$from.$lang" ]; then cp "$MULTI30K_DIR/$from.$lang" "$RAW/$to.$lang"
      else
        log "no $MULTI30K_DIR/$from.$lang: download $MULTI30K_URL/$from.$lang.gz"
        { wget -nv -O - "$MULTI30K_URL/$from.$lang.gz" || curl -fL "$MULTI30K_URL/$from.$lang.gz"; } \
          | gunzip -c > "$RAW/$to.$lang" || die "could not download $from.$lang (set MULTI30K_DIR or LOCAL_DATA)"
      fi
    done
  done
  log "train: $(wc -l < "$RAW/train.$SRC") pairs"
}
