# The steps train -> translate -> extract the hypotheses -> induce the parse heads' trees, in bash, for
# examples/ud_pud/dbsa_uas.sh (the demo and the fidelity runs take the same command lines from
# examples/synthetic/synthetic_pipeline.py, the recipes from fairseq_syntax/recipe_steps/commands.py; the size
# of the small CPU runs, SMALL_TRANSFORMER, is held equal by tests/test_fidelity.py). ROOT must be the
# repository root.
#
#   pipeline_train LOG DATA SAVE_DIR [fairseq-train options...]    fairseq-syntax-train with the plugin, the
#                                                                  syntax_translation task unless --task is given;
#                                                                  its output to LOG (- : to stdout); the command
#                                                                  line to PIPELINE_ANNOUNCE (a function), and
#                                                                  with PIPELINE_DRY_RUN=1 not run
#   pipeline_generate OUT DATA CHECKPOINT [fairseq-generate options...]
#                                                                  translate the test split: OUT/generate.{out,log},
#                                                                  OUT/hyp.tok and OUT/ref.tok in sentence order
#   pipeline_bleu REF HYP                                          sacreBLEU (13a) of HYP against REF, 2 decimals
#   pipeline_induce OUT_PREFIX DATA CHECKPOINT [--split S]         the parse heads' trees (PREFIX.LANG.conllu) and
#                                                                  their UAS lines, printed
#
# SMALL_TRANSFORMER: the size of the small CPU runs (demo, fidelity, UD PUD UAS): 3+3 layers, d 128, FFN 256,
# 4 heads. The recipes' CPU table (fairseq_syntax/recipes/cpu_table.py) is 3+3, d 128, FFN 512.
SMALL_TRANSFORMER=(--encoder-layers 3 --decoder-layers 3 --encoder-embed-dim 128 --decoder-embed-dim 128
                   --encoder-ffn-embed-dim 256 --decoder-ffn-embed-dim 256 --encoder-attention-heads 4
                   --decoder-attention-heads 4)

pipeline_train() {
  local log=$1 data=$2 save=$3 task=(--task syntax_translation); shift 3
  [[ " $* " == *" --task "* ]] && task=()
  local cmd=(fairseq-syntax-train "$data" --user-dir "$ROOT/fairseq_syntax" "${task[@]}" --save-dir "$save" "$@")
  # PIPELINE_ANNOUNCE: a function given the command line (quoted) before it runs; PIPELINE_DRY_RUN=1: only that
  [ -n "${PIPELINE_ANNOUNCE:-}" ] && "$PIPELINE_ANNOUNCE" "$(printf '%q ' "${cmd[@]}")"
  [ "${PIPELINE_DRY_RUN:-0}" = 1 ] && return
  if [ "$log" = - ]; then
    "${cmd[@]}"
    return
  fi
  "${cmd[@]}" > "$log" 2>&1 || { tail -20 "$log" >&2; echo "fairseq-train failed (log: $log)" >&2; return 1; }
}

pipeline_generate() {
  local out=$1 data=$2 ckpt=$3 task=(--task syntax_translation); shift 3
  [[ " $* " == *" --task "* ]] && task=()
  mkdir -p "$out"
  fairseq-generate "$data" --user-dir "$ROOT/fairseq_syntax" "${task[@]}" --path "$ckpt" --remove-bpe "$@" \
    > "$out/generate.out" 2> "$out/generate.log" \
    || { tail -5 "$out/generate.log" >&2; echo "fairseq-generate failed (log: $out/generate.log)" >&2; return 1; }
  grep '^H-' "$out/generate.out" | sort -t- -k2,2n | cut -f3 > "$out/hyp.tok"
  grep '^T-' "$out/generate.out" | sort -t- -k2,2n | cut -f2 > "$out/ref.tok"
  [ "$(wc -l < "$out/hyp.tok")" = "$(wc -l < "$out/ref.tok")" ] \
    || { echo "$out/generate.out: $(wc -l < "$out/hyp.tok") hypotheses for $(wc -l < "$out/ref.tok") references" >&2
         return 1; }
}

pipeline_bleu() { sacrebleu "$1" -i "$2" -m bleu -b -w 2; }

pipeline_induce() {
  local prefix=$1 data=$2 ckpt=$3; shift 3
  mkdir -p "$(dirname "$prefix")"
  fairseq-syntax-induce-parses "$data" --user-dir "$ROOT/fairseq_syntax" --path "$ckpt" --split test \
    --output-prefix "$prefix" "$@" > "$prefix.uas.txt" 2> "$prefix.uas.log" \
    || { tail -5 "$prefix.uas.log" >&2; echo "fairseq-syntax-induce-parses failed (log: $prefix.uas.log)" >&2
         return 1; }
  grep '^UAS' "$prefix.uas.txt" || true
}
