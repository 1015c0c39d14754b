# Shared steps of the per-dataset recipes: examples/<dataset>/{prepare,train,evaluate}.sh source the
# dataset's config.sh, then this file, then call `recipe prepare|train|evaluate`.
#
# A config.sh sets (the associative arrays are declared here):
#   NAME SRC TGT         dataset name and language codes (raw files are RAW/{train,valid,test}.{SRC,TGT})
#   VARIANTS             the data-bins this dataset needs (several when the papers preprocess differently)
#   SYNTAX[v]            sides of variant v with syntax: source | target | source,target | none
#   PREPARE[v]           preprocess/prepare.py options of v (BPE, the paper's length filters)
#   LANG_FILTER[v]       the paper's language identifier for v's training pairs (langid | langdetect;
#                        prepare.py --lang-filter; not applied to the synthetic sample)
#   MULTITASK[v]=1       v is the C&H multi-task corpus (preprocess/multitask.py, then no syntax)
# The models come from the one table of training settings (fairseq_syntax/recipes, docs/settings.md), read
# by `recipe` (load_settings: `fairseq-syntax-settings NAME --size SIZE --bash`) into these arrays:
#   DATA[m]              the variant model m trains on (its keys are the models: `train.sh MODEL`)
#   TRAIN[m]             model m's fairseq-train options (the paper's settings)
#   BATCH[m]             tokens:N or sentences:N per update (split over GPUs and --update-freq)
#   TASK[m] DECODE[m] BASELINE[m]   the task, fairseq-generate's search, the paired bootstrap's baseline
#   ALSO_AGAINST[m]      the paper's other baselines of m (space-separated models): evaluate.sh also scores m
#                        against each, in eval/m/[SET/]vs_BASE/ (paired bootstrap as against BASELINE[m])
#   CHECKPOINT_OF[m]     m is another way to decode that model's checkpoint (DECODE[m] says how): evaluate.sh
#                        decodes it; train.sh has nothing to train (once that model has trained)
# and a config.sh sets:
#   TRAIN_FIRST          keep the first N training pairs (before parsing); 0 = all
#   TEST_SETS            several test sets, e.g. "test2016 test2017": download writes RAW/NAME.{SRC,TGT} for
#                        each; they are joined into the one test split (one preprocessing run) and evaluate.sh
#                        scores each on its own (WORK/eval/MODEL/NAME/scores.json); default: one test split
#   BLEU_ON_TOKENS=1     WAT-style: BLEU on the tokenised reference (Japanese targets always unless
#                        JA_SCORE=mecab; + RIBES)
#   JA_SCORE=mecab       Japanese targets: the output detokenised (spaces removed) and scored against the raw
#                        reference with sacreBLEU's ja-mecab tokenizer (BLEU and RIBES), the same tokens for
#                        every model whatever its own segmentation
#   RIBES=1              RIBES (and its bootstrap test) for every target language, not only Japanese
#   TOKENIZER_<lang>     how the raw text of a language becomes tokens: moses (default; Moses normalisation, then
#                        the parser's tokens or the Moses tokeniser), given (the raw text is tokenised already:
#                        kept, parsed --pretokenized), parser (the parser's own tokeniser), kytea (`kytea
#                        -notags`, parsed --pretokenized); Japanese default: kytea when on PATH, else parser
#   DATA_FROM            another dataset whose preparation this one shares (the reverse direction of the same
#                        data-bin): prepare.sh runs that dataset's, train / evaluate read its data in DATA_WORK
#                        [the folder next to WORK named DATA_FROM]
#   download             a function writing RAW/{train,valid,test}.{SRC,TGT} (raw text), or exiting with
#                        instructions when the data is not public
#
# Variables for users (defaults in brackets; nothing assumes a home folder):
#   WORK          everything this dataset writes                                  [<repo>/work/NAME]
#   LOCAL_DATA    a folder with {train,valid,test|TEST_SETS}.{SRC,TGT} (raw text, one sentence per line) and/or
#                 their CoNLL-U parses {split}.{lang}.conllu (e.g. KyTea + EDA for Japanese): used
#                 instead of downloading; parses given here are used as they are
#   SAMPLE=1      offline run on a small synthetic sample with gold parses, in the dataset's language
#                 codes; models narrowed to d 32 and 2 updates on CPU (what tests/test_recipes.py runs)
#   FETCH_AGAIN=1 replace WORK/raw when it holds raw data from another source (the sample, another
#                 LOCAL_DATA folder, the download) than this run's; without it prepare.sh stops and says so
#   PARSER_<lang> / PARSER_MODEL_<lang>   parser backend for a language (stanza | spacy | udpipe) and its
#                 model [stanza, except ja: spacy with ja_ginza]; STANZA_DIR: stanza's model folder
#   JA_TOKENIZED=1  the Japanese raw text is tokenised already (KyTea): kept, parsed --pretokenized
#                 (TOKENIZER_ja=given); otherwise `kytea -notags` when kytea is on PATH, else the parser's own
#                 tokeniser
#   SIZE          cpu or base (another value stops the recipe): the size of the CPU table's models (Multi30k,
#                 Tanaka): cpu, 3+3 layers, d 128, for a 2-core CPU; base, Transformer base (the papers' size)
#                 for GPUs; the other recipes train at the paper's size either way [cpu]
#   GPUS MAX_TOKENS   GPUs used and tokens per GPU batch [all visible / 1; 4096]: --update-freq makes
#                 the paper's batch; EXTRA_TRAIN_ARGS (e.g. --fp16) and extra train.sh arguments pass on
#
# The scripts source this file first, then config.sh, then run `recipe STEP "$@"`.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
# shellcheck disable=SC1091
source "$ROOT/examples/recipes/pipeline.sh"
declare -A SYNTAX PREPARE LANG_FILTER MULTITASK DATA TRAIN BATCH TASK DECODE BASELINE ALSO_AGAINST CHECKPOINT_OF
TRAIN_FIRST=0
TEST_SETS=""
BLEU_ON_TOKENS=0

