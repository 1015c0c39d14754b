# Tanaka corpus English->Japanese: the source-side models of examples/tanaka-ja-en on the same data-bin
# (prepare.sh runs that recipe's preparation; its data lives in the folder next to WORK named tanaka-ja-en,
# or DATA_WORK). Japanese output is scored with its spaces removed, against the raw reference, with
# sacreBLEU's ja-mecab tokenizer (BLEU and RIBES), the same tokens whatever the model's segmentation.
source "$ROOT/examples/tanaka-ja-en/config.sh"
NAME=tanaka-en-ja SRC=en TGT=ja DATA_FROM=tanaka-ja-en
# the models that read or learn the source tree (a Japanese target tree is the Ja->En recipe's source side)
EN_JA_MODELS="transformer transformer_seed2 rel dep dep_rel pascal sh sisa dep_rel_l4 dep_l4 pascal_h3 sisa_lambda05
  sh_label3 pascal_wat dep_rel_self dep_rel_self_own dep_rel_self_st dep_rel_self_st_own"
for m in "${!DATA[@]}"; do [[ " $(echo $EN_JA_MODELS) " == *" $m "* ]] || unset "DATA[$m]"; done
unset m
