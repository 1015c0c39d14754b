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
#   SIZE           cpu (default): the CPU table (3+3 layers, d 128) for a 2-core machine; base: the papers'
#                  Transformer base (6+6 layers, d 512, FFN 2048, 8 heads) for GPUs
# Models: every model of the five papers against its baseline, and one principled try per model, from the CPU
# table of the training settings (fairseq_syntax/recipes/cpu_table.py, which says each paper's setting and why
# each try; docs/settings.md lists every model's options).
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
