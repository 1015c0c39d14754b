# The SyncAttn paper's systems (Deguchi, Tamura, Ninomiya 2021): Transformer, +DBSA, SyncAttn.
#   syncattn_systems PREFIX LAMBDA_SYNC TOKENS VARIANT
# PREFIX: model-name prefix ('' or 'deguchi21-'); LAMBDA_SYNC: Sec. 5.1 (0.5 WMT14 En-De, 0.1 WMT16 En-Ro,
# 10.0 ASPEC Ja-En); TOKENS: batch tokens per update (appendix: 25,000 / 6,000 / 12,000); VARIANT: the
# data-bin (parses on both sides, BPE and filters per dataset, set by the config). Common (Sec. 5.1):
# Transformer base, label smoothing 0.1, 100,000 updates, lambda_dep 0.5 and l_dep 1 (parse heads in layer 1),
# l_sync 5, beam 4 with length penalty (0.6: the value is not given). The paper's optimiser table is not in
# our copy of its appendix: Adam (0.9, 0.98), inverse square root, 4,000 warm-up steps, lr 0.0007 as in
# Vaswani et al. (2017), the base the paper follows. Parse heads (DBSA baseline and SyncAttn) in the paper's
# form, softmax(Q U K^T / sqrt(d_k)) without a bias (Eq. 4: --dbsa-bias none --dbsa-scaled), decoder rows as
# in the authors' DBSA code (--dbsa-decoder-rows predicting, the default), parse losses normalised as that
# code does (--dependency-normalization arcs; no SyncAttn code is public).
syncattn_systems() {
  local p=$1 lam=$2 tokens=$3 v=$4 m
  local share="--share-all-embeddings"
  [[ "${PREPARE[$v]}" == *--separate-bpe* ]] && share="--share-decoder-input-output-embed"
  local common="$share --optimizer adam --adam-betas '(0.9, 0.98)' --lr 0.0007 --lr-scheduler inverse_sqrt
    --warmup-updates 4000 --max-update 100000 --dropout 0.1 --label-smoothing 0.1"
  for m in transformer dbsa syncattn; do DATA[$p$m]=$v; BATCH[$p$m]=tokens:$tokens; BASELINE[$p$m]=${p}transformer; done
  TRAIN[${p}transformer]="--arch transformer --criterion label_smoothed_cross_entropy $common"
  local form="--dbsa-bias none --dbsa-scaled --dependency-normalization arcs"
  TRAIN[${p}dbsa]="--arch transformer_dbsa --dbsa-encoder-layer 1 --dbsa-decoder-layer 1
    --criterion label_smoothed_cross_entropy_with_dependency --dependency-lambda-enc 0.5 --dependency-lambda-dec 0.5
    $form $common"
  TRAIN[${p}syncattn]="--arch transformer_syncattn --dbsa-encoder-layer 1 --dbsa-decoder-layer 1 --sync-layer 5
    --criterion label_smoothed_cross_entropy_with_sync --dependency-lambda-enc 0.5 --dependency-lambda-dec 0.5
    --sync-lambda $lam $form $common"
}