words() {  # $1 = array name, $2 = options as written in a config (shell quoting honoured)
  eval "$1=($2)"
}

log() { echo "[$NAME] $*" >&2; }
die() { echo "[$NAME] error: $*" >&2; exit 1; }
splits=(train valid test)

# ---------------------------------------------------------------- data
fetch_sample() {  # synthetic pairs with gold parses, under the dataset's language codes
  local tmp="$WORK/sample" split
  python "$ROOT/preprocess/synth.py" -o "$tmp" --train 300 --valid 20 --test 20 --seed 1 > /dev/null 2>&1
  for split in "${splits[@]}"; do
    cp "$tmp/$split.src" "$RAW/$split.$SRC"; cp "$tmp/$split.tgt" "$RAW/$split.$TGT"
    # gold parses where a model needs them, and for Japanese (its tokenisation); the other sides
    # go through the Moses tokeniser like real data
    if [ "$SRC" = ja ] || needs_syntax "$SRC"; then cp "$tmp/$split.src.conllu" "$RAW/$split.$SRC.conllu"; fi
    if [ "$TGT" = ja ] || needs_syntax "$TGT"; then cp "$tmp/$split.tgt.conllu" "$RAW/$split.$TGT.conllu"; fi
  done
}

fetch_local() {
  local f set n=0
  for set in train valid test $TEST_SETS; do
    for f in "$LOCAL_DATA/$set".{"$SRC","$TGT"}{,.conllu}; do
      if [ -f "$f" ]; then cp "$f" "$RAW/"; n=$((n + 1)); fi
    done
  done
  [ $n -gt 0 ] || die "LOCAL_DATA=$LOCAL_DATA has none of {train,valid,test}.{$SRC,$TGT}[.conllu]"
}

lang_side() { [ "$1" = "$SRC" ] && echo source || echo target; }

needs_syntax() {  # $1 = language: does any variant need its parses?
  local v side; side=$(lang_side "$1")
  for v in $VARIANTS; do [[ ",${SYNTAX[$v]}," == *",$side,"* ]] && return 0; done
  return 1
}

join_test_sets() {  # TEST_SETS: RAW/test.* = the sets' files one after the other; RAW/test.sets = "NAME LINES"
  local set lang ext
  [ -n "$TEST_SETS" ] || return 0
  for set in $TEST_SETS; do
    if [ ! -f "$RAW/$set.$SRC" ] && [ ! -f "$RAW/$set.$SRC.conllu" ]; then  # e.g. SAMPLE=1: one test split
      log "no $RAW/$set.$SRC: one test set (test)"; return 0
    fi
  done
  [ ! -f "$RAW/test.$SRC" ] && [ ! -f "$RAW/test.$SRC.conllu" ] || die "TEST_SETS=\"$TEST_SETS\" and a test.$SRC in $RAW"
  for lang in "$SRC" "$TGT"; do
    for ext in "" .conllu; do  # each kind of file when every set has it
      for set in $TEST_SETS; do [ -f "$RAW/$set.$lang$ext" ] || continue 2; done
      for set in $TEST_SETS; do cat "$RAW/$set.$lang$ext"; done > "$RAW/test.$lang$ext"
    done
  done
  [ -f "$RAW/test.$TGT" ] || die "TEST_SETS: the raw references $RAW/{${TEST_SETS// /,}}.$TGT are needed"
  for set in $TEST_SETS; do echo "$set $(wc -l < "$RAW/$set.$TGT")"; done > "$RAW/test.sets"
}

raw_source() {  # where this run takes its raw data from: RAW/.complete records it
  if [ "$SAMPLE" = 1 ]; then echo "sample"
  elif [ -n "${LOCAL_DATA:-}" ]; then
    local dir; dir=$(cd "$LOCAL_DATA" 2> /dev/null && pwd) || return 1
    echo "local data $dir"
  else echo "download"; fi
  echo "test sets: ${TEST_SETS:-test}"
}

local_files() {  # the files fetch_local copies from LOCAL_DATA (their names, one a line)
  local f set
  for set in train valid test $TEST_SETS; do
    for f in "$LOCAL_DATA/$set".{"$SRC","$TGT"}{,.conllu}; do [ ! -f "$f" ] || basename "$f"; done
  done | sort -u
}

local_changes() {  # the LOCAL_DATA files that are not as RAW's copies of them (changed, added or removed)
  local name listed
  listed=" $(local_files | tr '\n' ' ') "
  for name in $listed; do cmp -s "$LOCAL_DATA/$name" "$RAW/$name" || echo "$name"; done
  for name in $(cd "$RAW" && ls); do  # copied before and gone from LOCAL_DATA since
    case $name in *.conllu|*."$SRC"|*."$TGT") ;; *) continue ;; esac
    [[ $listed == *" $name "* ]] || [[ $name == test.* && -n "$TEST_SETS" ]] || echo "$name"
  done
  return 0  # (its status is not the answer: a caller under set -e and pipefail reads its lines)
}

