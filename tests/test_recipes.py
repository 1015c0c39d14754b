"""Every dataset recipe (examples/<dataset>/{prepare,train,evaluate}.sh) runs offline on its small sample
(SAMPLE=1: synthetic pairs with gold parses under the dataset's language codes, d-32 models, 2 updates):
prepare -> train -> evaluate, for the paper's baseline(s) and proposed model(s); and train.sh carries the
papers' hyper-parameters (checked on the printed command, DRY_RUN=1)."""
import json
import os
import re
import shlex
import shutil
import sys

import pytest

import forkserver
from helpers import BIN, ROOT, run

sys.path.insert(0, os.path.join(ROOT, "examples", "recipes"))
import results_table  # noqa: E402
from results_table import parse_uas  # noqa: E402

# dataset -> (every model the recipe offers, the ones whose data-bins are prepared, the ones trained and evaluated
# here, baselines first). The recipes share their steps (examples/recipes/runner) and differ in their
# settings (checked below on the printed commands) and data: every dataset prepares its sample; training and
# scoring run once per kind of system and data variant (the PASCAL systems on wat-en-ja, DBSA on wmt14-en-de,
# the three ASPEC papers' variants, the LSTMs on aspec-en-ja)
PASCAL_MODELS = ["transformer", "ch", "pascal", "sh", "sisa"]
DEGUCHI19 = ["deguchi19-" + m for m in ("transformer", "dbsa", "dbsa_enc", "dbsa_dec", "transformer-words",
                                        "dbsa-words")]
OMOTE19 = ["omote19-" + m for m in ("transformer", "rel", "dep", "dep_rel", "dep-kv", "dep-k", "dep-v", "noabs")]
DEGUCHI21 = ["deguchi21-" + m for m in ("transformer", "dbsa", "syncattn")]
RECIPES = {
    "nc11-en-de": (PASCAL_MODELS, ["transformer", "pascal"], []),
    "nc11-de-en": (PASCAL_MODELS, ["transformer", "pascal"], []),
    "wmt16-en-de": (PASCAL_MODELS, ["transformer", "pascal"], []),
    "wmt17-en-de": (PASCAL_MODELS, ["transformer", "pascal"], []),
    "wmt18-en-tr": (PASCAL_MODELS, ["transformer", "pascal"], []),
    # PASCAL and both corpora (C&H's multi-task one too), and SISA's parse head; S&H trains in test_pascal_e2e
    "wat-en-ja": (PASCAL_MODELS, PASCAL_MODELS, ["transformer", "ch", "pascal", "sisa"]),
    # SyncAttn itself trains in the Multi30k real-slice test (against both its baselines)
    "wmt14-en-de": (["transformer", "dbsa", "syncattn"], ["transformer"], ["transformer", "dbsa"]),
    "wmt16-en-ro": (["transformer", "dbsa", "syncattn"], ["transformer"], []),
    # every data variant of the three papers prepared; DBSA and dep-kv trained against their baselines
    # (SyncAttn trains in the Multi30k real-slice test, against both of its baselines)
    "aspec-ja-en": (DEGUCHI19 + OMOTE19 + DEGUCHI21,
                    ["deguchi19-transformer", "deguchi19-dbsa-words", "omote19-transformer", "omote19-dep-kv",
                     "deguchi21-transformer"],
                    ["deguchi19-transformer", "deguchi19-dbsa", "omote19-dep-kv"]),
    "aspec-en-ja": (["lstm_luong", "cky_lstm"], ["lstm_luong"], ["lstm_luong", "cky_lstm"]),
}
# the models with parse heads (evaluate.sh reports their UAS)
PARSE_HEAD_MODELS = {"dbsa", "dbsa_enc", "dbsa_dec", "sisa", "syncattn", "dbsa_sync"}
# the baselines: evaluated without a bootstrap test; every other model is tested against its baseline
BASELINES = {"transformer", "lstm_luong", "deguchi19-transformer", "deguchi19-transformer-words",
             "omote19-transformer", "omote19-dep-kv", "deguchi21-transformer"}


def recipe(dataset, step, *args, check=True, fork=None, **variables):
    """Run examples/DATASET/STEP.sh; its fairseq commands start through the test worker's fork server (tests/
    forkserver.py: the same commands without their 5 s of imports each). A dry run (DRY_RUN=1: the commands
    printed, none run) and ``fork=False`` need no server, and do not start one (5 s of imports)."""
    script = os.path.join(ROOT, "examples", dataset, f"{step}.sh")
    if fork is None:
        fork = str(variables.get("DRY_RUN", "0")) != "1"
    own = {"FAIRSEQ_SYNTAX_VENV": "none", "PATH": BIN + os.pathsep + os.environ.get("PATH", "")}  # this python's
    env = [f"{k}={v}" for k, v in {**(forkserver.environment() if fork else own), **variables}.items()]
    return run(["env", *env, "bash", script, *args], check=check)


def loaded(dataset, **variables):
    """The dataset's recipe as its scripts' runner reads it (recipe.json, the variables, the table's models)."""
    from runner.recipe import load, place

    r = load(dataset, variables)
    place(r)
    return r


def listed_models(dataset, work):
    p = recipe(dataset, "train", check=False, fork=False, WORK=work)
    assert p.returncode == 1
    return p.stderr.split("models: ")[1].split()


@pytest.mark.slow
@pytest.mark.parametrize("dataset", sorted(RECIPES))
def test_recipe_runs_offline_on_its_sample(dataset, tmp_path):
    work = str(tmp_path)
    every, prepared, trained = RECIPES[dataset]
    assert sorted(listed_models(dataset, work)) == sorted(every)
    prep = recipe(dataset, "prepare", *prepared, SAMPLE=1, WORK=work)  # the data-bins these models need
    if dataset in ("nc11-en-de", "wmt14-en-de"):  # real data gets the paper's language filter; synthetic not
        assert "sample: no --lang-filter" in prep.stderr
    variants = sorted(d for d in os.listdir(work) if os.path.isdir(os.path.join(work, d, "data-bin")))
    if dataset == "nc11-en-de":  # run again: the finished data-bins are kept as they are
        bins = {v: os.path.getmtime(os.path.join(work, v, "data-bin", f"dict.{dataset.split('-')[-2]}.txt"))
                for v in variants}
        again = recipe(dataset, "prepare", *prepared, SAMPLE=1, WORK=work)
        assert again.stderr.count("is complete (remove it to rebuild)") == len(variants) > 0
        assert bins == {v: os.path.getmtime(os.path.join(work, v, "data-bin", f"dict.{dataset.split('-')[-2]}.txt"))
                        for v in variants}
    src, tgt = dataset.split("-")[-2:]
    for model in trained:  # baselines come first: the others are tested against them
        recipe(dataset, "train", model, SAMPLE=1, WORK=work)
        assert os.path.exists(os.path.join(work, "checkpoints", model, "checkpoint_last.pt"))
        out = recipe(dataset, "evaluate", model, SAMPLE=1, WORK=work).stdout
        scores = json.load(open(os.path.join(work, "eval", model, "scores.json")))
        assert scores["sentences"] == 20  # the sample's whole test set
        assert re.search(r"^BLEU \d+\.\d+ +\(nrefs:1\|", out, flags=re.M)
        if tgt == "ja" or dataset.startswith("aspec"):  # WAT: BLEU on the tokens (and RIBES: a pair with Japanese)
            assert "tok:none" in scores["bleu_signature"] and ("ribes" in scores) == ("ja" in (src, tgt))
        else:  # sacreBLEU's own tokenisation of the detokenised output against the raw reference
            assert "tok:13a" in scores["bleu_signature"]
        assert ("bootstrap" in scores) != (model in BASELINES), model
        assert os.path.getsize(os.path.join(work, "eval", model, "bleu_by_length.png")) > 0
        uas = os.path.join(work, "eval", model, "uas.txt")  # parse heads: their trees' UAS on the test split
        assert os.path.exists(uas) == (model.replace("-words", "").split("-")[-1] in PARSE_HEAD_MODELS), model
        if os.path.exists(uas):
            assert re.search(r"^UAS encoder parse head, split test: \d+\.\d+ \(\d+/\d+ words\)", open(uas).read(),
                             flags=re.M)
    if dataset == "wmt14-en-de":  # the results table: one row and one JSON per evaluated model
        table = run([sys.executable, os.path.join(ROOT, "examples", "recipes", "results_table.py"), "--work", work,
                     "--models", *trained, "--out", os.path.join(work, "results")]).stdout
        digests = set()
        for model in trained:
            row = [r for r in table.splitlines() if r.startswith(f"| {model} |")]
            assert len(row) == 1 and row[0].split("|")[-3].strip() == "2", table  # 2 updates
            res = json.load(open(os.path.join(work, "results", f"{model}.json")))
            assert res["sets"]["test"]["sentences"] == 20 and ("encoder" in res["uas"]) == (model != "transformer")
            digests.add(json.dumps(res["data"], sort_keys=True))  # the text it trained on: one data-bin
            assert res["data"]["variant"] == "main" and f"dict.{src}.txt" in res["data"]["dictionaries"], res
        assert len(digests) == 1, digests
    if dataset == "nc11-en-de":
        assert variants == ["main"]  # C&H's corpus is not built when no C&H model is asked for
    if dataset in ("nc11-en-de", "wmt18-en-tr"):  # the target has no parse: Moses-tokenised text
        assert os.path.exists(os.path.join(work, "text", f"train.{tgt}"))
        assert not os.path.exists(os.path.join(work, "text", f"train.{tgt}.conllu"))
    p = recipe(dataset, "evaluate", "no-such-model", check=False, SAMPLE=1, WORK=work)
    assert p.returncode == 1 and "unknown model 'no-such-model'" in p.stderr


