#!/usr/bin/env bash
# Where the tree helps on Tanaka Ja->En: the committed transformer, rel and dep_rel translations (every seed
# committed: examples/tanaka-ja-en/results/*/translations) by bucket of source length, tree depth and longest
# dependency (fairseq-syntax-analyze), against the transformer. Needs the recipe's data-bin (prepare.sh: its
# test split's GiNZA trees) and writes results/analysis/tree_buckets.{json,png}.
#
#   bash examples/tanaka-ja-en/analysis.sh
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"  # the paths the JSON records are the repository's
WORK="${WORK:-work/tanaka-ja-en}"
TANAKA_DIR="${TANAKA_DIR:-${FAIRSEQ_SYNTAX_SHARED:-../shared}/data/small_parallel_enja}"
results="examples/tanaka-ja-en/results"
runs() {  # $1 = model: its committed runs, seed 1 (MODEL.txt) then seeds 2, 3, ...; comma-separated
  local files=() f
  for f in "$results"/*/translations/"$1".txt "$results"/*/translations/"$1"_seed[0-9].txt; do
    [ -f "$f" ] && files+=("$f")
  done
  [ ${#files[@]} -gt 0 ] || { echo "analysis.sh: no committed translations of $1" >&2; exit 1; }
  (IFS=,; echo "${files[*]}")
}
mkdir -p "$results/analysis"
fairseq-syntax-analyze --data "$WORK/main/data-bin" --ref "$TANAKA_DIR/test.en" --tokenize none \
  --system "transformer=$(runs transformer)" --system "rel=$(runs rel)" --system "dep_rel=$(runs dep_rel)" \
  --json "$results/analysis/tree_buckets.json" --plot "$results/analysis/tree_buckets.png"
