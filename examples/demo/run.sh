#!/usr/bin/env bash
# The main job (README quickstart, first command): what syntax buys, in about 6 minutes on a 2-core CPU.
#
# Sets up the environment once (examples/setup_env.sh), then:
#   1. generates the seeded synthetic corpus (gold trees on both sides; its word order depends on the
#      source tree: a prepositional phrase moves with its attachment),
#   2. prepares a data-bin with preprocess/prepare.py (BPE, fairseq-preprocess, tree alignment,
#      syntax binarization),
#   3. trains three models side by side (one CPU thread each) at the same number of updates and seed:
#      fairseq's transformer; the same transformer with dependency relative positions from the source
#      parse in the encoder (Omote et al. 2019, with Shaw et al.'s linear positions on both sides:
#      transformer_dep_rel); and DBSA (Deguchi et al. 2019), whose parse heads in encoder and decoder
#      layer 2 learn to parse,
#   4. translates the test set with fairseq-generate (beam 4; the three side by side), prints sacreBLEU
#      of each with the difference to the transformer, and the UAS of DBSA's parse heads on the test
#      set (fairseq-syntax-induce-parses),
#   5. translates a new sentence (generated like the corpus, in none of its splits) with
#      fairseq-interactive, its parse given by the CoNLL-U lookup parser (--inference-parser conllu;
#      udpipe or stanza parse real text).
#
# Variables (defaults in brackets):
#   DEMO_DIR       where everything is written        [<repo>/work/demo]
#   DEMO_UPDATES   training updates per model          [250]
#   DEMO_TRAIN     synthetic training sentence pairs   [20000]
#   DEMO_SEED      corpus and training seed            [1]
#   DEMO_TEST      test sentences (and valid)          [500]
#   DEMO_RECORD    a JSON list to add this run's record to, e.g. examples/demo/records.json (docs/results.md's
#                  figures are a record's there); the record is always in DEMO_DIR/demo.json
#                  (examples/demo/record.py: the scores, each step's wall seconds, the CPU, the commit)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
t0=$(date +%s.%N)  # before the environment: a fresh clone's first run builds it
# shellcheck disable=SC1091
source "$ROOT/examples/setup_env.sh"
# shellcheck disable=SC1091
source "$ROOT/examples/recipes/pipeline.sh"
cd "$ROOT"

DIR="${DEMO_DIR:-$ROOT/work/demo}"
UPDATES="${DEMO_UPDATES:-250}"
TRAIN="${DEMO_TRAIN:-20000}"
SEED="${DEMO_SEED:-1}"
TEST="${DEMO_TEST:-500}"
export PYTHONWARNINGS="${PYTHONWARNINGS:-ignore}"
RECORD="${DEMO_RECORD:-}"
[ -z "$RECORD" ] || RECORD="$(cd "$(dirname "$RECORD")" && pwd)/$(basename "$RECORD")"
rm -rf "$DIR"
mkdir -p "$DIR"
printf 'start %s\nenvironment %s\n' "$t0" "$(date +%s.%N)" > "$DIR/times.tsv"
mark() { echo "$1 $(date +%s.%N)" >> "$DIR/times.tsv"; }  # $1 = the step just finished
echo "{\"seed\": $SEED, \"updates\": $UPDATES, \"train\": $TRAIN, \"test\": $TEST}" > "$DIR/settings.json"
quiet() { grep -v "tensorboardX\|^INFO\|^20[0-9-]* [0-9:,]* | INFO" || true; }

echo "== 1/5 synthetic corpus -> $DIR/raw"
# and, beside it, new sentences for step 5: the same generator run further (same vocabulary), the 60 test
# sentences after the corpus's
python preprocess/synth.py -o "$DIR/new" --seed "$SEED" --train "$TRAIN" --valid "$TEST" --test $((TEST + 60)) \
  > "$DIR/new.log" 2>&1 &
python preprocess/synth.py -o "$DIR/raw" --seed "$SEED" --train "$TRAIN" --valid "$TEST" --test "$TEST" 2>&1 | quiet
wait $! || { cat "$DIR/new.log" >&2; exit 1; }
mark corpus

echo "== 2/5 prepare (BPE, fairseq-preprocess, align, binarize) -> $DIR/data-bin"
python preprocess/prepare.py -s src -t tgt \
  --trainpref "$DIR/raw/train" --validpref "$DIR/raw/valid" --testpref "$DIR/raw/test" \
  --destdir "$DIR/data-bin" --bpe-merges 2000 --no-progress 2>&1 | quiet
test -f "$DIR/data-bin/train.src-tgt.src.heads.idx"
mark prepare

train() {  # $1 = name, $2 = criterion, remaining = model options: starts it in the background
  local name=$1 criterion=$2; shift 2
  pipeline_train "$DIR/train.$name.log" "$DIR/data-bin" "$DIR/checkpoints/$name" \
    "$@" --share-all-embeddings --dropout 0.1 \
    --optimizer adam --adam-betas '(0.9, 0.98)' --lr 2e-3 --lr-scheduler inverse_sqrt --warmup-updates 100 \
    --criterion "$criterion" --label-smoothing 0.1 \
    --max-tokens 4096 --max-update "$UPDATES" --seed "$SEED" --cpu --no-epoch-checkpoints \
    --log-format simple --log-interval 25 --validate-interval-updates 1000000 --disable-validation &
  PIDS+=($!)
}

