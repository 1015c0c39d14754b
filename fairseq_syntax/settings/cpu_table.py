"""The CPU-sized model table of the real-corpus recipes (Multi30k En-De, Tanaka Ja-En / En-Ja): every model of
the five papers and one principled try per model, at one setting (same data, size, budget and seed).

``size="cpu"``: 3+3 layers, d 128, FFN 512, 4 heads, ``max_update`` updates of 4,096 tokens, warm-up ``warmup``,
lr ``lr`` (the dataset's; Multi30k and Tanaka: 2,000, 400, 0.002), the LSTMs ``lstm_epochs`` epochs (why this
size: docs/recipes.md, "Multi30k English-German"). ``size="base"``: the presets' Transformer base (the papers'
size; GPUs), 20,000 updates of 8,192 tokens, warm-up 4,000, lr 0.0007.

Every transformer-family model: Adam (0.9, 0.98), inverse square root schedule, dropout 0.3 and label smoothing
0.1 (small data), tied embeddings (joint BPE), seed 1, a checkpoint per epoch (resumable), the last 5 kept; the
one evaluated has the best validation translation NLL (``nll_loss``, not ``loss``: the parse and sync losses must
not pick it). Data variant ``main`` (parses on both sides); ``ch`` and ``ch_u4000`` on ``ch`` (C&H multi-task).

Tries (docs/recipes.md, "Tries"): one principled change, from what the papers tune on validation data, for a
model that loses to its baseline or stays inside seed noise; kept only if its best checkpoint's validation NLL
is below the model's. ``*_lambda05``: parse loss weight 0.5 (Deguchi et al. 2021's), not 1.0; ``dep_rel_l4``,
``dep_l4``: depth clip l = 4 (Omote et al. tuned l); ``pascal_h3``: 3 of 4 heads parent-scaled (the paper's grid
search chose 5-8 of 8); ``sh_label3``: 3-dimensional label embeddings (the paper's share, 10 of 512, at d 128);
``ch_u4000``: 4,000 updates (half of C&H's batches are parsing); ``syncattn_sync2``: L_sync on decoder layer 2
of 3, the penultimate (Deguchi et al.'s 5 of 6, after Garg et al. 2019's best aligner; the same relative depth
rounds to 3 of 3); ``cky_lstm_lr001`` against ``lstm_luong_lr001``: both LSTMs at Adam lr 0.001, halved at the
same epochs (at the paper's 0.01 the CKY cells collapse, docs/cky.md; the baseline's rate keeps the pair comparable).
"""
from dataclasses import replace
from typing import Dict

from fairseq_syntax.settings.model_settings import ModelSettings, options

#: the papers' systems and their tries (the module's docstring says why each try)
TRANSFORMERS = ("transformer transformer_seed2 rel dep dep_rel dep_rel_self dbsa_enc dbsa_dec dbsa pascal sisa sh "
                "dbsa_sync syncattn dbsa_enc_lambda05 dbsa_dec_lambda05 dbsa_lambda05 dep_rel_l4 dep_l4 pascal_h3 "
                "sisa_lambda05 sh_label3 syncattn_sync2").split()


def lstm_lr(a, b, c) -> str:
    """Adam's rate for epochs 1-9, halved for 10-12, quartered from 13 (Watanabe et al. 2017: 0.01)."""
    return "--lr " + ",".join([a] * 9 + [b] * 3 + [c])


