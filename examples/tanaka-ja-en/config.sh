# Tanaka corpus Japanese->English (small_parallel_enja: 50,000 / 500 / 500 pairs of 4-16 words, English
# tokenised and lowercased, Japanese KyTea-tokenised), the papers' own language pair at a size a 2-core CPU
# trains: every model of the five papers against its baseline, at the CPU setting of the Multi30k table
# (fairseq_syntax/recipes/cpu_table.py, plus pascal_wat: docs/settings.md). examples/tanaka-en-ja trains the
# other direction on the same data-bin.
#   TANAKA_DIR   the corpus's {train,dev,test}.{ja,en} [../shared/data/small_parallel_enja; absent: downloaded
#                from github.com/odashi/small_parallel_enja]
#   SHARED       the shared folder with models/en_ewt_udpipe_small.udpipe [$FAIRSEQ_SYNTAX_SHARED or ../shared]
# Text and parsers (docs/recipes.md says why): the Japanese is given to GiNZA (ja_ginza, a spaCy pipeline
# with a UD parser) as text, its KyTea spaces removed, so GiNZA tokenises it as it was trained to (parsed on
# the KyTea tokens, roots fall on kana fragments cut off verb stems); the English keeps the corpus's tokens
# and is parsed by UDPipe 1 (--pretokenized). Joint BPE, 8,000 merges; parses on both sides in one data-bin.
# Scoring, the same tokens for every model: English output on the corpus's tokens (BLEU --tokenize none,
# RIBES on the same tokens); Japanese output with its spaces removed, against the raw reference, with
# sacreBLEU's ja-mecab tokenizer (BLEU and RIBES). chrF and the paired bootstrap test (BLEU, chrF, RIBES).
NAME=tanaka-ja-en SRC=ja TGT=en
SHARED="${SHARED:-${FAIRSEQ_SYNTAX_SHARED:-$ROOT/../shared}}"
TANAKA_DIR="${TANAKA_DIR:-$SHARED/data/small_parallel_enja}"
TANAKA_URL=https://raw.githubusercontent.com/odashi/small_parallel_enja/master
TOKENIZER_ja=${TOKENIZER_ja:-parser} TOKENIZER_en=${TOKENIZER_en:-given}
PARSER_ja=${PARSER_ja:-spacy} PARSER_en=${PARSER_en:-udpipe}
if [ "$PARSER_ja" = spacy ]; then PARSER_MODEL_ja=${PARSER_MODEL_ja:-ja_ginza}; fi
if [ "$PARSER_en" = udpipe ]; then PARSER_MODEL_en=${PARSER_MODEL_en:-$SHARED/models/en_ewt_udpipe_small.udpipe}; fi
BLEU_ON_TOKENS=1 RIBES=1 JA_SCORE=mecab

VARIANTS="main ch"
SYNTAX[main]=source,target; PREPARE[main]="--bpe-merges 8000"
SYNTAX[ch]=source; PREPARE[ch]="--bpe-merges 8000"; MULTITASK[ch]=1

download() {  # the corpus's files; the Japanese without KyTea's spaces (the parser tokenises it)
  local from to lang
  for from in train:train dev:valid test:test; do
    to=${from#*:}; from=${from%%:*}
    for lang in ja en; do
      if [ -f "$TANAKA_DIR/$from.$lang" ]; then cp "$TANAKA_DIR/$from.$lang" "$RAW/$to.$lang.given"
      else
        log "no $TANAKA_DIR/$from.$lang: download $TANAKA_URL/$from.$lang"
        { wget -nv -O "$RAW/$to.$lang.given" "$TANAKA_URL/$from.$lang" \
            || curl -fL -o "$RAW/$to.$lang.given" "$TANAKA_URL/$from.$lang"; } \
          || die "could not download $from.$lang (set TANAKA_DIR or LOCAL_DATA)"
      fi
    done
    sed 's/ //g' "$RAW/$to.ja.given" > "$RAW/$to.ja"
    mv "$RAW/$to.en.given" "$RAW/$to.en"
  done
  log "train: $(wc -l < "$RAW/train.ja") pairs"
}
