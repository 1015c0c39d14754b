# The PASCAL paper's systems (Bugliarello & Okazaki 2020), sourced by the configs of its six datasets.
#   pascal_systems LR BETAS H_PASCAL Q SCALE MERGES [LANG_FILTER]
# LR, BETAS, H_PASCAL, Q: Table 2 for the corpus; SCALE: small (20k updates, dropout 0.3) or large (100k,
# dropout 0.1); MERGES: joint BPE merges (16k small, 32k large); LANG_FILTER: the language identifier
# the paper applies to NC11 and WMT16 (langdetect). Common settings (Sec. "Training details"):
# Transformer base, inverse square root schedule with 8,000 warm-up steps, label smoothing 0.1, 32k-token
# batches, beam 4 and length penalty 0.6. Sources parsed (the paper: CoreNLP; here stanza or your CoNLL-U).
# The paper tunes only the proposed model (Table 2); the baselines share its optimiser settings here.
# Forms: PASCAL's D^p is the Gaussian of Eq. 6 (--pascal-weights parent-only gives Table 7b's ablation);
# SISA's encoder parse head is the 2019 DBSA form (Eq. 14: unscaled, Q U2 bias), 'first' parents.
pascal_systems() {
  local lr=$1 betas=$2 heads=$3 q=$4 scale=$5 merges=$6 lang_filter=${7:-} steps dropout
  if [ "$scale" = small ]; then steps=20000 dropout=0.3; else steps=100000 dropout=0.1; fi
  VARIANTS="main ch"
  SYNTAX[main]=source; PREPARE[main]="--bpe-merges $merges"; LANG_FILTER[main]=$lang_filter
  # C&H: the parse + translate corpus; no language filter there (a parse line's target is a bracketed
  # source-language tree, which the filter would drop as not being in the target language)
  SYNTAX[ch]=source; PREPARE[ch]="--bpe-merges $merges"; MULTITASK[ch]=1
  local common="--share-all-embeddings --optimizer adam --adam-betas '$betas' --lr $lr --lr-scheduler inverse_sqrt
    --warmup-updates 8000 --max-update $steps --dropout $dropout --label-smoothing 0.1"
  local ls="--criterion label_smoothed_cross_entropy"
  local m
  for m in transformer sh sisa ch pascal; do DATA[$m]=main; BATCH[$m]=tokens:32000; done
  DATA[ch]=ch; TASK[ch]=translation
  TRAIN[transformer]="--arch transformer $ls $common"
  TRAIN[sh]="--arch transformer_sh --label-embed-dim 10 $ls $common"
  TRAIN[sisa]="--arch transformer_sisa --criterion label_smoothed_cross_entropy_with_dependency
    --dependency-lambda-enc 1.0 $common"
  TRAIN[ch]="--arch transformer $ls $common"
  TRAIN[pascal]="--arch transformer_pascal --pascal-layer 1 --pascal-heads $heads --pascal-ignore-prob $q
    --pascal-variance 1 $ls $common"
}