progress() {  # one line: each model's updates so far
  local line="" name n
  for name in "${MODELS[@]}"; do
    n=$(grep -o "num_updates[= ][0-9]*" "$DIR/train.$name.log" 2>/dev/null | tail -1 | grep -o "[0-9]*$" || true)
    line+="$(printf '%-12s %4s/%s   ' "$name" "${n:-0}" "$UPDATES")"
  done
  echo "   $line"
}

MODELS=(transformer dep_rel dbsa)
PIDS=()
echo "== 3/5 train ${MODELS[*]} side by side ($UPDATES updates each, seed $SEED, one thread each;" \
     "logs: $DIR/train.*.log)"
train transformer label_smoothed_cross_entropy --arch transformer "${SMALL_TRANSFORMER[@]}"
train dep_rel label_smoothed_cross_entropy --arch transformer_dep_rel "${SMALL_TRANSFORMER[@]}"
train dbsa label_smoothed_cross_entropy_with_dependency --arch transformer_dbsa "${SMALL_TRANSFORMER[@]}" \
  --dbsa-encoder-layer 2 --dbsa-decoder-layer 2
last=""
while kill -0 "${PIDS[@]}" 2>/dev/null; do
  sleep 10
  now=$(progress)
  [ "$now" = "$last" ] || echo "$now"
  last=$now
done
for i in "${!MODELS[@]}"; do
  if ! wait "${PIDS[$i]}" || ! test -f "$DIR/checkpoints/${MODELS[$i]}/checkpoint_last.pt"; then
    tail -20 "$DIR/train.${MODELS[$i]}.log" >&2
    echo "training ${MODELS[$i]} failed (log: $DIR/train.${MODELS[$i]}.log)" >&2
    exit 1
  fi
  grep -h "done training" "$DIR/train.${MODELS[$i]}.log" | sed "s/.*| /   ${MODELS[$i]}: /"
done
mark train

generate() {  # $1 = name: translate the test set (beam 4) into $DIR/gen/$1/hyp.tok
  pipeline_generate "$DIR/gen/$1" "$DIR/data-bin" "$DIR/checkpoints/$1/checkpoint_last.pt" --beam 4 --batch-size 128 \
    --cpu
}

echo "== 4/5 fairseq-generate (beam 4), $TEST test sentences, $UPDATES updates each, seed $SEED"
PIDS=()
for name in "${MODELS[@]}"; do
  generate "$name" &
  PIDS+=($!)
done
pipeline_induce "$DIR/induced/test" "$DIR/data-bin" "$DIR/checkpoints/dbsa/checkpoint_last.pt" --cpu \
  > "$DIR/induce.log" &
PIDS+=($!)
for pid in "${PIDS[@]}"; do
  wait "$pid"
done
mark generate
python "$ROOT/examples/demo/record.py" score "$DIR"  # sacreBLEU of each (13a) and the parse heads' UAS
echo "(dep_rel reads the source tree; DBSA must first learn it: its parse losses slow early training, and after"
echo " 2000 updates it is level with the transformer. docs/benchmarks.md: every model at 2000 updates.)"

echo "== 5/5 a new sentence through fairseq-interactive, parsed by the CoNLL-U lookup parser"
python - "$DIR" "$TEST" <<'PY'
import sys
from fairseq_syntax.data.conllu import read_conllu, write_conllu
d, first = sys.argv[1], int(sys.argv[2])
seen = set()
for split in ("train", "valid", "test"):
    seen.update(open(f"{d}/raw/{split}.src", encoding="utf-8").read().splitlines())
tgt = open(f"{d}/new/test.tgt", encoding="utf-8").read().splitlines()
for i, sent in enumerate(read_conllu(f"{d}/new/test.src.conllu")):
    line = " ".join(sent.words)
    if i >= first and line not in seen and 8 <= len(sent.words) <= 14:
        break
else:
    sys.exit("no new sentence found")
with open(f"{d}/new.src.conllu", "w", encoding="utf-8") as f:
    write_conllu([sent], f)
open(f"{d}/new.src", "w", encoding="utf-8").write(line + "\n")
open(f"{d}/new.ref", "w", encoding="utf-8").write(tgt[i] + "\n")
print("source   ", line)
print("its parse", " ".join(f"{w}<-{sent.words[h - 1] if h else 'ROOT'}" for w, h in zip(sent.words, sent.heads)))
PY
interactive() {  # $1 = name: its translation of the new sentence into $DIR/new.$1.txt
  fairseq-interactive "$DIR/data-bin" --user-dir "$ROOT/fairseq_syntax" --task syntax_translation -s src -t tgt \
    --path "$DIR/checkpoints/$1/checkpoint_last.pt" --beam 4 --cpu \
    --bpe subword_nmt --bpe-codes "$DIR/data-bin/work/bpe.codes.joint" \
    --inference-parser conllu --inference-parser-model "$DIR/new.src.conllu" < "$DIR/new.src" \
    > "$DIR/interactive.$1.out" 2> "$DIR/interactive.$1.log" || { tail -5 "$DIR/interactive.$1.log" >&2; return 1; }
  grep '^D-' "$DIR/interactive.$1.out" | cut -f3 > "$DIR/new.$1.txt"
}
interactive transformer &
interactive dep_rel
wait $!
echo "reference   $(cat "$DIR/new.ref")"
echo "transformer $(cat "$DIR/new.transformer.txt")"
echo "dep_rel     $(cat "$DIR/new.dep_rel.txt")"
mark interactive
python "$ROOT/examples/demo/record.py" finish "$DIR" ${RECORD:+--append "$RECORD"}