# the papers' settings, as the printed fairseq-train command must carry them (PASCAL's Table 2 for every
# corpus: tests/test_pascal_e2e.py)
PAPER_SETTINGS = [
    ("nc11-en-de", "pascal", ["--arch transformer_pascal", "--pascal-heads 2", "--pascal-ignore-prob 0.4",
                              "--adam-betas (0.9, 0.997)", "--lr 0.0007", "--warmup-updates 8000",
                              "--max-update 20000", "--dropout 0.3", "--max-tokens 4096 --update-freq 8"]),
    ("wmt16-en-de", "pascal", ["--pascal-heads 5", "--max-update 100000", "--dropout 0.1"]),
    ("wmt17-en-de", "sh", ["--arch transformer_sh", "--label-embed-dim 10"]),
    ("tanaka-ja-en", "dep_rel_self_st", ["--arch transformer_dep_rel_self", "--dependency-lambda-enc 0.5",
                                         "--self-parse-train 0.5 --self-parse-train-after 400"]),
    ("wat-en-ja", "sisa", ["--arch transformer_sisa", "label_smoothed_cross_entropy_with_dependency"]),
    ("wat-en-ja", "ch", ["--task translation", "--arch transformer", "/ch/data-bin"]),
    ("wmt14-en-de", "syncattn", ["--sync-lambda 0.5", "--sync-layer 5", "--dependency-lambda-enc 0.5",
                                 "--max-tokens 4096 --update-freq 7", "--share-all-embeddings"]),
    ("wmt16-en-ro", "syncattn", ["--sync-lambda 0.1", "--update-freq 2", "--dbsa-bias none --dbsa-scaled",
                                 "--dependency-normalization arcs"]),
    ("wmt16-en-ro", "dbsa", ["--arch transformer_dbsa", "--dbsa-bias none --dbsa-scaled",
                             "--dependency-normalization arcs"]),
    ("aspec-ja-en", "deguchi21-syncattn", ["--sync-lambda 10.0", "--update-freq 3",
                                           "--share-decoder-input-output-embed"]),
    ("aspec-ja-en", "deguchi19-dbsa", ["--arch transformer_dbsa", "--dependency-lambda-enc 1.0",
                                       "--dependency-lambda-dec 1.0", "--batch-size 224", "--max-epoch 20",
                                       "--max-source-positions 250", "--best-checkpoint-metric bleu",
                                       '--eval-bleu-args {"beam": 4, "lenpen": 0.6}',
                                       "--dependency-normalization arcs"]),
    ("aspec-ja-en", "deguchi19-dbsa_enc", ["--arch transformer_dbsa_enc", "/dbsa19/data-bin"]),
    ("aspec-ja-en", "deguchi19-dbsa-words", ["--arch transformer_dbsa ", "/dbsa19words/data-bin"]),
    ("aspec-ja-en", "omote19-dep-v", ["--arch transformer_dep", "--rel-dep-terms value", "--rel-no-absolute-positions",
                                      "--batch-size 100", "--max-epoch 50", "/omote19abl/data-bin"]),
    ("aspec-ja-en", "omote19-noabs", ["--arch syntax_transformer", "--rel-no-absolute-positions"]),
    ("aspec-ja-en", "omote19-dep_rel", ["--arch transformer_dep_rel", "--batch-size 256", "--max-epoch 30",
                                        "--warmup-updates 4000", "--adam-eps 1e-9"]),
    ("aspec-en-ja", "cky_lstm", ["--task translation", "--arch cky_lstm", "--adam-betas (0.9, 0.99)",
                                 "--clip-norm 3.0", "--weight-decay 1e-6", "--lr-scheduler fixed",
                                 "--lr 0.01,0.01,0.01,0.01,0.01,0.01,0.01,0.01,0.01,0.005,0.005,0.005,0.0025"]),
]