def cpu_table(max_update: int, warmup: int, lr: str, lstm_epochs: int, size: str = "cpu") -> Dict[str, ModelSettings]:
    if size == "cpu":
        layers = 3
        dims = ("--encoder-layers 3 --decoder-layers 3 --encoder-embed-dim 128 --decoder-embed-dim 128 "
                "--encoder-ffn-embed-dim 512 --decoder-ffn-embed-dim 512 --encoder-attention-heads 4 "
                "--decoder-attention-heads 4 ")
        the_warmup = warmup
        budget = f"--max-update {max_update} --warmup-updates {warmup} --lr {lr} --num-workers 0"
        tokens = 4096
        lstm_budget = f"--max-epoch {lstm_epochs} --num-workers 0"
    elif size == "base":
        layers, dims, the_warmup, tokens = 6, "", 4000, 8192
        budget = "--max-update 20000 --warmup-updates 4000 --lr 0.0007"
        lstm_budget = f"--max-epoch {lstm_epochs}"
    else:
        raise ValueError(f"size {size!r}: cpu or base")
    # the papers' parse-head / sync layers sit at a depth of a 6-layer model: here at the same relative depth
    # (rounded): DBSA / SISA layer 4 of 6 (L 3: 2), SyncAttn's l_sync 5 of 6 (L 3: 3)
    dbsa_layer, sync_layer = (4 * layers + 3) // 6, (5 * layers + 3) // 6
    # the self-parsing dep+rel's parse head in the first third of the encoder (L 3: layer 1, L 6: 2)
    self_layer = layers // 3
    common = (f"{dims}--share-all-embeddings --optimizer adam --adam-betas '(0.9, 0.98)' --lr-scheduler inverse_sqrt "
              f"{budget} --dropout 0.3 --label-smoothing 0.1 --seed 1 --keep-last-epochs 5 "
              "--best-checkpoint-metric nll_loss")
    ls = "--criterion label_smoothed_cross_entropy"
    # parse losses normalised as in the authors' DBSA code (sum over all gold arcs of the side)
    dep = "--criterion label_smoothed_cross_entropy_with_dependency --dependency-normalization arcs"
    train = {
        "transformer": f"--arch transformer {ls} {common}",
        "transformer_seed2": f"--arch transformer {ls} {common} --seed 2",
        # Omote et al. (2019) Sec. 5.1: relative positions clipped at k = 2, tree-depth differences at l = 2
        "rel": f"--arch transformer_rel {ls} {common}",
        "dep": f"--arch transformer_dep {ls} {common}",
        "dep_l4": f"--arch transformer_dep --rel-dep-l 4 {ls} {common}",
        "dep_rel": f"--arch transformer_dep_rel {ls} {common}",
        "dep_rel_l4": f"--arch transformer_dep_rel --rel-dep-l 4 {ls} {common}",
        # parser-free decoding (docs/relative.md): dep+rel fed at inference by its own parse head (DBSA's 2019
        # head, trained on the parser's trees with weight 0.5: the weight the DBSA try kept on Tanaka), the
        # dependency terms above it; in training the tree layers read the parser's trees
        "dep_rel_self": f"--arch transformer_dep_rel_self --dbsa-encoder-layer {self_layer} {dep} "
                        f"--dependency-lambda-enc 0.5 {common}",
        # Deguchi et al. (2019) Sec. 3.2 / 4: lambda_enc = lambda_dec = 1.0, parse heads in layer 4 of 6, the
        # 2019 form of the parse head (Eq. 14: unscaled, Q U2 bias), decoder rows as in the authors' code
        "dbsa_enc": f"--arch transformer_dbsa_enc --dbsa-encoder-layer {dbsa_layer} {dep} --dependency-lambda-enc 1.0 "
                    f"{common}",
        "dbsa_dec": f"--arch transformer_dbsa_dec --dbsa-decoder-layer {dbsa_layer} {dep} --dependency-lambda-dec 1.0 "
                    f"{common}",
        "dbsa_enc_lambda05": f"--arch transformer_dbsa_enc --dbsa-encoder-layer {dbsa_layer} {dep} "
                             f"--dependency-lambda-enc 0.5 {common}",
        "dbsa_dec_lambda05": f"--arch transformer_dbsa_dec --dbsa-decoder-layer {dbsa_layer} {dep} "
                             f"--dependency-lambda-dec 0.5 {common}",
        "dbsa": f"--arch transformer_dbsa --dbsa-encoder-layer {dbsa_layer} --dbsa-decoder-layer {dbsa_layer} {dep} "
                f"--dependency-lambda-enc 1.0 --dependency-lambda-dec 1.0 {common}",
        "dbsa_lambda05": f"--arch transformer_dbsa --dbsa-encoder-layer {dbsa_layer} --dbsa-decoder-layer {dbsa_layer} "
                         f"{dep} --dependency-lambda-enc 0.5 --dependency-lambda-dec 0.5 {common}",
        # Bugliarello & Okazaki (2020) Table 2, the En-De low-resource corpus (NC11): h_pascal 2, q 0.4 in layer
        # 1, sigma^2 1; S&H label embeddings of 10 dimensions; SISA (their LISA) with lambda 1.0; C&H a plain
        # transformer on the parse + translate corpus
        "pascal": f"--arch transformer_pascal --pascal-layer 1 --pascal-heads 2 --pascal-ignore-prob 0.4 "
                  f"--pascal-variance 1 {ls} {common}",
        "pascal_h3": f"--arch transformer_pascal --pascal-layer 1 --pascal-heads 3 --pascal-ignore-prob 0.4 "
                     f"--pascal-variance 1 {ls} {common}",
        "sisa": f"--arch transformer_sisa --dbsa-encoder-layer {dbsa_layer} {dep} --dependency-lambda-enc 1.0 {common}",
        "sisa_lambda05": f"--arch transformer_sisa --dbsa-encoder-layer {dbsa_layer} {dep} --dependency-lambda-enc 0.5 "
                         f"{common}",
        "sh": f"--arch transformer_sh --label-embed-dim 10 {ls} {common}",
        "sh_label3": f"--arch transformer_sh --label-embed-dim 3 {ls} {common}",
        "ch": f"--arch transformer {ls} {common}",
        "ch_u4000": f"--arch transformer {ls} {common} --max-update 4000",
        # Deguchi et al. (2021) Sec. 5.1: parse heads in layer l_dep = 1 of both sides, lambda_dep 0.5; SyncAttn
        # adds L_sync on decoder layer l_sync with lambda_sync 0.5 (their WMT14 En-De value); both in the 2021
        # form of the dependency attention, softmax(Q U K^T / sqrt(d_k)) without a bias (Eq. 4)
        "dbsa_sync": f"--arch transformer_dbsa --dbsa-encoder-layer 1 --dbsa-decoder-layer 1 {dep} "
                     f"--dependency-lambda-enc 0.5 --dependency-lambda-dec 0.5 --dbsa-bias none --dbsa-scaled {common}",
    }
    syncattn = ("--arch transformer_syncattn --dbsa-encoder-layer 1 --dbsa-decoder-layer 1 "
                "--criterion label_smoothed_cross_entropy_with_sync --dependency-lambda-enc 0.5 "
                f"--dependency-lambda-dec 0.5 --dependency-normalization arcs --dbsa-bias none --dbsa-scaled "
                f"--sync-lambda 0.5 {common}")
    train["syncattn"] = f"{syncattn} --sync-layer {sync_layer}"
    train["syncattn_sync2"] = f"{syncattn} --sync-layer {layers - 1}"  # size base: 5 of 6, as syncattn
    batch = f"tokens:{tokens}"
    table = {m: ModelSettings("main", batch, options(train[m])) for m in TRANSFORMERS}
    for m in ("ch", "ch_u4000"):
        table[m] = ModelSettings("ch", batch, options(train[m]), task="translation")
    # bootstrap against seed 1: what seed noise alone gives
    table["transformer_seed2"] = replace(table["transformer_seed2"], baseline="transformer")
    # the papers' second baselines: Omote et al. compare dep+rel with Shaw's rel too, Deguchi et al. (2021)
    # SyncAttn with DBSA at the same setting
    for m, others in (("dep_rel", ("rel",)), ("dep_rel_l4", ("rel",)), ("dep_rel_self", ("dep_rel",)),
                      ("syncattn", ("dbsa_sync",)), ("syncattn_sync2", ("dbsa_sync",))):
        table[m] = replace(table[m], also_against=others)
    # dep_rel_self decoded without a parser: its own parse head's tree (the same checkpoint, evaluate.sh only)
    own = options("--beam 4 --lenpen 0.6 --inference-parser self")
    table["dep_rel_self_own"] = ModelSettings("main", batch, table["dep_rel_self"].train, decode=own,
                                              also_against=("dep_rel", "dep_rel_self"), checkpoint_of="dep_rel_self")
    # the same, its tree layers reading the head's own tree in half of the training batches once the warm-up is
    # done (the head has learnt the parser's trees by then): does training on its own trees help decoding them?
    st = table["dep_rel_self"].train + options(f"--self-parse-train 0.5 --self-parse-train-after {the_warmup}")
    table["dep_rel_self_st"] = ModelSettings("main", batch, st, also_against=("dep_rel_self",))
    table["dep_rel_self_st_own"] = ModelSettings("main", batch, st, decode=own,
                                                 also_against=("dep_rel_self_own", "dep_rel_self_st"),
                                                 checkpoint_of="dep_rel_self_st")

    # Watanabe et al. (2017), as in the aspec-en-ja recipe: d 256 (the paper's size at both settings), 2 layers,
    # Adam lr 0.01 (0.9, 0.99) halved after epochs 9 and 12, clipping 3.0, weight decay 1e-6, batches of 128
    # sentences, greedy decoding. Here on the same BPE data-bin as the transformers (the paper: lowercased words).
    # lr001: both LSTMs at Adam lr 0.001 (at 0.01 the layer-normalised CKY cells collapse here: docs/cky.md)
    cky = ("--optimizer adam --adam-betas '(0.9, 0.99)' --weight-decay 1e-6 --clip-norm 3.0 --lr-scheduler fixed "
           f"--criterion cross_entropy --seed 1 --keep-last-epochs 5 {lstm_budget}")
    lstm = dict(batch="sentences:128", decode=("--beam", "1"), task="translation")
    for m in ("lstm_luong", "cky_lstm"):
        table[m] = ModelSettings("main", train=options(f"--arch {m} {cky} {lstm_lr('0.01', '0.005', '0.0025')}"),
                                 baseline="lstm_luong", **lstm)
        table[f"{m}_lr001"] = ModelSettings(
            "main", train=options(f"--arch {m} {cky} {lstm_lr('0.001', '0.0005', '0.00025')}"),
            baseline="lstm_luong_lr001" if m == "cky_lstm" else "lstm_luong", **lstm)
    table["cky_lstm_lr001"] = replace(table["cky_lstm_lr001"], also_against=("lstm_luong",))
    # the LSTM's seed noise at the kept rate, as transformer_seed2 for the transformers: against seed 1
    table["lstm_luong_lr001_seed2"] = ModelSettings(
        "main", train=table["lstm_luong_lr001"].train + ("--seed", "2"), baseline="lstm_luong_lr001", **lstm)
    return table

