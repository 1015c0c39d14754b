# The CPU-sized model table shared by the real-corpus recipes (Multi30k En-De, Tanaka Ja-En / En-Ja): every
# model of the five papers and one principled try per model, at one setting (same size, budget and seed), as
# TRAIN / DATA / BATCH / TASK / DECODE / BASELINE / ALSO_AGAINST entries of examples/recipes/recipe.sh.
# The dataset's config.sh sources it after setting CPU_MAX_UPDATE, CPU_WARMUP, CPU_LR (transformers) and
# CPU_LSTM_EPOCHS (LSTMs); every model trains on the data variant 'main' (parses on both sides), ch and
# ch_u4000 on 'ch' (the C&H multi-task corpus).
: "${CPU_MAX_UPDATE:?}" "${CPU_WARMUP:?}" "${CPU_LR:?}" "${CPU_LSTM_EPOCHS:?}"

# ---------------------------------------------------------------- sizes and budget
# SIZE=cpu (default): one setting for every transformer-family model (same data, size, budget, seed), sized
# for a 2-core CPU: 3+3 layers, d 128, FFN 512, 4 heads, CPU_MAX_UPDATE updates of 4,096 tokens, warm-up
# CPU_WARMUP, lr CPU_LR (the dataset's config sets them before sourcing this file; Multi30k's: 2,000, 400,
# 0.002). Compute per update is dominated by the layers, not the 8k output layer (one thread, fwd + bwd + Adam
# on 3,420 target tokens: d 256 / FFN 1024 2.7 s, d 128 / FFN 512 1.0 s).
SIZE=${SIZE:-cpu}
case $SIZE in
  cpu)
    layers=3
    size="--encoder-layers $layers --decoder-layers $layers --encoder-embed-dim 128 --decoder-embed-dim 128
      --encoder-ffn-embed-dim 512 --decoder-ffn-embed-dim 512 --encoder-attention-heads 4
      --decoder-attention-heads 4"
    budget="--max-update $CPU_MAX_UPDATE --warmup-updates $CPU_WARMUP --lr $CPU_LR --num-workers 0"
    tokens=4096
    lstm_budget="--max-epoch $CPU_LSTM_EPOCHS --num-workers 0"
    ;;
  base)  # the presets' Transformer base (the papers' size); GPUs
    layers=6
    size=""
    budget="--max-update 20000 --warmup-updates 4000 --lr 0.0007"
    tokens=8192
    lstm_budget="--max-epoch $CPU_LSTM_EPOCHS"
    ;;
  *) die "SIZE=$SIZE: cpu or base" ;;
esac
# the papers' parse-head / sync layers sit at a depth of a 6-layer model: here at the same relative depth
# (rounded): DBSA / SISA layer 4 of 6 (L 3: 2, L 4: 3), SyncAttn's l_sync 5 of 6 (L 3 or 4: 3)
dbsa_layer=$(( (4 * layers + 3) / 6 )); sync_layer=$(( (5 * layers + 3) / 6 ))
# the self-parsing dep+rel's parse head in the first third of the encoder (L 3: layer 1, L 6: 2): the layers above
# it read its tree at inference
self_layer=$(( layers / 3 ))
# the same for every transformer-family model: Adam (0.9, 0.98), inverse square root schedule, dropout 0.3
# and label smoothing 0.1 (small data), tied embeddings (joint BPE), seed 1, a checkpoint per epoch (resumable:
# train.sh again continues from checkpoint_last.pt), the last 5 kept; the checkpoint evaluated is the one with
# the best validation translation NLL (nll_loss, not loss: the parse and sync losses must not pick it)
common="$size --share-all-embeddings --optimizer adam --adam-betas '(0.9, 0.98)' --lr-scheduler inverse_sqrt
  $budget --dropout 0.3 --label-smoothing 0.1 --seed 1 --keep-last-epochs 5 --best-checkpoint-metric nll_loss"
ls="--criterion label_smoothed_cross_entropy"
# parse losses normalised as in the authors' DBSA code (sum over all gold arcs of the side)
dep="--criterion label_smoothed_cross_entropy_with_dependency --dependency-normalization arcs"

for m in transformer transformer_seed2 rel dep dep_rel dep_rel_self dbsa_enc dbsa_dec dbsa pascal sisa sh dbsa_sync syncattn \
    dbsa_enc_lambda05 dbsa_dec_lambda05 dbsa_lambda05 dep_rel_l4 dep_l4 pascal_h3 sisa_lambda05 sh_label3 syncattn_sync2; do
  DATA[$m]=main; BATCH[$m]=tokens:$tokens
