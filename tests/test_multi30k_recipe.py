"""examples/multi30k-en-de: the recipe on a slice of the real Multi30k task-1 files with the real UDPipe models
(skipped without the shared data or ufal.udpipe), and the settings train.sh passes (no data needed)."""
import json
import os
import re
import shlex
import sys

import pytest

from helpers import ROOT, run
from test_recipes import listed_models, recipe

DATASET = "multi30k-en-de"
MODELS = ["transformer", "transformer_seed2", "rel", "dep", "dep_rel", "dep_rel_self", "dbsa_enc", "dbsa_dec", "dbsa",
          "pascal",
          "sisa", "sh", "ch", "dbsa_sync", "syncattn", "lstm_luong", "cky_lstm"]
#: tries of one principled change: try -> (the model it changes, the options the try sets)
TRIES = {"dbsa_enc_lambda05": ("dbsa_enc", {"--dependency-lambda-enc": "0.5"}),
         "dbsa_dec_lambda05": ("dbsa_dec", {"--dependency-lambda-dec": "0.5"}),
         "dbsa_lambda05": ("dbsa", {"--dependency-lambda-enc": "0.5", "--dependency-lambda-dec": "0.5"}),
         "dep_rel_l4": ("dep_rel", {"--rel-dep-l": "4"}), "dep_l4": ("dep", {"--rel-dep-l": "4"}),
         "pascal_h3": ("pascal", {"--pascal-heads": "3"}),
         "sisa_lambda05": ("sisa", {"--dependency-lambda-enc": "0.5"}),
         "sh_label3": ("sh", {"--label-embed-dim": "3"}), "ch_u4000": ("ch", {"--max-update": "4000"}),
         "syncattn_sync2": ("syncattn", {"--sync-layer": "2"}),
         "dep_rel_self_st": ("dep_rel_self", {"--self-parse-train": "0.5", "--self-parse-train-after": "400"}),
         **{f"{m}_lr001": (m, {"--lr": ",".join(["0.001"] * 9 + ["0.0005"] * 3 + ["0.00025"])})
            for m in ("lstm_luong", "cky_lstm")}}
#: second seeds of a model outside MODELS (the seed noise at a kept try): name -> the model it reseeds
SEEDS = {"lstm_luong_lr001_seed2": "lstm_luong_lr001"}
#: other ways to decode a model's checkpoint (evaluate.sh only): name -> the model
DECODINGS = {"dep_rel_self_own": "dep_rel_self", "dep_rel_self_st_own": "dep_rel_self_st"}


def options(command):
    """--option -> its value (the words up to the next option) of a command line."""
    out, key = {}, None
    for word in shlex.split(command):
        if word.startswith("--"):
            key = word
            out[key] = ""
        elif key is not None:
            out[key] = (out[key] + " " + word).strip()
    return out
#: the raw task-1 file -> the recipe's split, and how many of its lines the slice keeps
SLICE = {"train": ("train", 200), "val": ("valid", 40), "test_2016_flickr": ("test2016", 30),
         "test_2017_flickr": ("test2017", 20)}


def train_command(model, work, **variables):
    p = recipe(DATASET, "train", model, DRY_RUN=1, WORK=work, GPUS=1, MAX_TOKENS=4096, **variables)
    return " ".join(shlex.split(p.stderr.split("] ", 1)[1]))  # the arguments as fairseq receives them


def _table(size="cpu"):
    """Each model's fairseq-train options in the table of training settings, as train_command writes them."""
    from fairseq_syntax.settings.datasets import settings

    return {m: " ".join(s.train) for m, s in settings(DATASET, size).items()}


