"""The papers' own training settings, for the datasets the papers report on (GPU-sized: Transformer base).

* :func:`pascal_table`: Bugliarello & Okazaki (2020), six corpora: PASCAL and its baselines (S&H, SISA, C&H);
* :func:`syncattn_table`: Deguchi, Tamura, Ninomiya (2021): Transformer, +DBSA, SyncAttn;
* :func:`aspec_ja_en_table`: ASPEC Ja->En, Deguchi et al. (2019, DBSA) and Omote et al. (2019, dependency-based
  relative positions), plus SyncAttn's ASPEC row;
* :func:`aspec_en_ja_table`: ASPEC En->Ja, Watanabe, Tamura, Ninomiya (2017, CKY-based convolutional attention).
"""
from typing import Dict

from fairseq_syntax.settings.model_settings import ModelSettings, options


def pascal_table(lr: str, betas: str, heads: int, q: str, scale: str) -> Dict[str, ModelSettings]:
    """Bugliarello & Okazaki (2020). ``lr``, ``betas``, ``heads`` (h_pascal), ``q``: Table 2 for the corpus;
    ``scale``: small (20k updates, dropout 0.3) or large (100k, dropout 0.1). Common (Sec. "Training details"):
    Transformer base, inverse square root schedule with 8,000 warm-up steps, label smoothing 0.1, 32k-token
    batches, beam 4 and length penalty 0.6. The paper tunes only the proposed model (Table 2); the baselines
    share its optimiser settings here. PASCAL's D^p is the Gaussian of Eq. 6 in encoder layer 1 (sigma^2 1);
    SISA's encoder parse head is the 2019 DBSA form (Eq. 14: unscaled, Q U2 bias) on 'first' parents; C&H is a
    plain transformer on the parse + translate corpus (data variant ``ch``)."""
    steps, dropout = {"small": (20000, 0.3), "large": (100000, 0.1)}[scale]
    common = (f"--share-all-embeddings --optimizer adam --adam-betas '{betas}' --lr {lr} --lr-scheduler inverse_sqrt "
              f"--warmup-updates 8000 --max-update {steps} --dropout {dropout} --label-smoothing 0.1")
    ls = "--criterion label_smoothed_cross_entropy"
    train = {
        "transformer": f"--arch transformer {ls} {common}",
        "sh": f"--arch transformer_sh --label-embed-dim 10 {ls} {common}",
        "sisa": f"--arch transformer_sisa --criterion label_smoothed_cross_entropy_with_dependency "
                f"--dependency-lambda-enc 1.0 {common}",
        "ch": f"--arch transformer {ls} {common}",
        "pascal": f"--arch transformer_pascal --pascal-layer 1 --pascal-heads {heads} --pascal-ignore-prob {q} "
                  f"--pascal-variance 1 {ls} {common}",
    }
    table = {m: ModelSettings("main", "tokens:32000", options(t)) for m, t in train.items()}
    table["ch"] = ModelSettings("ch", "tokens:32000", options(train["ch"]), task="translation")
    return table


def syncattn_table(lambda_sync: str, tokens: int, data: str = "main", prefix: str = "",
                   joint_vocabulary: bool = True) -> Dict[str, ModelSettings]:
    """Deguchi et al. (2021). ``lambda_sync``: Sec. 5.1 (0.5 WMT14 En-De, 0.1 WMT16 En-Ro, 10.0 ASPEC Ja-En);
    ``tokens``: batch tokens per update (appendix: 25,000 / 6,000 / 12,000); ``data``: the data variant (parses
    on both sides); ``prefix``: of the model names; ``joint_vocabulary``: False where the variant's BPE is
    separate (then only the decoder's input and output embeddings are tied). Common (Sec. 5.1): Transformer
    base, label smoothing 0.1, 100,000 updates, lambda_dep 0.5 and l_dep 1 (parse heads in layer 1), l_sync 5,
    beam 4 with length penalty 0.6 (the value is not given). The paper's optimiser table is not in our copy of
    its appendix: Adam (0.9, 0.98), inverse square root, 4,000 warm-up steps, lr 0.0007 as in Vaswani et al.
    (2017), the base the paper follows. Parse heads in the paper's form, softmax(Q U K^T / sqrt(d_k)) without a
    bias (Eq. 4), decoder rows as in the authors' DBSA code, parse losses normalised as that code does."""
    share = "--share-all-embeddings" if joint_vocabulary else "--share-decoder-input-output-embed"
    common = (f"{share} --optimizer adam --adam-betas '(0.9, 0.98)' --lr 0.0007 --lr-scheduler inverse_sqrt "
              "--warmup-updates 4000 --max-update 100000 --dropout 0.1 --label-smoothing 0.1")
    form = "--dbsa-bias none --dbsa-scaled --dependency-normalization arcs"
    heads = ("--dbsa-encoder-layer 1 --dbsa-decoder-layer 1 --criterion {} --dependency-lambda-enc 0.5 "
             "--dependency-lambda-dec 0.5")
    train = {
        "transformer": f"--arch transformer --criterion label_smoothed_cross_entropy {common}",
        "dbsa": f"--arch transformer_dbsa {heads.format('label_smoothed_cross_entropy_with_dependency')} "
                f"{form} {common}",
        "syncattn": "--arch transformer_syncattn --dbsa-encoder-layer 1 --dbsa-decoder-layer 1 --sync-layer 5 "
                    "--criterion label_smoothed_cross_entropy_with_sync --dependency-lambda-enc 0.5 "
                    f"--dependency-lambda-dec 0.5 --sync-lambda {lambda_sync} {form} {common}",
    }
    return {prefix + m: ModelSettings(data, f"tokens:{tokens}", options(t), baseline=f"{prefix}transformer")
            for m, t in train.items()}