@pytest.mark.parametrize("dataset,model,expected", PAPER_SETTINGS, ids=[f"{d}:{m}" for d, m, _ in PAPER_SETTINGS])
def test_train_command_carries_the_papers_settings(dataset, model, expected, tmp_path):
    for variant in ("main", "ch", "dbsa19", "dbsa19words", "omote19", "omote19abl", "syncattn21", "words"):
        os.makedirs(tmp_path / variant / "data-bin")
        open(os.path.join(tmp_path / variant / "data-bin", ".prepared"), "w").close()  # as prepare.sh leaves it
    p = recipe(dataset, "train", model, DRY_RUN=1, WORK=str(tmp_path), GPUS=1, MAX_TOKENS=4096)
    command = " ".join(shlex.split(p.stderr.split("] ", 1)[1]))  # the arguments as fairseq receives them
    for fragment in expected:
        assert fragment in command, (fragment, command)
    # 4 GPUs: the same batch per update with a quarter of the accumulation
    p4 = recipe(dataset, "train", model, DRY_RUN=1, WORK=str(tmp_path), GPUS=4, MAX_TOKENS=4096).stderr
    freq1, freq4 = (int(re.search(r"--update-freq (\d+)", c).group(1)) for c in (command, p4))
    assert freq4 == max(1, -(-freq1 // 4)) or "--batch-size" in command


def test_a_paper_baseline_not_evaluated_yet_is_skipped_with_a_line(tmp_path, monkeypatch, capsys):
    """evaluate.sh tests a model against each of its ALSO_AGAINST baselines; one with no translations yet is
    skipped with a line naming it, and writes no vs_BASE folder (results_table.py would read such a folder as
    a row with no bootstrap test). The scoring is replaced by a recorder: the check is of which folders and
    baselines get scored, per test set and for a single test split."""
    work, raw = tmp_path / "work", tmp_path / "raw"
    (work / "eval" / "rel" / "test2016").mkdir(parents=True)
    (work / "eval" / "rel" / "test2016" / "hyp.txt").write_text("a\n")  # rel scored on test2016 only
    raw.mkdir()

    def against(sets, capsys=capsys):
        from runner import evaluate_step

        if sets:
            (raw / "test.sets").write_text(sets)
        r = loaded("multi30k-en-de", WORK=str(work))
        r.data_work = str(tmp_path)  # RAW is tmp_path/raw
        scored = []
        monkeypatch.setattr(evaluate_step, "score", lambda _r, out, *a: scored.append(f"scored {out} against {a[-1]}"))
        (work / "eval" / "dep_rel").mkdir(parents=True, exist_ok=True)
        evaluate_step.score_against_others(r, "dep_rel", f"{work}/eval/dep_rel", "src.tok", "ref.tok")
        return type("P", (), {"stdout": "".join(x + "\n" for x in scored), "stderr": capsys.readouterr().err})

    p = against("")
    assert p.stdout == "" and "not tested against rel: no " in p.stderr
    assert "(evaluate rel, then dep_rel again)" in p.stderr
    assert os.listdir(work / "eval" / "dep_rel") == []
    p = against("test2016 30\ntest2017 20\n")
    assert p.stdout.splitlines() == [f"scored {work}/eval/dep_rel/test2016/vs_rel against {work}/eval/rel/test2016"]
    assert f"not tested against rel on test2017: no {work}/eval/rel/test2017/hyp.txt" in p.stderr
    assert not (work / "eval" / "dep_rel" / "test2017" / "vs_rel").exists()
    (work / "eval" / "rel" / "hyp.txt").write_text("a\n")
    (raw / "test.sets").unlink()
    assert against("").stdout.splitlines() == [f"scored {work}/eval/dep_rel/vs_rel against {work}/eval/rel"]
    # evaluated again while rel has no translations: the earlier evaluation's vs_rel row goes (it scored the
    # model's earlier translations), and so do the per-set rows of an earlier layout
    (work / "eval" / "dep_rel" / "vs_rel" / "scores.json").write_text("{}")
    (work / "eval" / "dep_rel" / "test2016" / "vs_rel").mkdir(parents=True, exist_ok=True)
    (work / "eval" / "rel" / "hyp.txt").unlink()
    assert against("").stdout == ""
    assert not (work / "eval" / "dep_rel" / "vs_rel").exists()
    assert not (work / "eval" / "dep_rel" / "test2016" / "vs_rel").exists()


def test_aspec_dbsa_word_vocabulary_is_words_seen_five_times():
    """Deguchi et al. 2019 Table 3 (no BPE): the vocabulary is the words seen at least 5 times."""
    opts = " ".join(shlex.split(loaded("aspec-ja-en").variants["dbsa19words"].prepare))
    assert "--bpe-merges 0" in opts and "--thresholdsrc 5 --thresholdtgt 5" in opts and "nwords" not in opts


def test_train_refuses_without_data_and_help_lists_models(tmp_path):
    p = recipe("nc11-en-de", "train", "pascal", check=False, WORK=str(tmp_path))
    assert p.returncode == 1 and "run prepare.sh first" in p.stderr
    unfinished = tmp_path.parent / f"{tmp_path.name}_unfinished"
    (unfinished / "words" / "data-bin").mkdir(parents=True)  # a prepare killed or still running: no .prepared
    p = recipe("aspec-en-ja", "train", "lstm_luong", check=False, fork=False, WORK=str(unfinished))
    assert p.returncode == 1 and "is not finished (no .prepared" in p.stderr, p.stderr
    p = recipe("aspec-en-ja", "prepare", "--help", WORK=str(tmp_path))
    assert "Models: lstm_luong cky_lstm" in p.stdout and "LOCAL_DATA" in p.stdout and "Adam lr 0.01" in p.stdout
    assert not os.listdir(tmp_path)  # --help wrote nothing


@pytest.mark.slow
def test_recipe_reads_local_data_real_text_and_parses_it(tmp_path):
    """LOCAL_DATA with real raw text (UD PUD English and German): the recipe parses the English with a real
    parser (UDPipe 1, the shared data's EWT model) and Moses-tokenises the German; sacreBLEU then
    scores detokenised output against the raw German."""
    pytest.importorskip("ufal.udpipe")
    from conftest import require_shared
    from fairseq_syntax.data.trees.conllu import read_conllu

    model = require_shared("models", "en_ewt_udpipe_small.udpipe")
    text = {lang: [next(c for c in s.comments if c.startswith("# text = "))[9:]
                   for s in read_conllu(require_shared("data", f"UD_{name}-PUD", f"{lang}_pud-ud-test.conllu"))]
            for lang, name in (("en", "English"), ("de", "German"))}
    local = tmp_path / "local"
    local.mkdir()
    for split, sl in {"train": slice(0, 300), "valid": slice(900, 950), "test": slice(950, 1000)}.items():
        for lang in ("en", "de"):
            (local / f"{split}.{lang}").write_text("\n".join(text[lang][sl]) + "\n", encoding="utf-8")
    work = str(tmp_path / "work")
    p = recipe("nc11-en-de", "prepare", "transformer", LOCAL_DATA=str(local), WORK=work, PARSER_en="udpipe",
               PARSER_MODEL_en=model)
    n = int(re.search(r"train: (\d+) of 300 pairs identified as en-de \(langdetect\)", p.stderr).group(1))
    assert 290 <= n <= 300  # the paper's langdetect filter ran (PUD is clean English / German)
    parsed = list(read_conllu(os.path.join(work, "text", "train.en.conllu")))
    assert len(parsed) == 300  # one tree per line of raw text
    tok_en = open(os.path.join(work, "main", "work", "train.tok.en"), encoding="utf-8").read().splitlines()
    assert len(tok_en) == n and tok_en[0].split() == parsed[0].forms("surface")  # the parse's tokens
    tok_de = open(os.path.join(work, "text", "train.de"), encoding="utf-8").read().splitlines()
    assert len(tok_de) == 300
    i = next(i for i, line in enumerate(text["de"][:300]) if re.search(r"\w,", line))
    assert re.search(r"\w ,", tok_de[i])  # Moses split the comma off the word
    recipe("nc11-en-de", "train", "transformer", SAMPLE=1, WORK=work)
    # a model of 2 updates translates to the length limit (the sample's 1.2 x source + 4: about 4 s for these 50
    # sentences of 20-30 words): at most 10 tokens
    recipe("nc11-en-de", "evaluate", "transformer", "--max-len-a", "0", "--max-len-b", "10", SAMPLE=1, WORK=work)
    scores = json.load(open(os.path.join(work, "eval", "transformer", "scores.json")))
    assert scores["sentences"] == 50 and "tok:13a" in scores["bleu_signature"]


def test_the_baseline_tested_against_is_the_first_folder_under_work_eval(tmp_path):
    """A model or a test set named eval: the baseline is the folder right under WORK/eval (was: the folder after
    the last one named eval, so a set named eval gave "hyp.txt"); a file outside WORK/eval names none."""
    work = str(tmp_path / "work")
    for rel, base in ((("eval", "transformer", "hyp.txt"), "transformer"),
                      (("eval", "transformer", "eval", "hyp.txt"), "transformer"),
                      (("eval", "eval", "test", "hyp.txt"), "eval")):
        assert results_table.tested_against({"baseline_file": os.path.join(work, *rel)}, work) == base, rel
    os.makedirs(os.path.join(work, "eval", "rel"))
    os.symlink(work, str(tmp_path / "link"))  # recorded through a link to WORK: the same folder
    assert results_table.tested_against({"baseline_file": str(tmp_path / "link" / "eval" / "rel" / "hyp.txt")},
                                        work) == "rel"
    elsewhere = str(tmp_path / "elsewhere" / "eval" / "x" / "hyp.txt")
    assert results_table.tested_against({"baseline_file": elsewhere}, work) is None
    assert results_table.tested_against({}, work) is None


@pytest.mark.slow  # 7 s
def test_results_table_refuses_a_row_labelled_with_the_wrong_baseline(tmp_path):
    """results_table.py names each row's baseline (transformer unless --baselines says otherwise); a row whose
    scores were tested against another model is refused, naming the model to give."""
    def scores(model, bleu, baseline_bleu=None):
        folder = tmp_path / "eval" / model
        folder.mkdir(parents=True)
        sc = {"bleu": bleu, "chrf": 50.0}
        if baseline_bleu is not None:
            sc.update(baseline_bleu=baseline_bleu, bootstrap={"bleu": {"system": {"p_value": 0.1}}})
        (folder / "scores.json").write_text(json.dumps(sc))

    scores("transformer", 30.0)
    scores("lstm_luong", 20.0, baseline_bleu=20.0)
    scores("cky_lstm", 21.0, baseline_bleu=20.0)
    script = os.path.join(ROOT, "examples", "recipes", "results_table.py")
    args = [sys.executable, script, "--work", str(tmp_path), "--models", "transformer", "lstm_luong", "cky_lstm"]
    wrong = run(args, check=False)
    assert wrong.returncode == 1 and "name its baseline with --baselines lstm_luong=MODEL" in wrong.stderr
    right = run(args + ["--baselines", "lstm_luong=lstm_luong,cky_lstm=lstm_luong"])
    assert "| cky_lstm | lstm_luong | 21.00 | 50.0 | 0.100 |" in right.stdout
    # a row against another baseline (ALSO_AGAINST: vs_BASE) is held to the same: the model's translations of
    # this evaluation (its BLEU) against the other baseline's last ones
    vs = tmp_path / "eval" / "cky_lstm" / "vs_transformer"
    vs.mkdir()
    args += ["--baselines", "lstm_luong=lstm_luong,cky_lstm=lstm_luong"]
    for bleu, baseline_bleu, error in ((21.0, 30.0, None), (19.0, 30.0, "scored other translations of cky_lstm"),
                                       (21.0, 29.0, "run evaluate.sh cky_lstm again if transformer was evaluated")):
        (vs / "scores.json").write_text(json.dumps({"bleu": bleu, "chrf": 50.0, "baseline_bleu": baseline_bleu,
                                                    "bootstrap": {"bleu": {"system": {"p_value": 0.2}}}}))
        p = run(args, check=False)
        if error is None:
            assert p.returncode == 0 and "| cky_lstm | transformer | 21.00 | 50.0 | 0.200 |" in p.stdout, p.stderr
        else:
            assert p.returncode == 1 and error in p.stderr, p.stderr


@pytest.mark.slow  # five runs of the script: 11 s
def test_results_table_refuses_a_baseline_it_cannot_check(tmp_path):
    """A row whose baseline has no scores.json in WORK (its committed translations stood in for its evaluation)
    is checked against the committed OUT/BASE.json, and refused where neither exists (before: taken unchecked, so
    a seed row without --baselines was labelled 'transformer' while tested against transformer_seedN); a row
    whose scores name the baseline file they were tested against is checked by that name."""
    (tmp_path / "eval" / "transformer_seed2").mkdir(parents=True)
    (tmp_path / "eval" / "transformer_seed2" / "hyp.txt").write_text("a\n")  # restored, never scored here
    rel = tmp_path / "eval" / "rel_seed2"
    rel.mkdir()
    sc = {"bleu": 31.0, "chrf": 50.0, "baseline_bleu": 29.0, "bootstrap": {"bleu": {"system": {"p_value": 0.1}}}}
    (rel / "scores.json").write_text(json.dumps(sc))
    (rel / "hyp.txt").write_text("b\n")
    script = os.path.join(ROOT, "examples", "recipes", "results_table.py")
    args = [sys.executable, script, "--work", str(tmp_path), "--models", "rel_seed2"]
    p = run(args + ["--baselines", "rel_seed2=transformer_seed2"], check=False)
    assert p.returncode == 1 and "cannot check that its baseline is transformer_seed2" in p.stderr, p.stderr
    out = tmp_path / "out"
    out.mkdir()
    (out / "transformer_seed2.json").write_text(json.dumps({"sets": {"test": {"bleu": 29.0}}}))
    p = run(args + ["--baselines", "rel_seed2=transformer_seed2", "--out", str(out)])
    assert "| rel_seed2 | transformer_seed2 | 31.00 |" in p.stdout
    p = run(args + ["--out", str(out)], check=False)  # no --baselines: transformer, never scored here
    assert p.returncode == 1 and "cannot check that its baseline is transformer" in p.stderr, p.stderr
    sc["baseline_file"] = str(tmp_path / "eval" / "transformer_seed2" / "hyp.txt")
    (rel / "scores.json").write_text(json.dumps(sc))
    p = run(args, check=False)
    assert p.returncode == 1 and "tested against transformer_seed2" in p.stderr, p.stderr
    assert "--baselines rel_seed2=transformer_seed2" in p.stderr
    p = run(args + ["--baselines", "rel_seed2=transformer_seed2"])
    assert "| rel_seed2 | transformer_seed2 | 31.00 |" in p.stdout


def test_a_row_trained_on_other_text_than_its_baseline_is_refused(tmp_path):
    """results_table.py records what a model's checkpoint recorded of its text when it trained (its token
    dictionaries' and BPE codes' digests, the data-bin's variant) and refuses a row whose baseline recorded
    other ones on the same variant: a data-bin prepared again otherwise would compare models that read
    different text. The record is the checkpoint's, not the data-bin's as it is now (rebuilt in place after the
    baseline trained, it would give both the same digest)."""
    import torch

    from fairseq_syntax.tasks.syntax_translation import SAVED_BPE_CODES, SAVED_DICTIONARIES

    def checkpoint(model, variant, codes, dictionary="d1"):
        d = tmp_path / "work" / "checkpoints" / model
        d.mkdir(parents=True)
        torch.save({"cfg": {"task": {"data": f"work/{variant}/data-bin"}},
                    "task_state": {SAVED_DICTIONARIES: {"dict.ja.txt": dictionary, "dict.ja.labels.txt": "labels"},
                                   SAVED_BPE_CODES: {"ja": codes}}}, d / "checkpoint_best.pt")
        return str(d / "checkpoint_best.pt")

    work = str(tmp_path / "work")
    lstm = results_table.trained_data(checkpoint("lstm", "main", "c1"))
    assert lstm == {"variant": "main", "dictionaries": {"dict.ja.txt": "d1"}, "bpe_codes": {"ja": "c1"}}
    assert results_table.trained_data(None) == {} and results_table.scored_checkpoint(work, "none") is None
    cky = results_table.trained_data(checkpoint("cky", "main", "c2"))
    with pytest.raises(SystemExit, match=r"cky trained on other text than its baseline lstm .*BPE codes ja"):
        results_table.check_same_data("cky", cky, "lstm", *results_table.baseline_data(work, "lstm"))
    other_dict = results_table.trained_data(checkpoint("rel", "main", "c1", dictionary="d2"))
    assert "dictionary dict.ja.txt" in results_table.text_difference(other_dict, lstm)
    results_table.check_same_data("cky", cky, "lstm", {}, "x")  # a record from before: not held to it
    # C&H's multi-task corpus (variant ch) is other text by design: not compared with the main variant's
    ch = results_table.trained_data(checkpoint("ch", "ch", "c3"))
    results_table.check_same_data("ch", ch, "lstm", lstm, "x")
    # a model decoding another's checkpoint (CHECKPOINT_OF): evaluate.sh names it in eval/MODEL/checkpoint.txt
    (tmp_path / "work" / "eval" / "cky_own").mkdir(parents=True)
    (tmp_path / "work" / "eval" / "cky_own" / "checkpoint.txt").write_text(
        str(tmp_path / "work" / "checkpoints" / "cky" / "checkpoint_best.pt") + "\n")
    assert results_table.trained_data(results_table.scored_checkpoint(work, "cky_own")) == cky
    (tmp_path / "work" / "eval" / "lstm").mkdir()
    (tmp_path / "work" / "eval" / "lstm" / "checkpoint.txt").write_text("/moved/away/checkpoint_best.pt\n")
    assert results_table.trained_data(results_table.scored_checkpoint(work, "lstm")) == lstm  # its own folder
    out = tmp_path / "out"
    out.mkdir()
    (out / "base.json").write_text(json.dumps({"data": cky}))  # a committed baseline, its checkpoint gone
    assert results_table.baseline_data(work, "base", str(out)) == (cky, str(out / "base.json"))
    assert results_table.baseline_data(work, "base") == ({}, None)


def test_a_row_of_controlled_trees_records_the_control_and_its_uas(tmp_path):
    """A model trained on --tree-control trees: its row's "data" keeps the control as its data-bin's
    preparation.json gives it (kind, seed, each split's UAS against the parser), the checkpoint's own record
    saying which control it trained on; a data-bin prepared again with another control since is refused, and
    a model of the parser's trees records none."""
    import torch

    from fairseq_syntax.preparation.trained_on import SAVED_TREE_CONTROL
    from fairseq_syntax.tasks.syntax_translation import SAVED_DICTIONARIES

    entry = {"kind": "noise:0.3", "seed": 1, "uas": {"train": {"ja": 73.3}}}
    bin_dir = tmp_path / "noise03" / "data-bin"
    bin_dir.mkdir(parents=True)
    (bin_dir / "preparation.json").write_text(json.dumps({"tree_control": entry}))

    def data(model, saved):
        d = tmp_path / "checkpoints" / model
        d.mkdir(parents=True)
        torch.save({"cfg": {"task": {"data": str(bin_dir)}},
                    "task_state": {SAVED_DICTIONARIES: {"dict.ja.txt": "d1"}, SAVED_TREE_CONTROL: saved}},
                   d / "checkpoint_best.pt")
        return results_table.trained_data(str(d / "checkpoint_best.pt"))

    assert data("noise03", "noise:0.3, seed 1")["tree_control"] == entry
    assert "tree_control" not in data("parsed", "none")
    with pytest.raises(SystemExit, match=r"trained on --tree-control random, seed 1, the data-bin holds noise:0.3"):
        data("random", "random, seed 1")


def test_a_training_resumed_on_a_data_bin_prepared_again_otherwise_is_refused(tmp_path):
    """train.sh's trained_on: a model's first start records its data-bin's token dictionaries and BPE codes
    (WORK/checkpoints/MODEL/trained_on.txt); a resumed training whose data-bin holds other ones (prepared again
    otherwise, the same dictionary sizes) stops naming the files, before fairseq would go on on other text. A
    training begun before the record is not held to it; results_table.py reads the record for any task."""
    import torch

    data_bin, ck = tmp_path / "main" / "data-bin", tmp_path / "checkpoints" / "lstm"
    data_bin.mkdir(parents=True)
    for name, text in (("dict.ja.txt", "a 1\n"), ("dict.en.txt", "b 1\n"), ("dict.ja.labels.txt", "nsubj 1\n"),
                       ("bpe.codes", "a b\n")):
        (data_bin / name).write_text(text)

    def train():
        from runner.recipe import RecipeError
        from runner.train_step import trained_on

        try:
            trained_on(str(data_bin), str(ck))
        except RecipeError as e:
            return type("P", (), {"returncode": 1, "stdout": "", "stderr": str(e)})
        return type("P", (), {"returncode": 0, "stdout": "went on", "stderr": ""})

    assert train().stdout.strip().endswith("went on")
    assert sorted(line.split()[1] for line in (ck / "trained_on.txt").read_text().splitlines()) == [
        "bpe.codes", "dict.en.txt", "dict.ja.txt"]  # the parses' labels are not the text
    torch.save({"cfg": {"task": {"data": str(data_bin)}}, "task_state": {}}, ck / "checkpoint_last.pt")
    (data_bin / "dict.ja.labels.txt").write_text("obj 1\n")  # other parses, the same text: goes on
    assert train().stdout.strip().endswith("went on")
    recorded = results_table.trained_data(str(ck / "checkpoint_last.pt"))
    assert recorded["variant"] == "main" and sorted(recorded["files"]) == ["bpe.codes", "dict.en.txt", "dict.ja.txt"]
    (data_bin / "bpe.codes").write_text("a c\n")  # prepared again otherwise
    p = train()
    assert p.returncode == 1 and "went on" not in p.stdout, p.stdout + p.stderr
    assert f"{data_bin} is not the data-bin {ck} was trained on: bpe.codes differ" in p.stderr, p.stderr
    (ck / "trained_on.txt").unlink()  # a training begun before the record: not held to it, nor recorded now
    assert train().stdout.strip().endswith("went on") and not (ck / "trained_on.txt").exists()


def test_results_table_reads_both_parse_head_figures(tmp_path):
    """parse_uas keeps induce-parses' UAS per side and, for a decoder head, its UAS on the words whose head
    precedes them (the lines as fairseq-syntax-induce-parses prints them)."""
    uas = tmp_path / "uas.txt"
    uas.write_text("UAS encoder parse head, split test: 96.24 (4627/4808 words)\n"
                   "UAS decoder (teacher forcing) parse head, split test: 32.42 (1296/3998 words); "
                   "on words whose head precedes them: 66.26 (1296/1956)\n")
    assert parse_uas(str(uas)) == {"encoder": 96.24, "decoder": 32.42, "decoder_preceding": 66.26}
    assert parse_uas(str(tmp_path / "absent.txt")) == {}


def _seeded(dataset, model, work):
    """train.sh MODEL's command (DRY_RUN) and the baselines evaluate.sh tests MODEL against."""
    p = recipe(dataset, "train", model, DRY_RUN=1, WORK=work, GPUS=1, MAX_TOKENS=4096)
    command = " ".join(shlex.split(p.stderr.split("] ", 1)[1]))
    settings = loaded(dataset).model(model, "train.sh")
    return command, settings.baseline, list(settings.also_against)


@pytest.mark.parametrize("dataset", ["tanaka-ja-en", "tanaka-en-ja"])
def test_any_model_reseeded_as_model_seed_n(dataset, tmp_path):
    """MODEL_seedN is MODEL's command with --seed N (one --seed: the config's replaced, not appended), its own
    checkpoints; it is tested against its baseline's same seed (a baseline against its own seed 1: the seed
    noise), and so for the paper's other baselines; the seeds defined in the config keep their definition."""
    work = str(tmp_path)
    os.makedirs(tmp_path / "main" / "data-bin")
    open(os.path.join(tmp_path / "main" / "data-bin", ".prepared"), "w").close()  # as prepare.sh leaves it
    os.makedirs(tmp_path.parent / "tanaka-ja-en" / "main" / "data-bin", exist_ok=True)
    open(os.path.join(tmp_path.parent / "tanaka-ja-en" / "main" / "data-bin", ".prepared"), "w").close()
    cases = {"dep_rel_seed3": ("dep_rel", "transformer_seed3", ["rel_seed3"]),
             "transformer_seed3": ("transformer", "transformer", []),
             "rel_seed2": ("rel", "transformer_seed2", [])}
    if dataset == "tanaka-ja-en":
        cases.update({"syncattn_seed2": ("syncattn", "transformer_seed2", ["dbsa_sync_seed2"]),
                      "cky_lstm_lr001_seed3": ("cky_lstm_lr001", "lstm_luong_lr001_seed3", ["lstm_luong_seed3"]),
                      "lstm_luong_lr001_seed3": ("lstm_luong_lr001", "lstm_luong_seed3", [])})
    else:
        cases["pascal_wat_seed2"] = ("pascal_wat", "transformer_seed2", [])
    for name, (model, base, also) in cases.items():
        command, got_base, got_also = _seeded(dataset, name, work)
        original, _, _ = _seeded(dataset, model, work)
        seed = name.rsplit("_seed", 1)[1]
        assert re.findall(r"--seed (\d+)", command) == [seed], name
        assert command.replace(f"--seed {seed}", "--seed 1").replace(f"/checkpoints/{name}", f"/checkpoints/{model}") \
            == original, name
        assert (got_base, got_also) == (base, also), name
    command, base, _ = _seeded(dataset, "transformer_seed2", work)  # the config's own: against seed 1
    assert re.findall(r"--seed (\d+)", command)[-1] == "2" and base == "transformer"
    p = recipe(dataset, "train", "nosuch_seed2", check=False, fork=False, WORK=work)
    assert p.returncode == 1 and "unknown model 'nosuch_seed2'" in p.stderr and "MODEL_seedN" in p.stderr
    p = recipe(dataset, "train", "rel_seed1", check=False, fork=False, WORK=work)
    assert p.returncode == 1 and "seed 1 is rel itself" in p.stderr


def test_a_sample_run_switches_to_the_heads_own_tree_after_its_first_update(tmp_path):
    """SAMPLE=1 trains 2 updates: a model that switches its tree layers to the parse head's own tree after the
    warm-up switches after the first (the model refuses a switch at or after --max-update: it would never
    happen); a model without the switch gets no such option."""
    os.makedirs(tmp_path / "main" / "data-bin")
    open(os.path.join(tmp_path / "main" / "data-bin", ".prepared"), "w").close()  # as prepare.sh leaves it
    p = recipe("tanaka-ja-en", "train", "dep_rel_self_st", SAMPLE=1, DRY_RUN=1, WORK=str(tmp_path))
    command = shlex.split(p.stderr.split("] ", 1)[1])
    after = [command[i + 1] for i, w in enumerate(command) if w == "--self-parse-train-after"]
    updates = [command[i + 1] for i, w in enumerate(command) if w == "--max-update"]
    assert after[-1] == "1" and updates[-1] == "2", command
    p = recipe("tanaka-ja-en", "train", "dep_rel", SAMPLE=1, DRY_RUN=1, WORK=str(tmp_path))
    assert "--self-parse-train-after" not in p.stderr


def test_a_fine_tuned_model_starts_from_its_starting_models_best_checkpoint_of_the_same_seed(tmp_path):
    """transformer_ft and dep_rel_ft: the from-scratch model's command with the fine-tuning budget (1,000
    updates, warm-up 50, lr 2e-4) and --finetune-from-model on the transformer's best checkpoint; reseeded, the
    transformer of the same seed; without that checkpoint train.sh stops, naming the model to train first."""
    work = str(tmp_path)
    os.makedirs(tmp_path / "main" / "data-bin")
    open(os.path.join(tmp_path / "main" / "data-bin", ".prepared"), "w").close()  # as prepare.sh leaves it
    for name, scratch, start in (("transformer_ft", "transformer", "transformer"),
                                 ("dep_rel_ft_seed2", "dep_rel_seed2", "transformer_seed2")):
        command, _, _ = _seeded("tanaka-ja-en", name, work)
        original, _, _ = _seeded("tanaka-ja-en", scratch, work)
        start_from = f"--finetune-from-model {work}/checkpoints/{start}/checkpoint_best.pt"
        assert command.endswith(start_from), command
        tuned = (original.replace("--max-update 2000", "--max-update 1000").replace("--warmup-updates 400",
                 "--warmup-updates 50").replace("--lr 0.002", "--lr 0.0002")
                 .replace(f"/checkpoints/{scratch}", f"/checkpoints/{name}"))
        assert command == tuned + " " + start_from
    command, base, also = _seeded("tanaka-ja-en", "dep_rel_u3000_seed3", work)
    assert "--max-update 3000" in command and "finetune" not in command
    assert (base, also) == ("transformer_ft_seed3", [])
    p = recipe("tanaka-ja-en", "train", "dep_rel_ft", check=False, fork=False, WORK=work)
    assert p.returncode == 1 and "dep_rel_ft fine-tunes transformer's best checkpoint" in p.stderr
    assert "train transformer first" in p.stderr


@pytest.mark.slow  # five prepares of a sample: 30 s
def test_a_data_bin_made_from_other_raw_data_is_made_again(tmp_path):
    """SAMPLE=1 prepare, then the real data into the same WORK (LOCAL_DATA here): prepare stops, naming both
    sources (before: the sample's data-bin was trained on and scored as the real one, exit 0); with
    FETCH_AGAIN=1 the raw data and the data-bin are made again; the same run again reuses them. Markers of
    an earlier recipe (empty) stand for this run's source, once no sample is in WORK."""
    work = str(tmp_path / "work")
    DATASET = "wmt17-en-de"  # a PASCAL corpus without a language filter (the sample's words are synthetic)
    recipe(DATASET, "prepare", "transformer", SAMPLE=1, WORK=work)
    bin_file = os.path.join(work, "main", "data-bin", "train.en-de.de.bin")
    sample_bin = open(bin_file, "rb").read()
    local = tmp_path / "local"
    local.mkdir()
    for name in os.listdir(os.path.join(work, "raw")):
        if not name.startswith("."):
            text = open(os.path.join(work, "raw", name), encoding="utf-8").read()
            if name == "train.de":  # other data: the German of the training pairs in reverse word order
                text = "".join(" ".join(line.split()[::-1]) + "\n" for line in text.splitlines())
            (local / name).write_text(text, encoding="utf-8")
    refused = recipe(DATASET, "prepare", "transformer", LOCAL_DATA=str(local), WORK=work, check=False)
    assert refused.returncode == 1 and "holds raw data from sample" in refused.stderr, refused.stderr
    assert "FETCH_AGAIN=1 to replace it" in refused.stderr and open(bin_file, "rb").read() == sample_bin
    p = recipe(DATASET, "prepare", "transformer", LOCAL_DATA=str(local), WORK=work, FETCH_AGAIN=1)
    assert "main/data-bin was made from other text or options: made again" in p.stderr
    assert open(bin_file, "rb").read() != sample_bin
    for marker in ("raw/.complete", "main/data-bin/.prepared"):  # as an earlier recipe left them
        open(os.path.join(work, marker), "w").close()
    shutil.rmtree(os.path.join(work, "sample"), ignore_errors=True)
    again = recipe(DATASET, "prepare", "transformer", LOCAL_DATA=str(local), WORK=work)
    assert "(delete it to fetch again)" in again.stderr and "data-bin is complete" in again.stderr
    assert open(os.path.join(work, "raw", ".complete")).read().startswith("local data ")
    # the same LOCAL_DATA folder with a file changed in it: refused, naming it (before: the old copy in WORK/raw
    # and its data-bin were reused, exit 0); FETCH_AGAIN=1 copies it again and remakes the data-bin
    made = open(bin_file, "rb").read()
    (local / "train.de").write_text((local / "train.de").read_text(encoding="utf-8").upper(), encoding="utf-8")
    changed = recipe(DATASET, "prepare", "transformer", LOCAL_DATA=str(local), WORK=work, check=False)
    assert changed.returncode == 1 and "train.de changed since" in changed.stderr, changed.stderr
    assert "FETCH_AGAIN=1" in changed.stderr and open(bin_file, "rb").read() == made
    recipe(DATASET, "prepare", "transformer", LOCAL_DATA=str(local), WORK=work, FETCH_AGAIN=1)
    assert open(bin_file, "rb").read() != made


def test_a_failed_multitask_step_stops_prepare(tmp_path, monkeypatch):
    """A failing multi-task step stops the prepare: prepare.py is not handed the folder it failed to write."""
    from runner.prepare_step import stage_variant
    from runner.recipe import RecipeError

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "fairseq-syntax-multitask").write_text("#!/bin/sh\nexit 3\n")
    (bin_dir / "fairseq-syntax-multitask").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    r = loaded("wat-en-ja", WORK=str(tmp_path / "work"))
    with pytest.raises(RecipeError, match="variant ch: its inputs could not be staged"):
        stage_variant(r, "ch")


def test_a_relative_work_folder_stages_inputs_that_resolve(tmp_path, monkeypatch):
    """WORK given relative to the current folder (WORK=work/tanaka-ja-en): the variant's staged inputs are links
    that resolve to WORK/text (before: links relative to the staging folder, which prepare.py could not open)."""
    from runner.prepare_step import stage_variant

    monkeypatch.chdir(tmp_path)
    r = loaded("tanaka-ja-en", WORK=os.path.join("work", "tanaka-ja-en"))
    assert os.path.isabs(r.work) and r.work == str(tmp_path / "work" / "tanaka-ja-en")
    text = tmp_path / "work" / "tanaka-ja-en" / "text"
    text.mkdir(parents=True)
    for split in ("train", "valid", "test"):
        (text / f"{split}.ja.conllu").write_text(f"# {split} ja\n", encoding="utf-8")
        (text / f"{split}.en").write_text(f"{split} en\n", encoding="utf-8")
    folder = stage_variant(r, "main")
    assert sorted(os.listdir(folder)) == sorted(f"{s}.{x}" for s in ("train", "valid", "test")
                                                for x in ("ja.conllu", "en"))
    assert open(os.path.join(folder, "valid.ja.conllu"), encoding="utf-8").read() == "# valid ja\n"
    # a queue started with that WORK names the model's lock it holds relative too: it is still the same lock
    from runner import run_locks

    held = list(run_locks._HELD)
    q = loaded("tanaka-ja-en", WORK=os.path.join("work", "tanaka-ja-en"),
               FAIRSEQ_SYNTAX_MODEL_LOCK=os.path.join("work", "tanaka-ja-en", "locks", "dep_rel.lock"))
    run_locks.model_lock(q, "dep_rel")
    assert run_locks._HELD == held and not (tmp_path / "work" / "tanaka-ja-en" / "locks").exists()


def _seed_functions():
    """tanaka_seeds.sh's functions (this_cpu, cpu_of, restore, restore_all), to be run with a made-up repo."""
    text = open(os.path.join(ROOT, "examples", "recipes", "tanaka_seeds.sh"), encoding="utf-8").read()
    return "".join(re.search(rf"^{name}\(\) \{{.*?^\}}\n", text, flags=re.S | re.M).group(0)
                   for name in ("cpu_of", "restore", "restore_all"))


def test_a_seed_baseline_stands_in_only_for_its_own_cpu(tmp_path):
    """tanaka_seeds.sh's restore: a baseline's committed run stands for its evaluation (a finished queue item)
    only on the CPU that trained it; on another CPU the run restored before is taken back and the queue trains
    the baseline, so that no row is tested against a baseline of another CPU. Translations that restore did
    not put there (an evaluation at work, or cut short) are left alone."""
    repo, work = tmp_path / "repo", tmp_path / "work"
    for cpu, folder, model in (("Intel(R) Xeon(R) Processor", "intel-xeon", "lstm_seed2"),
                               ("AMD EPYC 7B13", "amd-epyc", "transformer_seed2")):
        results = repo / "examples" / "tanaka-ja-en" / "results" / folder
        (results / "translations").mkdir(parents=True)
        (results / f"{model}.json").write_text(json.dumps({"machine": {"cpu": cpu}}))
        (results / "translations" / f"{model}.txt").write_text(f"{folder}\n")
    evaluating = work / "tanaka-ja-en" / "eval" / "cky_seed2"
    evaluating.mkdir(parents=True)
    (evaluating / "hyp.txt").write_text("being scored\n")  # another queue's evaluate.sh at work on it

    def run_restore(model, cpu):
        script = f'root="{repo}"; WORK_ROOT="{work}"; this_cpu() {{ echo "{cpu}"; }}\n{_seed_functions()}' \
                 f'restore tanaka-ja-en {model}'
        return run(["bash", "-c", script]).stdout

    lstm = work / "tanaka-ja-en" / "eval" / "lstm_seed2"
    out = run_restore("lstm_seed2", "Intel(R) Xeon(R) Processor")
    assert (lstm / "hyp.txt").read_text() == "intel-xeon\n" and (lstm / ".done").exists(), out
    out = run_restore("lstm_seed2", "AMD EPYC 7B13")  # the work folder moved to another CPU
    assert "is not of this CPU" in out and not (lstm / "hyp.txt").exists() and not (lstm / ".done").exists()
    run_restore("lstm_seed2", "")  # no CPU name read (no "model name" line): matches no run
    assert not (lstm / ".done").exists()
    out = run_restore("transformer_seed2", "AMD EPYC 7B13")
    done = work / "tanaka-ja-en" / "eval" / "transformer_seed2"
    assert (done / "hyp.txt").read_text() == "amd-epyc\n" and (done / ".done").exists(), out
    run_restore("cky_seed2", "AMD EPYC 7B13")
    assert (evaluating / "hyp.txt").read_text() == "being scored\n"


def test_a_new_work_folder_trains_only_the_seeds_not_committed_from_this_cpu(tmp_path):
    """tanaka_seeds.sh on an empty WORK_ROOT (a new machine of the same CPU): every model of the lists with a
    committed run of this CPU is a finished queue item, so that queue.sh trains only the missing ones."""
    text = open(os.path.join(ROOT, "examples", "recipes", "tanaka_seeds.sh"), encoding="utf-8").read()
    functions = _seed_functions()
    repo, work = tmp_path / "repo", tmp_path / "work"
    results = repo / "examples" / "tanaka-ja-en" / "results" / "amd-epyc"
    (results / "translations").mkdir(parents=True)
    for model in ("rel_seed2", "lstm_seed3", "sh_seed3"):
        (results / f"{model}.json").write_text(json.dumps({"machine": {"cpu": "AMD EPYC"}}))
        if model != "sh_seed3":  # its translations were not committed: trained
            (results / "translations" / f"{model}.txt").write_text(f"{model}\n")
    script = (f'root="{repo}"; WORK_ROOT="{work}"; this_cpu() {{ echo "AMD EPYC"; }}\n{functions}'
              'restore_all tanaka-ja-en rel_seed2 cky_seed3 lstm_seed3 sh_seed3')
    out = run(["bash", "-c", script]).stdout
    eval_dir = work / "tanaka-ja-en" / "eval"
    for model in ("rel_seed2", "lstm_seed3"):
        assert (eval_dir / model / ".done").exists() and (eval_dir / model / "hyp.txt").read_text() == f"{model}\n"
    assert not (eval_dir / "cky_seed3").exists() and not (eval_dir / "sh_seed3").exists(), out
    assert "no translations/sh_seed3.txt beside it" in out
    p = run(["bash", os.path.join(ROOT, "examples", "recipes", "tanaka_seeds.sh"), "list"])
    queued = p.stdout.split()
    for name in ("restore_all tanaka-ja-en $A", "restore_all tanaka-en-ja $B_EN_JA",
                 "restore_all tanaka-ja-en $B_JA_EN"):
        assert name in text, name  # each queue restores its whole list before it starts
    assert "cky_lstm_lr001_seed2" in queued and "cky_lstm_lr001_seed3" in queued


def _hold(path, shared=False):
    """An open file holding the kernel's flock on path (as another train.sh or queue would), with its line."""
    import fcntl

    os.makedirs(os.path.dirname(path), exist_ok=True)
    f = open(path, "a")
    fcntl.flock(f, fcntl.LOCK_SH if shared else fcntl.LOCK_EX)
    f.write("pid 12345 on elsewhere: train.sh dep_rel_self, since 2026-11-27 10:00:00\n")
    f.flush()
    return f


def test_a_model_in_training_or_evaluation_is_not_trained_or_evaluated_again_beside_it(tmp_path):
    """The model lock (runner/run_locks.py): train.sh and evaluate.sh of a model whose lock another run
    holds stop, naming the
    holder, before they write anything; a model decoding another's checkpoint (dep_rel_self_own decodes
    dep_rel_self's) shares that one's lock with other decoders but not with its training."""
    work = str(tmp_path)
    (tmp_path / "main" / "data-bin").mkdir(parents=True)
    (tmp_path / "main" / "data-bin" / ".prepared").touch()  # train.sh's lock comes after its data-bin check
    lock = os.path.join(work, "locks", "dep_rel_self.lock")
    holder = _hold(lock)
    for step, model in (("train", "dep_rel_self"), ("evaluate", "dep_rel_self"), ("evaluate", "dep_rel_self_own")):
        p = recipe("tanaka-ja-en", step, model, check=False, fork=False, WORK=work)
        assert p.returncode == 1 and "dep_rel_self is being trained or evaluated by another run" in p.stderr, p.stderr
        assert "pid 12345 on elsewhere: train.sh dep_rel_self" in p.stderr
    holder.close()  # the kernel drops the lock with its last descriptor: no stale lock to remove
    p = recipe("tanaka-ja-en", "evaluate", "dep_rel_self", check=False, fork=False, WORK=work)
    assert p.returncode == 1 and "no checkpoint in" in p.stderr and "another run" not in p.stderr, p.stderr
    holder = _hold(lock, shared=True)  # another decoder of its checkpoint: this one goes on (to its next check)
    p = recipe("tanaka-ja-en", "evaluate", "dep_rel_self_own", check=False, fork=False, WORK=work)
    assert "no checkpoint in" in p.stderr and "another run" not in p.stderr, p.stderr
    for step in ("train", "evaluate"):  # ... but neither its training nor its own evaluation
        p = recipe("tanaka-ja-en", step, "dep_rel_self", check=False, fork=False, WORK=work)
        assert "being trained or evaluated by another run" in p.stderr, (step, p.stderr)
    p = recipe("tanaka-ja-en", "evaluate", "dep_rel_self", check=False, fork=False, WORK=work,
               FAIRSEQ_SYNTAX_MODEL_LOCK=lock)  # its queue holds the lock for it
    assert "no checkpoint in" in p.stderr, p.stderr
    holder.close()


def test_a_fine_tuning_does_not_start_from_a_model_still_in_training(tmp_path):
    """transformer_ft fine-tunes transformer's best checkpoint: while another run holds transformer's lock (its
    training), train.sh transformer_ft stops naming it; once it is free, it goes on (to its next check)."""
    work = str(tmp_path)
    (tmp_path / "main" / "data-bin").mkdir(parents=True)
    (tmp_path / "main" / "data-bin" / ".prepared").touch()
    holder = _hold(os.path.join(work, "locks", "transformer.lock"))
    p = recipe("tanaka-ja-en", "train", "transformer_ft", check=False, fork=False, WORK=work)
    assert p.returncode == 1 and "transformer is being trained or evaluated by another run" in p.stderr, p.stderr
    holder.close()
    p = recipe("tanaka-ja-en", "train", "transformer_ft", check=False, fork=False, WORK=work)
    assert p.returncode == 1 and "train transformer first" in p.stderr and "another run" not in p.stderr, p.stderr


def test_prepare_and_the_runs_that_read_its_data_never_run_beside_each_other(tmp_path):
    """The data lock (runner/run_locks.py): prepare.sh rewrites WORK's data-bins; a training or evaluation
    holding the data lock
    (shared) stops a prepare.sh before it fetches or writes anything, and a prepare holding it stops train.sh
    and evaluate.sh, each naming the holder (before: both went on, and a training read data-bins half
    rewritten, exit 0). Trainings share it with each other."""
    work = str(tmp_path)
    (tmp_path / "main" / "data-bin").mkdir(parents=True)
    (tmp_path / "main" / "data-bin" / ".prepared").touch()
    lock = os.path.join(work, "locks", "data.lock")
    holder = _hold(lock, shared=True)  # a training
    p = recipe("tanaka-ja-en", "prepare", "transformer", check=False, fork=False, WORK=work, SAMPLE="1")
    assert p.returncode == 1 and "data is in use by another run" in p.stderr, p.stderr
    assert "pid 12345 on elsewhere" in p.stderr and not (tmp_path / "raw").exists()
    p = recipe("tanaka-ja-en", "evaluate", "transformer", check=False, fork=False, WORK=work)
    assert "no checkpoint in" in p.stderr and "another run" not in p.stderr, p.stderr  # readers share it
    holder.close()
    holder = _hold(lock)  # a prepare.sh
    for step in ("train", "evaluate"):
        p = recipe("tanaka-ja-en", step, "transformer", check=False, fork=False, WORK=work)
        assert p.returncode == 1 and "data is being prepared by another run" in p.stderr, (step, p.stderr)
    holder.close()


def test_a_queue_waits_for_a_model_another_run_holds_then_skips_it_when_that_run_finished_it(tmp_path):
    """queue.sh: the model's lock held elsewhere, the queue says so and waits; that run finishes the model
    (its .done) and lets go: the queue skips it instead of training it again."""
    import subprocess
    import time

    work = tmp_path / "work"
    lock = str(work / "locks" / "transformer.lock")
    holder = _hold(lock)
    env = {**os.environ, "WORK": str(work), "FAIRSEQ_SYNTAX_VENV": "none",
           "PATH": BIN + os.pathsep + os.environ.get("PATH", "")}
    q = subprocess.Popen(["bash", os.path.join(ROOT, "examples", "recipes", "queue.sh"), "tanaka-ja-en", "transformer"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        line = q.stdout.readline()
        assert "1/1 transformer: another run holds" in line and "waiting for it" in line, line
        time.sleep(0.5)
        assert q.poll() is None  # still waiting
        (work / "eval" / "transformer").mkdir(parents=True)
        (work / "eval" / "transformer" / ".done").touch()
        holder.close()
        out, err = q.communicate(timeout=60)
    finally:
        if q.poll() is None:
            q.kill()
    assert q.returncode == 0 and "1/1 transformer: done by the other run, skipped" in out, (out, err)
    assert not (work / "logs" / "transformer.train.log").exists()


def test_learning_curves_read_every_validation_of_a_training_log(tmp_path):
    """examples/recipes/learning_curves.py: each validation line's NLL (and parse loss, where logged) at its
    update, a resumed run's last value at an update counting; a log without validations is refused."""
    sys.path.insert(0, os.path.join(ROOT, "examples", "recipes"))
    import learning_curves

    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "a.train.log").write_text(
        "2026 | INFO | valid | epoch 001 | valid on 'valid' subset | loss 8.1 | nll_loss 7.221 | ppl 149 | "
        "num_updates 50\nnoise\n"
        "2026 | INFO | valid | epoch 001 | valid on 'valid' subset | loss 7.1 | nll_loss 6.5 | dep_enc_loss 0.776 | "
        "ppl 90 | num_updates 100\n"
        "2026 | INFO | valid | epoch 001 | valid on 'valid' subset | loss 8.0 | nll_loss 7.0 | ppl 140 | "
        "num_updates 50\n")
    (logs / "b.train.log").write_text("no validations\n")
    out = tmp_path / "c.json"
    assert learning_curves.main(["--work", str(tmp_path), "--models", "a", "--json", str(out)]) == 0
    got = json.loads(out.read_text())
    assert got["curves"] == {"a": [[50, 7.0], [100, 6.5]]}
    assert got["parse_loss"] == {"a": {"dep_enc_loss": [[100, 0.776]]}}
    with pytest.raises(SystemExit, match="no validation line"):
        learning_curves.main(["--work", str(tmp_path), "--models", "b", "--json", str(out)])