done
for m in ch ch_u4000; do DATA[$m]=ch; BATCH[$m]=tokens:$tokens; TASK[$m]=translation; done
TRAIN[transformer]="--arch transformer $ls $common"
TRAIN[transformer_seed2]="--arch transformer $ls $common --seed 2"
# Omote et al. (2019) Sec. 5.1: relative positions clipped at k = 2, tree-depth differences at l = 2
TRAIN[rel]="--arch transformer_rel $ls $common"
TRAIN[dep]="--arch transformer_dep $ls $common"
TRAIN[dep_l4]="--arch transformer_dep --rel-dep-l 4 $ls $common"
TRAIN[dep_rel]="--arch transformer_dep_rel $ls $common"
TRAIN[dep_rel_l4]="--arch transformer_dep_rel --rel-dep-l 4 $ls $common"
# parser-free decoding (docs/relative.md): dep+rel fed at inference by its own parse head (DBSA's 2019 head, trained
# on the parser's trees with weight 0.5: the weight the DBSA try kept on Tanaka), the dependency terms above it;
# in training the tree layers read the parser's trees
TRAIN[dep_rel_self]="--arch transformer_dep_rel_self --dbsa-encoder-layer $self_layer $dep --dependency-lambda-enc 0.5
  $common"
# Deguchi et al. (2019) Sec. 3.2 / 4: lambda_enc = lambda_dec = 1.0, parse heads in layer 4 of 6, the 2019
# form of the parse head (Eq. 14: unscaled, Q U2 bias), decoder rows as in the authors' code (predicting)
TRAIN[dbsa_enc]="--arch transformer_dbsa_enc --dbsa-encoder-layer $dbsa_layer $dep --dependency-lambda-enc 1.0 $common"
TRAIN[dbsa_dec]="--arch transformer_dbsa_dec --dbsa-decoder-layer $dbsa_layer $dep --dependency-lambda-dec 1.0
  $common"
TRAIN[dbsa_enc_lambda05]="--arch transformer_dbsa_enc --dbsa-encoder-layer $dbsa_layer $dep --dependency-lambda-enc 0.5
  $common"
TRAIN[dbsa_dec_lambda05]="--arch transformer_dbsa_dec --dbsa-decoder-layer $dbsa_layer $dep --dependency-lambda-dec 0.5
  $common"
TRAIN[dbsa]="--arch transformer_dbsa --dbsa-encoder-layer $dbsa_layer --dbsa-decoder-layer $dbsa_layer $dep
  --dependency-lambda-enc 1.0 --dependency-lambda-dec 1.0 $common"
TRAIN[dbsa_lambda05]="--arch transformer_dbsa --dbsa-encoder-layer $dbsa_layer --dbsa-decoder-layer $dbsa_layer $dep
  --dependency-lambda-enc 0.5 --dependency-lambda-dec 0.5 $common"
# Bugliarello & Okazaki (2020) Table 2, the En-De low-resource corpus (NC11): h_pascal 2, q 0.4 in layer 1,
# sigma^2 1; S&H label embeddings of 10 dimensions; SISA (their LISA) with lambda 1.0; C&H a plain transformer
TRAIN[pascal]="--arch transformer_pascal --pascal-layer 1 --pascal-heads 2 --pascal-ignore-prob 0.4
  --pascal-variance 1 $ls $common"
TRAIN[pascal_h3]="--arch transformer_pascal --pascal-layer 1 --pascal-heads 3 --pascal-ignore-prob 0.4
  --pascal-variance 1 $ls $common"
TRAIN[sisa]="--arch transformer_sisa --dbsa-encoder-layer $dbsa_layer $dep --dependency-lambda-enc 1.0 $common"
TRAIN[sisa_lambda05]="--arch transformer_sisa --dbsa-encoder-layer $dbsa_layer $dep --dependency-lambda-enc 0.5 $common"
TRAIN[sh]="--arch transformer_sh --label-embed-dim 10 $ls $common"
TRAIN[sh_label3]="--arch transformer_sh --label-embed-dim 3 $ls $common"
TRAIN[ch]="--arch transformer $ls $common"
TRAIN[ch_u4000]="--arch transformer $ls $common --max-update 4000"
# Deguchi et al. (2021) Sec. 5.1: parse heads in layer l_dep = 1 of both sides, lambda_dep 0.5; SyncAttn adds
# L_sync on decoder layer l_sync with lambda_sync 0.5 (their WMT14 En-De value); both in the 2021 form of the
# dependency attention, softmax(Q U K^T / sqrt(d_k)) without a bias (Eq. 4)
TRAIN[dbsa_sync]="--arch transformer_dbsa --dbsa-encoder-layer 1 --dbsa-decoder-layer 1 $dep
  --dependency-lambda-enc 0.5 --dependency-lambda-dec 0.5 --dbsa-bias none --dbsa-scaled $common"