fetch() {
  local want had changed
  want=$(raw_source) || die "LOCAL_DATA=$LOCAL_DATA: no such folder"
  if [ -f "$RAW/.complete" ]; then
    had=$(cat "$RAW/.complete")
    if [ -z "$had" ] && { [ "$SAMPLE" = 1 ] || [ ! -d "$WORK/sample" ]; }; then  # an earlier recipe's record
      printf '%s\n' "$want" > "$RAW/.complete"; had=$want  # (it wrote none): not the sample, as this run asks
    fi
    if [ "$had" = "$want" ] && [ "$SAMPLE" != 1 ] && [ -n "${LOCAL_DATA:-}" ]; then  # the same folder: its files?
      changed=$(local_changes | sort -u | tr '\n' ' ')
      if [ -n "$changed" ] && [ "${FETCH_AGAIN:-0}" != 1 ]; then
        die "LOCAL_DATA=$LOCAL_DATA: ${changed% } changed since $RAW was copied from it: FETCH_AGAIN=1 to copy it \
again (the text and data-bins are then made again), or put the old files back"
      fi
      [ -z "$changed" ] || had="$had (other files)"
    fi
    if [ "$had" = "$want" ]; then log "raw data: $RAW (delete it to fetch again)"; return; fi
    if [ "${FETCH_AGAIN:-0}" != 1 ]; then
      had=${had//$'\n'/, }
      die "$RAW holds raw data from ${had:-the sample (SAMPLE=1)}, and this run asks for ${want//$'\n'/, }: give the \
same settings again, another WORK, or FETCH_AGAIN=1 to replace it (the text and data-bins are then made again)"
    fi
    log "raw data: $RAW is replaced (FETCH_AGAIN=1)"
  fi
  rm -rf "$RAW"; mkdir -p "$RAW"
  if [ "$SAMPLE" = 1 ]; then fetch_sample
  elif [ -n "${LOCAL_DATA:-}" ]; then fetch_local
  else download; fi
  join_test_sets
  printf '%s\n' "$want" > "$RAW/.complete"
}

parser_args() {  # $1 = language, $2 = source | target: prepare's options naming the language's parser
  local lang=$1 side=$2 backend_var="PARSER_$1" model_var="PARSER_MODEL_$1" backend model
  backend=${!backend_var:-}; model=${!model_var:-}
  if [ -z "$backend" ]; then if [ "$lang" = ja ]; then backend=spacy; else backend=stanza; fi; fi
  [ "$backend" = spacy ] && [ -z "$model" ] && model=ja_ginza
  echo "--parser-$side $backend${model:+ --parser-model-$side $model}"
}

tokenizer_of() {  # $1 = language: given | parser | kytea | moses (see TOKENIZER_<lang>)
  local var="TOKENIZER_$1"
  if [ -n "${!var:-}" ]; then echo "${!var}"
  elif [ "$1" != ja ]; then echo moses
  elif [ "${JA_TOKENIZED:-0}" = 1 ]; then echo given
  elif command -v kytea > /dev/null; then echo kytea
  else echo parser; fi
}

text_args() {  # $1 = language, $2 = source | target: how prepare --text-only makes the language's tokens
  local tokenizer norm=none
  tokenizer=$(tokenizer_of "$1")
  case $tokenizer in given|parser|kytea) ;; moses) norm=moses ;;
    *) die "TOKENIZER_$1=$tokenizer: one of given, parser, kytea, moses" ;; esac
  echo "--tokenizer-$2 $tokenizer --normalize-$2 $norm $(parser_args "$1" "$2")"
}

make_text() {  # WORK/text: every split of both languages tokenised, and parsed where any variant of the dataset
  # needs its syntax (whichever models are prepared first, so that every data-bin has the same tokens), by
  # prepare --text-only; WORK/text/text.json says how (each data-bin records it for decoding raw text)
  local sides=() args=() syntax
  needs_syntax "$SRC" && sides+=(source)
  needs_syntax "$TGT" && sides+=(target)
  syntax=$(IFS=,; echo "${sides[*]:-none}")
  words args "$(text_args "$SRC" source) $(text_args "$TGT" target)"
  [ -z "${STANZA_DIR:-}" ] || args+=(--stanza-dir "$STANZA_DIR")
  log "tokens and parses of $SRC and $TGT (syntax: $syntax): $WORK/text"
  python "$ROOT/preprocess/prepare.py" --text-only -s "$SRC" -t "$TGT" --trainpref "$RAW/train" \
    --validpref "$RAW/valid" --testpref "$RAW/test" --workdir "$WORK/text" --syntax "$syntax" \
    --train-first "${TRAIN_FIRST:-0}" "${args[@]}" --no-progress 2>&1 \
    | { grep -v "tensorboardX\|INFO:fairseq_cli\| | INFO | fairseq_cli" >&2 || true; }
}

variant_key() {  # $1 = variant: what its data-bin is made from (the text's stamps, how it is prepared), hashed;
  # WORK/VARIANT/data-bin/.prepared holds it, and a data-bin made from other text or options is made again
  local v=$1 split lang f
  {
    printf '%s\n' "prepare: ${PREPARE[$v]}" "syntax: ${SYNTAX[$v]}" "multitask: ${MULTITASK[$v]:-0}" \
      "lang filter: $([ "$SAMPLE" = 1 ] || echo "${LANG_FILTER[$v]:-}")"
    [ ! -f "$WORK/text/text.json" ] || cat "$WORK/text/text.json"
    for split in "${splits[@]}"; do
      for lang in "$SRC" "$TGT"; do
        for f in "$WORK/text/$split.$lang.conllu" "$WORK/text/$split.$lang"; do
          [ -f "$f" ] || continue
          echo "$split.$lang"; if [ -f "$f.done" ]; then cat "$f.done"; else sha256sum < "$f"; fi
          break
        done
      done
    done
  } | sha256sum | cut -d' ' -f1
}

