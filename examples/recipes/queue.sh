#!/usr/bin/env bash
# Train and evaluate a list of a dataset's models one after the other, resumable: a model whose evaluation
# finished is skipped, an interrupted one continues from its checkpoint_last.pt (train.sh resumes).
#
#   bash examples/recipes/queue.sh DATASET MODEL [MODEL...]
#
# Each model's output goes to WORK/logs/MODEL.{train,evaluate}.log (WORK as for the dataset's scripts, e.g.
# WORK=work/tanaka-ja-en); one line per model here, with its wall time. Two queues side by side on a 2-core
# CPU (one thread each, OMP_NUM_THREADS=1, the default of the recipes) train 9% (a 2-core Intel Xeon) to 20%
# (a 2-core AMD EPYC) more updates per second than one model on two threads (docs/recipes.md, Tanaka). Put a model's baseline earlier in the same queue (or finish it
# first): evaluate.sh tests each model against its baseline's translations (without them it scores the model
# alone and says so; run evaluate.sh MODEL again later). Two queues may share models: each takes a model's
# lock (WORK/locks/MODEL.lock, as train.sh and evaluate.sh do) for its training and evaluation, and a queue
# that reaches a model the other is at work on waits for it, then skips it.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
dataset=${1:?usage: queue.sh DATASET MODEL [MODEL...]}; shift
[ -f "$root/examples/$dataset/recipe.json" ] || { echo "queue.sh: no dataset $dataset under examples/" >&2; exit 1; }
[ $# -gt 0 ] || { echo "usage: queue.sh DATASET MODEL [MODEL...]" >&2; exit 1; }
WORK="${WORK:-$root/work/$dataset}"
export WORK OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}"
mkdir -p "$WORK/logs"
n=$#; k=0
for m in "$@"; do
  k=$((k + 1))
  done_mark="$WORK/eval/$m/.done"
  if [ -f "$done_mark" ]; then echo "[queue $dataset] $k/$n $m: done before, skipped"; continue; fi
  # the model's lock (examples/recipes/runner/run_locks.py) over its train and evaluate: another queue (or a train.sh in a
  # terminal) at work on it is waited for, then its finished model skipped
  lock="$WORK/locks/$m.lock"
  if command -v flock > /dev/null; then
    mkdir -p "$WORK/locks"
    exec {fd}>> "$lock"
    if ! flock -n -x "$fd"; then
      echo "[queue $dataset] $k/$n $m: another run holds $lock ($(tail -1 "$lock")): waiting for it"
      flock -x "$fd"
    fi
    echo "pid $$ on $(hostname): queue.sh $m, since $(date '+%F %T')" >> "$lock"
    if [ -f "$done_mark" ]; then
      echo "[queue $dataset] $k/$n $m: done by the other run, skipped"; exec {fd}>&-; continue
    fi
  fi
  export FAIRSEQ_SYNTAX_MODEL_LOCK="$lock"
  start=$SECONDS
  echo "[queue $dataset] $k/$n $m: training ($(date '+%F %T'); log $WORK/logs/$m.train.log)"
  bash "$root/examples/$dataset/train.sh" "$m" >> "$WORK/logs/$m.train.log" 2>&1 \
    || { echo "[queue $dataset] $m: train.sh failed, see $WORK/logs/$m.train.log" >&2; exit 1; }
  echo "[queue $dataset] $k/$n $m: evaluating"
  bash "$root/examples/$dataset/evaluate.sh" "$m" > "$WORK/logs/$m.evaluate.log" 2>&1 \
    || { echo "[queue $dataset] $m: evaluate.sh failed, see $WORK/logs/$m.evaluate.log" >&2; exit 1; }
  touch "$done_mark"
  [ -z "${fd:-}" ] || exec {fd}>&-  # the model's lock, given up
  echo "[queue $dataset] $k/$n $m: done in $(( (SECONDS - start) / 60 )) min"
done