syncattn="--arch transformer_syncattn --dbsa-encoder-layer 1 --dbsa-decoder-layer 1
  --criterion label_smoothed_cross_entropy_with_sync --dependency-lambda-enc 0.5 --dependency-lambda-dec 0.5
  --dependency-normalization arcs --dbsa-bias none --dbsa-scaled --sync-lambda 0.5 $common"
TRAIN[syncattn]="$syncattn --sync-layer $sync_layer"
TRAIN[syncattn_sync2]="$syncattn --sync-layer $((layers - 1))"  # SIZE=base: 5 of 6, as syncattn
BASELINE[transformer_seed2]=transformer  # bootstrap against seed 1: what seed noise alone gives
# the papers' second baselines: Omote et al. compare dep+rel with Shaw's rel too, Deguchi et al. (2021)
# SyncAttn with DBSA at the same setting
ALSO_AGAINST[dep_rel]=rel; ALSO_AGAINST[dep_rel_l4]=rel; ALSO_AGAINST[dep_rel_self]=dep_rel
# dep_rel_self decoded without a parser: its own parse head's tree (the same checkpoint, evaluate.sh only)
DATA[dep_rel_self_own]=main BATCH[dep_rel_self_own]=tokens:$tokens CHECKPOINT_OF[dep_rel_self_own]=dep_rel_self
TRAIN[dep_rel_self_own]=${TRAIN[dep_rel_self]} DECODE[dep_rel_self_own]="--beam 4 --lenpen 0.6 --inference-parser self"
ALSO_AGAINST[dep_rel_self_own]="dep_rel dep_rel_self"
# the same, its tree layers reading the head's own tree in half of the training batches once the warm-up is done
# (the head has learnt the parser's trees by then): does training on its own trees help decoding from them?
DATA[dep_rel_self_st]=main BATCH[dep_rel_self_st]=tokens:$tokens
TRAIN[dep_rel_self_st]="${TRAIN[dep_rel_self]} --self-parse-train 0.5 --self-parse-train-after $CPU_WARMUP"
ALSO_AGAINST[dep_rel_self_st]=dep_rel_self
DATA[dep_rel_self_st_own]=main BATCH[dep_rel_self_st_own]=tokens:$tokens
CHECKPOINT_OF[dep_rel_self_st_own]=dep_rel_self_st TRAIN[dep_rel_self_st_own]=${TRAIN[dep_rel_self_st]}
DECODE[dep_rel_self_st_own]="--beam 4 --lenpen 0.6 --inference-parser self"
ALSO_AGAINST[dep_rel_self_st_own]="dep_rel_self_own dep_rel_self_st"
ALSO_AGAINST[syncattn]=dbsa_sync; ALSO_AGAINST[syncattn_sync2]=dbsa_sync

# Watanabe et al. (2017), as in examples/aspec-en-ja: d 256 (the paper's size at both settings), 2 layers,
# Adam lr 0.01 (0.9, 0.99) halved after epochs 9 and 12, clipping 3.0, weight decay 1e-6, batches of 128
# sentences, greedy decoding. Here on the same BPE data-bin as the transformers (the paper: lowercased words).
lstm_lr() {  # Adam's rate for epochs 1-9, halved for 10-12, quartered from 13 (the paper: 0.01)
  echo "--lr $1,$1,$1,$1,$1,$1,$1,$1,$1,$2,$2,$2,$3"
}
cky="--optimizer adam --adam-betas '(0.9, 0.99)' --weight-decay 1e-6 --clip-norm 3.0 --lr-scheduler fixed
  --criterion cross_entropy --seed 1 --keep-last-epochs 5 $lstm_budget"
for m in lstm_luong cky_lstm; do
  seed2=(); [ "$m" = lstm_luong ] && seed2=("${m}_lr001_seed2")  # the LSTM's seed noise at the kept rate
  for t in "$m" "${m}_lr001" "${seed2[@]}"; do
    DATA[$t]=main; BATCH[$t]=sentences:128; DECODE[$t]="--beam 1"; TASK[$t]=translation
  done
  TRAIN[$m]="--arch $m $cky $(lstm_lr 0.01 0.005 0.0025)"
  TRAIN[${m}_lr001]="--arch $m $cky $(lstm_lr 0.001 0.0005 0.00025)"
done
TRAIN[lstm_luong_lr001_seed2]="${TRAIN[lstm_luong_lr001]} --seed 2"  # as transformer_seed2 for the transformers
BASELINE[lstm_luong]=lstm_luong; BASELINE[cky_lstm]=lstm_luong
BASELINE[lstm_luong_lr001]=lstm_luong; BASELINE[cky_lstm_lr001]=lstm_luong_lr001
BASELINE[lstm_luong_lr001_seed2]=lstm_luong_lr001  # bootstrap against seed 1: the LSTM's seed noise
ALSO_AGAINST[cky_lstm_lr001]=lstm_luong