stage_variant() {  # $1 = variant: WORK/$1/text, the inputs of prepare.py (or of the multi-task corpus); run
  # in $(...), where bash drops set -e: every step returns on failure itself
  local v=$1 split lang dir="$WORK/$1/text"
  rm -rf "$dir" && mkdir -p "$dir" || return 1
  for split in "${splits[@]}"; do
    for lang in "$SRC" "$TGT"; do  # one input per side: its parse when it has one, else its tokenised text
      if [ -f "$WORK/text/$split.$lang.conllu" ]; then ln -s "$WORK/text/$split.$lang.conllu" "$dir/" || return 1
      else ln -s "$WORK/text/$split.$lang" "$dir/" || return 1; fi
    done
  done
  if [ "${MULTITASK[$v]:-0}" = 1 ]; then
    rm -rf "$WORK/$v/multitask"  # no split of an earlier run left for prepare.py if this one fails
    fairseq-syntax-multitask -s "$SRC" -t "$TGT" --trainpref "$dir/train" --validpref "$dir/valid" \
      --testpref "$dir/test" -o "$WORK/$v/multitask" --no-progress >&2 || return 1
    dir="$WORK/$v/multitask"
  fi
  echo "$dir"
}

recipe_prepare() {  # $@ = models: prepare only the data-bins they train on (default: every one)
  local v m k split lang dir syntax args key selected=""
  if [ -n "${DATA_FROM:-}" ]; then  # the other direction's preparation builds the shared data-bin
    for m in "$@"; do model_of "$m"; done
    log "data shared with $DATA_FROM: $DATA_WORK"
    WORK="$DATA_WORK" bash "$ROOT/examples/$DATA_FROM/prepare.sh" "$@"
    return
  fi
  for m in "$@"; do
    model_of "$m"; [[ " $selected " == *" ${DATA[$m]} "* ]] || selected="$selected ${DATA[$m]}"
  done
  mkdir -p "$WORK"
  data_lock exclusive
  fetch
  make_text  # before VARIANTS narrows to the selected models' variants: the tokens of all of them
  [ -z "$selected" ] || VARIANTS=$selected
  for v in $VARIANTS; do
    key=$(variant_key "$v")
    if [ -f "$WORK/$v/data-bin/.prepared" ]; then  # written below once prepare.py finished
      # an earlier recipe's marker is empty: its raw data passed fetch above, so it stands as this text's
      [ -s "$WORK/$v/data-bin/.prepared" ] || echo "$key" > "$WORK/$v/data-bin/.prepared"
      if [ "$(cat "$WORK/$v/data-bin/.prepared")" = "$key" ]; then
        log "variant $v: $WORK/$v/data-bin is complete (remove it to rebuild)"; continue
      fi
      log "variant $v: $WORK/$v/data-bin was made from other text or options: made again"
      rm -f "$WORK/$v/data-bin/.prepared"
    fi
    log "variant $v: ${PREPARE[$v]} (syntax: ${SYNTAX[$v]})"
    dir=$(stage_variant "$v") || die "variant $v: its inputs could not be staged"
    syntax=${SYNTAX[$v]}; [ "${MULTITASK[$v]:-0}" = 1 ] && syntax=none
    words args "${PREPARE[$v]}"
    if [ -n "${LANG_FILTER[$v]:-}" ]; then
      if [ "$SAMPLE" = 1 ]; then log "sample: no --lang-filter (the sample's words are synthetic)"
      else args+=(--lang-filter "${LANG_FILTER[$v]}"); fi
    fi
    python "$ROOT/preprocess/prepare.py" -s "$SRC" -t "$TGT" --trainpref "$dir/train" --validpref "$dir/valid" \
      --testpref "$dir/test" --destdir "$WORK/$v/data-bin" --workdir "$WORK/$v/work" --syntax "$syntax" \
      "${args[@]}" --text-record "$WORK/text/text.json" --overwrite --no-progress 2>&1 | { grep -v "tensorboardX\|INFO:fairseq_cli\| | INFO | fairseq_cli" >&2 || true; }
    echo "$key" > "$WORK/$v/data-bin/.prepared"  # a killed run leaves none: prepare.py runs again, reusing its finished chunks
  done
  log "data-bins: $(for v in $VARIANTS; do printf '%s ' "$WORK/$v/data-bin"; done)"
}

# ---------------------------------------------------------------- training
gpu_count() {
  if [ -n "${GPUS:-}" ]; then echo "$GPUS"
  elif command -v nvidia-smi > /dev/null && nvidia-smi -L > /dev/null 2>&1; then nvidia-smi -L | wc -l
  else echo 1; fi
}