def _best_bleu(beam: int, lenpen) -> str:
    """checkpoint_best.pt by validation BLEU (on tokens; the search used for the test set)."""
    return (f"--eval-bleu --eval-bleu-args '{{\"beam\": {beam}, \"lenpen\": {lenpen}}}' --eval-bleu-remove-bpe "
            "--best-checkpoint-metric bleu --maximize-best-checkpoint-metric")


def aspec_ja_en_table() -> Dict[str, ModelSettings]:
    """ASPEC Ja->En, three papers, each on its own data variant of the aspec-ja-en recipe.

    * ``deguchi19-*``: DBSA (Deguchi et al. 2019): batches of 224 sentences, 20 epochs, lambda_enc = lambda_dec =
      1.0, the epoch with the best validation BLEU, beam 4, lp 0.6; Table 2: transformer, dbsa_enc, dbsa_dec,
      dbsa; Table 3: transformer-words, dbsa-words. Parse heads in the 2019 form (Eq. 14), the parse losses
      normalised as the authors' code does (the sum over all gold arcs of the side).
    * ``omote19-*``: Omote et al. (2019): Adam (0.9, 0.98, 1e-9), 4,000 warm-up steps, batches of 256 sentences,
      30 epochs (the best on validation BLEU), k = l = 2, greedy decoding (Table 2: transformer, rel, dep,
      dep_rel). Table 3's ablation (Sec. 5.3), Transformer_dep without absolute positions, batches of 100, 50
      epochs: dep-kv (b^K and b^V), dep-k, dep-v, noabs (no position information); bootstrap against dep-kv.
    * ``deguchi21-*``: SyncAttn (:func:`syncattn_table`, lambda_sync 10.0, 12k-token batches, separate BPE).
    """
    vaswani = ("--optimizer adam --adam-betas '(0.9, 0.98)' --adam-eps 1e-9 --lr 0.0007 --lr-scheduler inverse_sqrt "
               "--warmup-updates 4000 --dropout 0.1 --criterion label_smoothed_cross_entropy --label-smoothing 0.1")
    dbsa19 = ("--share-all-embeddings --max-epoch 20 --max-source-positions 250 --max-target-positions 250 "
              f"--skip-invalid-size-inputs-valid-test {_best_bleu(4, 0.6)} {vaswani}")
    dep_loss = ("--criterion label_smoothed_cross_entropy_with_dependency --dependency-lambda-enc 1.0 "
                "--dependency-lambda-dec 1.0 --dependency-normalization arcs")
    table = {}
    for m in ("transformer", "dbsa_enc", "dbsa_dec", "dbsa", "transformer-words", "dbsa-words"):
        words = m.endswith("-words")
        arch = "transformer" if m.startswith("transformer") else f"transformer_{m.replace('-words', '')}"
        loss = "" if arch == "transformer" else f" {dep_loss}"
        table[f"deguchi19-{m}"] = ModelSettings(
            "dbsa19words" if words else "dbsa19", "sentences:224", options(f"--arch {arch} {dbsa19}{loss}"),
            baseline="deguchi19-transformer-words" if words else "deguchi19-transformer")
    greedy = dict(decode=("--beam", "1"))
    for m in ("transformer", "rel", "dep", "dep_rel"):
        arch = "transformer" if m == "transformer" else f"transformer_{m}"
        table[f"omote19-{m}"] = ModelSettings("omote19", "sentences:256",
                                              options(f"--arch {arch} --max-epoch 30 {_best_bleu(1, 1)} {vaswani}"),
                                              baseline="omote19-transformer", **greedy)
    ablation = {"dep-kv": "--arch transformer_dep --rel-dep-terms key+value --rel-no-absolute-positions",
                "dep-k": "--arch transformer_dep --rel-dep-terms key --rel-no-absolute-positions",
                "dep-v": "--arch transformer_dep --rel-dep-terms value --rel-no-absolute-positions",
                "noabs": "--arch syntax_transformer --rel-no-absolute-positions"}
    for m, arch in ablation.items():
        table[f"omote19-{m}"] = ModelSettings("omote19abl", "sentences:100",
                                              options(f"{arch} --max-epoch 50 {_best_bleu(1, 1)} {vaswani}"),
                                              baseline="omote19-dep-kv", **greedy)
    table.update(syncattn_table("10.0", 12000, data="syncattn21", prefix="deguchi21-", joint_vocabulary=False))
    return table


def aspec_en_ja_table() -> Dict[str, ModelSettings]:
    """ASPEC En->Ja, Watanabe et al. (2017): d 256; Adam lr 0.01, (0.9, 0.99), halved after epochs 9 and 12 (15
    epochs: the paper does not say how many); gradient clipping 3.0, weight decay 1e-6; greedy decoding; the
    paper gives no batch size: 128 sentences here. On the lowercased word data variant ``words``."""
    cky = ("--optimizer adam --adam-betas '(0.9, 0.99)' --weight-decay 1e-6 --clip-norm 3.0 --lr-scheduler fixed "
           "--lr 0.01,0.01,0.01,0.01,0.01,0.01,0.01,0.01,0.01,0.005,0.005,0.005,0.0025 --max-epoch 15 "
           "--criterion cross_entropy")
    return {m: ModelSettings("words", "sentences:128", options(f"--arch {m} {cky}"), task="translation",
                             decode=("--beam", "1"), baseline="lstm_luong") for m in ("lstm_luong", "cky_lstm")}