def test_multi30k_settings(tmp_path):
    """The papers' settings in the table (a try is its model's options but for the one change, a seed but for the
    seed), and what train.sh makes of them (the data-bin, the batch, the task), through train.sh for one model of
    each kind (test_settings.py checks that the recipe reads every entry word for word)."""
    work = str(tmp_path)
    assert sorted(listed_models(DATASET, work)) == sorted(MODELS + list(TRIES) + list(SEEDS) + list(DECODINGS))
    for variant in ("main", "ch"):
        os.makedirs(tmp_path / variant / "data-bin")
        open(os.path.join(tmp_path / variant / "data-bin", ".prepared"), "w").close()  # as prepare.sh leaves it
    table = _table()
    cpu = {m: table[m] for m in MODELS}
    for name, (model, change) in TRIES.items():  # the model's command but for the one change
        tried = options(table[name])
        assert tried == {**options(table[model]), **change} and tried != options(table[model]), name
    for name, model in SEEDS.items():  # the model's command but for the seed
        assert options(table[name]) == {**options(table[model]), "--seed": "2"}, name
        assert re.findall(r"--seed (\d+)", table[name]) == ["1", "2"], name  # the later one is fairseq's
    through = {m: train_command(m, work) for m in ("transformer", "ch", "cky_lstm")}
    for m, command in through.items():  # the table's options, in order, with the recipe's data and batch
        assert table[m] in command, m
    assert "/main/data-bin" in through["transformer"] and "/ch/data-bin" in through["ch"]
    assert "--max-tokens 4096 --update-freq 1" in through["transformer"] and "--batch-size 128" in through["cky_lstm"]
    assert "--task translation" in through["ch"] and "--task translation" in through["cky_lstm"]
    assert "--task syntax_translation" in through["transformer"]
    base = _table("base")
    transformer_family = [m for m in MODELS if not m.endswith("lstm") and m != "lstm_luong"]
    shared = ["--encoder-layers 3", "--decoder-layers 3", "--encoder-embed-dim 128", "--encoder-ffn-embed-dim 512",
              "--encoder-attention-heads 4", "--max-update", "--dropout 0.3", "--label-smoothing 0.1",
              "--share-all-embeddings", "--best-checkpoint-metric nll_loss"]
    for m in transformer_family:  # one setting: the same size, budget and seed for every model
        for fragment in shared:
            assert fragment in cpu[m], (m, fragment)
        budget = re.search(r"--max-update \d+ --warmup-updates \d+ --lr \S+", cpu[m]).group(0)
        assert budget in cpu["transformer"], m
        assert re.findall(r"--seed (\d+)", cpu[m])[-1] == ("2" if m == "transformer_seed2" else "1"), m
    for fragment in ("--arch transformer_pascal", "--pascal-heads 2", "--pascal-ignore-prob 0.4"):
        assert fragment in cpu["pascal"]
    for fragment in ("--dbsa-encoder-layer 2", "--dbsa-decoder-layer 2", "--dependency-lambda-enc 1.0",
                     "--dependency-lambda-dec 1.0"):
        assert fragment in cpu["dbsa"]
    for fragment in ("--sync-layer 3", "--sync-lambda 0.5", "--dependency-lambda-enc 0.5", "--dbsa-encoder-layer 1"):
        assert fragment in cpu["syncattn"]
    assert "--dbsa-encoder-layer 1 --dbsa-decoder-layer 1" in cpu["dbsa_sync"]
    assert "--beam" not in cpu["lstm_luong"]
    # SIZE=base: the presets' Transformer base, the papers' layers for the parse heads and L_sync
    assert "--encoder-layers" not in base["transformer"] and "--encoder-embed-dim" not in base["dbsa"]
    assert "--dbsa-encoder-layer 4" in base["dbsa"] and "--sync-layer 5" in base["syncattn"]
    assert "--arch cky_lstm" in base["cky_lstm"]
    assert table["transformer"] in train_command("transformer", work, SIZE="cpu")
    assert base["transformer"] in train_command("transformer", work, SIZE="base")