batch_args() {  # $1 = tokens:N | sentences:N -> per-GPU batch and --update-freq making N per update
  local kind=${1%%:*} n=${1##*:} gpus max
  gpus=$(gpu_count); max=${MAX_TOKENS:-4096}
  if [ "$kind" = tokens ]; then
    echo "--max-tokens $max --update-freq $(( (n + max * gpus - 1) / (max * gpus) ))"
  else
    echo "--batch-size $(( (n + gpus - 1) / gpus )) --update-freq 1"
  fi
}

model_list() {  # this dataset's models, baselines first (their hypotheses serve the bootstrap tests)
  local m
  for m in $(printf '%s\n' "${!DATA[@]}" | sort); do [ "${BASELINE[$m]:-transformer}" = "$m" ] && echo "$m"; done
  for m in $(printf '%s\n' "${!DATA[@]}" | sort); do [ "${BASELINE[$m]:-transformer}" = "$m" ] || echo "$m"; done
}

model_of() {  # $1 = model name, checked against this dataset's models (MODEL_seedN: MODEL reseeded)
  [ -n "${1:-}" ] || die "usage: $(basename "$0") MODEL [extra fairseq options]; models: $(echo $(model_list))"
  seeded_model "$1"
  [ -n "${DATA[$1]:-}" ] || die "unknown model '$1' for $NAME; models: $(echo $(model_list)) (and MODEL_seedN: MODEL with --seed N)"
}

seeded_model() {  # $1 = MODEL_seedN, N > 1: defines it as MODEL's settings with --seed N, its own checkpoints and
  # evaluation (WORK/{checkpoints,eval}/MODEL_seedN); its bootstrap baseline is its baseline's same seed
  # (BASE_seedN), or for a baseline seed 1 of itself (what the seed alone moves), and so for ALSO_AGAINST.
  # A name defined in the config (e.g. transformer_seed2) keeps its definition.
  local name=$1 base seed b others=""
  [[ $name =~ ^(.+)_seed([0-9]+)$ ]] || return 0
  base=${BASH_REMATCH[1]} seed=${BASH_REMATCH[2]}
  [ -z "${DATA[$name]:-}" ] && [ -n "${DATA[$base]:-}" ] || return 0
  [ "$seed" -gt 1 ] || die "$name: seed 1 is $base itself"
  [[ " ${TRAIN[$base]//$'\n'/ } " == *" --seed 1 "* ]] || die "$name: the settings of $base have no --seed 1 to replace"
  DATA[$name]=${DATA[$base]} BATCH[$name]=${BATCH[$base]}
  [ -z "${CHECKPOINT_OF[$base]:-}" ] || CHECKPOINT_OF[$name]=${CHECKPOINT_OF[$base]}_seed$seed
  [ -z "${TASK[$base]:-}" ] || TASK[$name]=${TASK[$base]}
  [ -z "${DECODE[$base]:-}" ] || DECODE[$name]=${DECODE[$base]}
  local train=" ${TRAIN[$base]//$'\n'/ } "
  TRAIN[$name]="${train/ --seed 1 / --seed $seed }"
  b=${BASELINE[$base]:-transformer}
  if [ "$b" = "$base" ]; then BASELINE[$name]=$base; else BASELINE[$name]=${b}_seed$seed; seeded_model "${b}_seed$seed"; fi
  for b in ${ALSO_AGAINST[$base]:-}; do others="$others ${b}_seed$seed"; seeded_model "${b}_seed$seed"; done
  [ -z "$others" ] || ALSO_AGAINST[$name]=${others# }
}

require_prepared() {  # $1 = a data-bin: prepare.sh finished it (its .prepared marker), or stop; fairseq's own
  # task (the LSTMs', C&H's) does not look for an interrupted prepare's marker as syntax_translation does
  [ -d "$1" ] || die "$1 does not exist: run prepare.sh first"
  [ -f "$1/.prepared" ] || die "$1 is not finished (no .prepared: its prepare.sh was interrupted or is still running): run prepare.sh again"
}

hold_flock() {  # $1 = lock file, $2 = -x | -s, $3 = what a holder of the lock is doing (the refusal), $4 = this run
  # The kernel's flock on $1, held by an open descriptor for this script's life and its children's (fairseq-train
  # keeps it while it runs, even when this script is killed); the kernel drops it when the last holder dies, so
  # there is no stale lock to remove. A run that finds it held stops, naming the holder.
  local lock=$1 mode=$2 fd
  if ! command -v flock > /dev/null; then log "no flock command: nothing stops another run beside this one ($lock)"; return 0; fi
  mkdir -p "$(dirname "$lock")"
  exec {fd}>> "$lock"
  flock -n $mode "$fd" || die "$3 ($lock: $(tail -1 "$lock" 2>/dev/null))"
  echo "pid $$ on $(hostname): $(basename "$0") $4, since $(date '+%F %T')" >> "$lock"
}

model_lock() {  # $1 = model, $2 = exclusive | shared: one run at a time writes a model's checkpoints or eval folder.
  # Two train.sh of one model interleave their checkpoint_last.pt and checkpoint_best.pt (a second queue, a
  # second terminal), an evaluate.sh beside a training reads a checkpoint being written, two evaluate.sh mix
  # their translations: each exits 0. The lock is WORK/locks/MODEL.lock (hold_flock). train.sh and evaluate.sh
  # of MODEL take it exclusively; evaluate.sh of a model that decodes another's checkpoint (CHECKPOINT_OF) takes
  # that one's shared (several may decode it, none while it trains). queue.sh holds it over a model's train
  # and evaluate and names it in FAIRSEQ_SYNTAX_MODEL_LOCK for them.
  local lock="$WORK/locks/$1.lock" mode=-x
  [ "${2:-exclusive}" = shared ] && mode=-s
  [ "${FAIRSEQ_SYNTAX_MODEL_LOCK:-}" = "$lock" ] && return 0  # our queue holds it for us
  [ "${DRY_RUN:-0}" = 1 ] && return 0  # prints commands, writes nothing
  hold_flock "$lock" $mode "$1 is being trained or evaluated by another run; wait for it to end (a second run \
would mix its checkpoints or translations with that one's)" "$1"
}

data_lock() {  # $1 = exclusive | shared: prepare.sh rewrites the raw data, text and data-bins of DATA_WORK while
  # train.sh and evaluate.sh read them: a training beside a prepare (or two prepares, with other settings)
  # read data-bins half rewritten, or trees of one parse with tokens of another, and exited 0. prepare.sh
  # holds DATA_WORK/locks/data.lock exclusively for its run, train.sh and evaluate.sh shared (hold_flock).
  [ "${DRY_RUN:-0}" = 1 ] && return 0
  if [ "$1" = exclusive ]; then
    hold_flock "$DATA_WORK/locks/data.lock" -x "$DATA_WORK's data is in use by another run (a training, an \
evaluation or another prepare.sh): wait for it to end (this prepare would rewrite what it reads)" prepare
  else
    hold_flock "$DATA_WORK/locks/data.lock" -s "$DATA_WORK's data is being prepared by another run: wait for it to \
end (this run would read data-bins being rewritten)" "${2:-}"
  fi
}

# What a model trains on, written at its first start to WORK/checkpoints/MODEL/trained_on.txt: the SHA-256 of the
# data-bin's token dictionaries and BPE codes (sha256sum's lines). A training resumed on a data-bin prepared
# again otherwise (other tokens or codes, dictionaries of the same sizes) would go on silently on other text:
# refused, naming the files that differ. results_table.py records it for models whose task keeps no digests in
# its checkpoints (fairseq's translation task: the LSTMs). A training begun before the record is not held to it.
trained_on() {  # $1 = the data-bin, $2 = the model's checkpoint folder
  local now old f
  now=$(cd "$1" && for f in dict.*.txt *codes*; do
          [ -f "$f" ] && [[ $f != *.labels.txt ]] && sha256sum "$f"; done; true)
  if [ -f "$2/trained_on.txt" ]; then
    old=$(cat "$2/trained_on.txt")
    [ "$old" = "$now" ] || die "$1 is not the data-bin $2 was trained on: $(diff <(echo "$old") <(echo "$now") \
| sed -n 's/^[<>] [0-9a-f]*  //p' | sort -u | tr '\n' ' ')differ from $2/trained_on.txt; train on the data-bin it \
started on, or remove $2 to train it again"
  elif [ ! -f "$2/checkpoint_last.pt" ]; then
    mkdir -p "$2"; printf '%s\n' "$now" > "$2/trained_on.txt"
  fi
}

recipe_train() {
  model_of "${1:-}"
  local m=$1; shift
  if [ -n "${CHECKPOINT_OF[$m]:-}" ]; then  # nothing of its own to train (a queue passes over it)
    [ -d "$WORK/checkpoints/${CHECKPOINT_OF[$m]}" ] || die "$m decodes ${CHECKPOINT_OF[$m]}'s checkpoint: train ${CHECKPOINT_OF[$m]} first"
    log "$m decodes ${CHECKPOINT_OF[$m]}'s checkpoint: nothing to train (evaluate.sh $m)"; return 0
  fi
  local bin="$DATA_WORK/${DATA[$m]}/data-bin" sample=() extra=()
  require_prepared "$bin"
  data_lock shared "train $m"
  model_lock "$m"
  if [ "$SAMPLE" = 1 ]; then  # the paper's model, narrowed to run in seconds on CPU
    if [[ "${TRAIN[$m]}" == *lstm* ]]; then sample=(--embed-dim 32)
    else sample=(--encoder-embed-dim 32 --decoder-embed-dim 32 --encoder-ffn-embed-dim 64 --decoder-ffn-embed-dim 64)
    fi
    sample+=(--max-update 2 --cpu --num-workers 0 --max-tokens 1024 --batch-size 64 --update-freq 1
             --no-epoch-checkpoints --log-interval 1)
    # a switch to the head's own tree after the warm-up: after the first of the 2 updates (else never)
    [[ " ${TRAIN[$m]//$'\n'/ } " == *" --self-parse-train-after "* ]] && sample+=(--self-parse-train-after 1)
  fi
  [ -n "${EXTRA_TRAIN_ARGS:-}" ] && read -r -a extra <<< "$EXTRA_TRAIN_ARGS"
  local -a cmd opts batch
  words opts "${TRAIN[$m]}"; words batch "$(batch_args "${BATCH[$m]}")"
  if [ "$SAMPLE" = 1 ]; then  # validation BLEU of a 2-update model: cap its output length as evaluate does
    local i
    for i in "${!opts[@]}"; do
      [ "${opts[$i]}" = --eval-bleu-args ] && opts[i+1]="${opts[i+1]%\}}, \"max_len_a\": 1.2, \"max_len_b\": 4}"
    done
  fi
  cmd=(--task "${TASK[$m]:-syntax_translation}" --source-lang "$SRC" --target-lang "$TGT" "${opts[@]}" "${batch[@]}"
       --log-format simple --log-interval 100 "${sample[@]}" "${extra[@]}" "$@")
  [ "${DRY_RUN:-0}" = 1 ] || trained_on "$bin" "$WORK/checkpoints/$m"
  PIPELINE_ANNOUNCE=log PIPELINE_DRY_RUN=${DRY_RUN:-0} pipeline_train - "$bin" "$WORK/checkpoints/$m" "${cmd[@]}"
}

# ---------------------------------------------------------------- evaluation
recipe_evaluate() {
  model_of "${1:-}"
  local m=$1; shift
  local trained=${CHECKPOINT_OF[$m]:-$m}
  local v=${DATA[$m]} out="$WORK/eval/$m" ck="$WORK/checkpoints/$trained/checkpoint_best.pt" cpu=()
  model_lock "$m"
  [ "$trained" = "$m" ] || model_lock "$trained" shared
  data_lock shared "evaluate $m"
  [ -f "$ck" ] || ck="$WORK/checkpoints/$trained/checkpoint_last.pt"
  [ -f "$ck" ] || die "no checkpoint in $WORK/checkpoints/$trained: run train.sh $trained first"
  require_prepared "$DATA_WORK/$v/data-bin"
  # the sample's 2-update models would emit max-length garbage (200 steps x beam): cap their output length
  [ "$SAMPLE" = 1 ] && cpu=(--cpu --max-len-a 1.2 --max-len-b 4)
  mkdir -p "$out"
  # the checkpoint decoded: results_table.py reads what it recorded of the text it trained on
  if [ "${DRY_RUN:-0}" != 1 ]; then
    realpath "$ck" > "$out/checkpoint.txt" || die "could not write $out/checkpoint.txt"
    rm -f "$out/.restored"  # evaluated here: no longer a committed run standing in (tanaka_seeds.sh)
  fi
  local -a decode; words decode "${DECODE[$m]:---beam 4 --lenpen 0.6}"
  pipeline_generate "$out" "$DATA_WORK/$v/data-bin" "$ck" --task "${TASK[$m]:-syntax_translation}" \
    --source-lang "$SRC" --target-lang "$TGT" "${decode[@]}" --batch-size 64 --required-batch-size-multiple 1 \
    "${cpu[@]}" "$@" || die "translating the test set failed"
  local ref_tok="$DATA_WORK/$v/work/test.tok.$TGT" src_tok="$DATA_WORK/$v/work/test.tok.$SRC"
  if [ "${MULTITASK[$v]:-0}" = 1 ]; then  # the length buckets count the source's words, not C&H's task tags
    sed -E 's/^<translate> //; s/ <translate>$//' "$src_tok" > "$out/src.tok"; src_tok="$out/src.tok"
  fi
  local n_hyp n_ref; n_hyp=$(wc -l < "$out/hyp.tok"); n_ref=$(wc -l < "$ref_tok")
  [ "$n_hyp" = "$n_ref" ] || die "$out/generate.out has $n_hyp translations for $n_ref test sentences"
  local base=${BASELINE[$m]:-transformer} base_dir=""
  [ "$base" = "$m" ] || base_dir="$WORK/eval/$base"  # a baseline has no bootstrap test
  if [ ! -f "$RAW/test.sets" ]; then
    score_test_set "$out" "$out/hyp.tok" "$src_tok" "$ref_tok" "$RAW/test.$TGT" "$base_dir"
    score_against_others "$m" "$out" "$src_tok" "$ref_tok"
    parse_head_uas "$m" "$ck" "$out"
    return
  fi
  local set lines first=1 d f
  while read -r set lines; do  # TEST_SETS: the joined test split, scored set by set
    d="$out/$set"; mkdir -p "$d"
    for f in hyp.tok:"$out/hyp.tok" src.tok:"$src_tok" ref.tok:"$ref_tok"; do
      sed -n "$first,$((first + lines - 1))p" "${f#*:}" > "$d/${f%%:*}"
    done
    log "$set (test lines $first-$((first + lines - 1)))"
    score_test_set "$d" "$d/hyp.tok" "$d/src.tok" "$d/ref.tok" "$RAW/$set.$TGT" "${base_dir:+$base_dir/$set}"
    first=$((first + lines))
  done < "$RAW/test.sets"
  [ $((first - 1)) = "$n_hyp" ] || die "$RAW/test.sets counts $((first - 1)) test lines, the test split has $n_hyp"
  score_against_others "$m" "$out" "$src_tok" "$ref_tok"
  parse_head_uas "$m" "$ck" "$out"
}

score_against_others() {  # $1 = model, $2 = its eval folder (scored), $3 / $4 = the test split's tokenised
  # source / reference: the same translations against each of ALSO_AGAINST[$1] (the paper's other
  # baselines), in $2/[SET/]vs_BASE/; a baseline not evaluated yet is skipped with a line saying so (a
  # vs_BASE folder without the bootstrap would make a table row with no test)
  local b set lines
  rm -rf "${2:?}"/vs_* "${2:?}"/*/vs_*  # an earlier evaluation's rows: each is scored again below, or left out
  for b in ${ALSO_AGAINST[$1]:-}; do
    [ -n "${DATA[$b]:-}" ] || die "ALSO_AGAINST[$1]: unknown model '$b'"
    log "$1 against $b"
    if [ ! -f "$RAW/test.sets" ]; then
      if [ ! -f "$WORK/eval/$b/hyp.txt" ]; then
        log "not tested against $b: no $WORK/eval/$b/hyp.txt (evaluate $b, then $1 again)"; continue
      fi
      mkdir -p "$2/vs_$b"
      score_test_set "$2/vs_$b" "$2/hyp.tok" "$3" "$4" "$RAW/test.$TGT" "$WORK/eval/$b"
      continue
    fi
    while read -r set lines; do
      if [ ! -f "$WORK/eval/$b/$set/hyp.txt" ]; then
        log "not tested against $b on $set: no $WORK/eval/$b/$set/hyp.txt (evaluate $b, then $1 again)"; continue
      fi
      mkdir -p "$2/$set/vs_$b"
      score_test_set "$2/$set/vs_$b" "$2/$set/hyp.tok" "$2/$set/src.tok" "$2/$set/ref.tok" "$RAW/$set.$TGT" \
        "$WORK/eval/$b/$set"
    done < "$RAW/test.sets"
  done
}

parse_head_uas() {  # $1 = model, $2 = checkpoint, $3 = eval folder: a model with parse heads (DBSA, SISA,
  # SyncAttn) gets its heads' trees on the whole test split (MST decoding) and their UAS against the
  # data's parses (the parser's or gold), in $3/uas.txt, and the trees in $3/induced.{src,tgt}.conllu
  [[ "${TRAIN[$1]}" =~ --arch\ transformer_(dbsa|dbsa_enc|dbsa_dec|sisa|syncattn|dep_rel_self)\  ]] || return 0
  local cpu=(); [ "$SAMPLE" = 1 ] && cpu=(--cpu)
  pipeline_induce "$3/induced" "$DATA_WORK/${DATA[$1]}/data-bin" "$2" "${cpu[@]}" > "$3/uas.txt" \
    || die "inducing the parse heads' trees failed"
  cat "$3/uas.txt" >&2
}

score_test_set() {  # $1 = folder, $2 = hypotheses (tokenised), $3 = source (tokenised), $4 = reference
  # (tokenised), $5 = raw reference, $6 = the baseline's folder ('' for a baseline): $1/{hyp.txt,scores.*}
  local out=$1 hyp_tok=$2 src_tok=$3 ref_tok=$4 ref_raw=$5 base_dir=$6
  local args=(--source "$src_tok" --json "$out/scores.json" --plot "$out/bleu_by_length.png")
  if [ "$TGT" = ja ] && [ "${JA_SCORE:-tokens}" = mecab ]; then  # detokenised, MeCab's tokens for every model
    sed 's/ //g' "$hyp_tok" > "$out/hyp.txt"
    args+=(--hyp "$out/hyp.txt" --ref "$ref_raw" --tokenize ja-mecab --ribes)
  elif [ "$TGT" = ja ] || [ "${BLEU_ON_TOKENS:-0}" = 1 ]; then  # WAT: BLEU on the tokens (KyTea / Moses)
    cp "$hyp_tok" "$out/hyp.txt"; args+=(--hyp "$out/hyp.txt" --ref "$ref_tok" --tokenize none)
    { [ "$TGT" = ja ] || [ "${RIBES:-0}" = 1 ]; } && args+=(--ribes)
  else  # sacreBLEU on detokenised text against the raw reference
    fairseq-syntax-detokenize -l "$TGT" < "$hyp_tok" > "$out/hyp.txt"  # Moses + in-word hyphens rejoined
    args+=(--hyp "$out/hyp.txt" --ref "$ref_raw")
    [ "${RIBES:-0}" = 1 ] && args+=(--ribes)
  fi
  if [ -n "$base_dir" ] && [ -f "$base_dir/hyp.txt" ]; then args+=(--baseline "$base_dir/hyp.txt")
  elif [ -n "$base_dir" ]; then log "no $base_dir/hyp.txt yet: evaluate the baseline first for the bootstrap test"; fi
  fairseq-syntax-evaluate "${args[@]}" | tee "$out/scores.txt"
}

recipe_help() {  # the dataset's header, the steps, the variables and the models
  sed -n '/^[^#]/q; s/^# \{0,1\}//p' "$dataset_dir/config.sh"
  echo
  sed -n '/^#   bash/s/^# \{0,1\}//p; /^#      /s/^# \{0,1\}//p' "$ROOT/examples/recipes/step.sh" \
    | sed "s|examples/<dataset>|${dataset_dir#"$ROOT"/}|"
  echo
  sed -n '/^# Variables for users/,/^#$/{/^#./s/^# \{0,1\}//p}' "$ROOT/examples/recipes/recipe.sh"
  echo
  echo "Models: $(echo $(model_list))"
}

load_settings() {  # the dataset's models from this checkout's table of training settings, at SIZE (cpu | base)
  # (pure Python, no packages: any python3 reads it, before the environment is built too)
  local table
  table=$(PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}" python3 -m fairseq_syntax.cli.settings "$NAME" \
    --size "${SIZE:-cpu}" --bash) \
    || die "could not read the training settings of $NAME (fairseq-syntax-settings $NAME --size ${SIZE:-cpu})"
  eval "$table"
}

recipe() {
  local step=$1; shift
  load_settings
  case "${1:-}" in -h|--help) recipe_help; return ;; esac
  # shellcheck disable=SC1091
  source "$ROOT/examples/setup_env.sh"
  WORK="${WORK:-$ROOT/work/$NAME}"
  if [ -n "${DATA_FROM:-}" ]; then DATA_WORK="${DATA_WORK:-$(dirname "$WORK")/$DATA_FROM}"; else DATA_WORK="$WORK"; fi
  RAW="$DATA_WORK/raw"
  SAMPLE="${SAMPLE:-0}"
  export PYTHONWARNINGS="${PYTHONWARNINGS:-ignore}"
  case $step in
    prepare) recipe_prepare "$@" ;;
    train) recipe_train "$@" ;;
    evaluate) recipe_evaluate "$@" ;;
    *) die "unknown step $step" ;;
  esac
}