@pytest.mark.slow
def test_multi30k_recipe_on_real_slice_with_udpipe(tmp_path):
    """prepare (the real files' first lines, UDPipe on both sides) -> train 2 updates -> evaluate on test2016
    and test2017 separately, for the baseline and SyncAttn (parse heads on both sides + sync loss)."""
    pytest.importorskip("ufal.udpipe")
    from conftest import require_shared
    from fairseq_syntax.data.trees.conllu import read_conllu

    raw = require_shared("data", "multi30k", "task1", "raw")
    for lang in ("en", "de"):
        require_shared("models", {"en": "en_ewt_udpipe_small.udpipe", "de": "de_udpipe_small.udpipe"}[lang])
    part = tmp_path / "multi30k"
    part.mkdir()
    for name, (_, n) in SLICE.items():
        for lang in ("en", "de"):
            with open(os.path.join(raw, f"{name}.{lang}"), encoding="utf-8") as f:
                lines = [next(f) for _ in range(n)]
            (part / f"{name}.{lang}").write_text("".join(lines), encoding="utf-8")
    work = str(tmp_path / "work")
    prep = recipe(DATASET, "prepare", "transformer", "syncattn", MULTI30K_DIR=str(part), WORK=work)
    for split, n in (("train", 200), ("valid", 40), ("test", 50)):  # test = test2016 + test2017, one data-bin
        for lang in ("en", "de"):  # both sides parsed by UDPipe
            parsed = list(read_conllu(os.path.join(work, "text", f"{split}.{lang}.conllu")))
            assert len(parsed) == n, (split, lang)
    assert open(os.path.join(work, "raw", "test.sets")).read().split() == ["test2016", "30", "test2017", "20"]
    for lang in ("en", "de"):  # the trees of both sides are binarized next to the tokens
        assert os.path.exists(os.path.join(work, "main", "data-bin", f"test.en-de.{lang}.heads.bin"))
    for side, lang in (("source", "en"), ("target", "de")):  # each parser loaded once for the three splits
        assert len(re.findall(rf"{side} side \({lang}\): udpipe parser, model .*: parser loaded", prep.stderr)) == 1
    assert not os.path.exists(os.path.join(work, "ch"))  # only the variants of the asked models
    for model in ("transformer", "dbsa_sync", "syncattn"):  # baselines first: SyncAttn is tested against both
        recipe(DATASET, "train", model, SAMPLE=1, WORK=work)
        assert os.path.exists(os.path.join(work, "checkpoints", model, "checkpoint_last.pt"))
        out = recipe(DATASET, "evaluate", model, "--max-len-b", "20", SAMPLE=1, WORK=work).stdout  # 2 updates
        against = 2 if model == "syncattn" else 1  # ALSO_AGAINST[syncattn] = dbsa_sync
        assert len(re.findall(r"^BLEU \d+\.\d+ +\(nrefs:1\|", out, flags=re.M)) == 2 * against  # per test set
        for test_set, (name, n) in (("test2016", ("test_2016_flickr", 30)), ("test2017", ("test_2017_flickr", 20))):
            d = os.path.join(work, "eval", model, test_set)
            scores = json.load(open(os.path.join(d, "scores.json")))
            assert scores["sentences"] == n and "tok:13a" in scores["bleu_signature"]
            assert ("bootstrap" in scores) == (model != "transformer")
            assert len(open(os.path.join(d, "hyp.txt"), encoding="utf-8").read().splitlines()) == n
            if model == "syncattn":  # the same translations against the paper's other baseline
                other = json.load(open(os.path.join(d, "vs_dbsa_sync", "scores.json")))
                base = json.load(open(os.path.join(work, "eval", "dbsa_sync", test_set, "scores.json")))
                assert other["bleu"] == scores["bleu"] and other["sentences"] == n
                assert other["bootstrap"]["bleu"]["baseline"]["score"] == base["bleu"]
    table = run([sys.executable, os.path.join(ROOT, "examples", "recipes", "results_table.py"), "--work", work,
                 "--sets", "test2016", "test2017", "--models", "transformer", "dbsa_sync", "syncattn",
                 "--out", str(tmp_path / "results")]).stdout
    assert re.search(r"^\| syncattn \| transformer \|", table, flags=re.M)
    assert re.search(r"^\| syncattn \| dbsa_sync \|", table, flags=re.M)
    result = json.load(open(tmp_path / "results" / "syncattn.json"))
    assert sorted(result["also_against"]["dbsa_sync"]) == ["test2016", "test2017"]
    assert result["machine"]["cpu"] and result["machine"]["cores"] >= 1  # same seed, other CPU: other figures
    for test_set, (_, n) in (("test2016", ("test_2016_flickr", 30)), ("test2017", ("test_2017_flickr", 20))):
        # the scored translations are kept beside the JSON: the bootstrap can be run again from them
        kept = open(tmp_path / "results" / "translations" / f"syncattn.{test_set}.txt", encoding="utf-8").read()
        assert kept == open(os.path.join(work, "eval", "syncattn", test_set, "hyp.txt"), encoding="utf-8").read()
        assert len(kept.splitlines()) == n
