"""examples/gpu: the scripts of a GPU run, dry on the CPU (the same run.sh, tiny sizes) so that they cannot rot
between GPU runs; and their pieces that decide something (sizing the table's updates, reading fairseq's log,
the console scripts the installer writes)."""
import json
import os
import re
import sys

import pytest

import forkserver
from helpers import ROOT, run

sys.path.insert(0, os.path.join(ROOT, "examples", "gpu"))
import device_check  # noqa: E402
import install  # noqa: E402
import stall_matrix  # noqa: E402
import tanaka_base  # noqa: E402


def _run_sh(step, out, **variables):
    """run.sh STEP on the CPU; its fairseq commands start through the test worker's fork server (tests/
    forkserver.py)."""
    env = [f"{k}={v}" for k, v in {**forkserver.environment(), "RESULTS": out, "DEVICE": "cpu", **variables}.items()]
    return run(["env", *env, "bash", os.path.join(ROOT, "examples", "gpu", "run.sh"), step])


@pytest.fixture(scope="session")
def tanaka_sample(tmp_path_factory, worker_id):
    """The Tanaka recipe's offline sample prepared for transformer and dbsa_enc, once for every test worker (in
    the folder above the workers' own, under a lock): the device runs read it and write elsewhere."""
    import fcntl

    from test_recipes import recipe

    root = tmp_path_factory.getbasetemp()
    if worker_id != "master":
        root = root.parent  # this run's folder, shared by pytest-xdist's workers
    work = root / "tanaka-sample"
    with open(root / "tanaka-sample.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (work / "prepared").exists():
            recipe("tanaka-ja-en", "prepare", "transformer", "dbsa_enc", SAMPLE=1, WORK=str(work))
            (work / "prepared").touch()
    return str(work)


@pytest.mark.slow
def test_device_check_dry_run_on_the_cpu(data_bin, tmp_path):
    """run.sh check with DEVICE=cpu TINY=1: every phase runs and passes, the JSON says so item by item."""
    out = str(tmp_path / "out")
    extra = ("--parity-cases transformer_dbsa_tiny,transformer_pascal_tiny,cky_lstm_tiny --half-models dbsa,syncattn "
             "--precisions memory-efficient-fp16 --updates 3 --speed-models transformer,dep_rel,lstm_luong,cky_lstm "
             "--token-sizes 512 --steps 2 --warmup 1 --decode-batches 1")
    p = _run_sh("check", out, TINY=1, DATA=data_bin, SRC="src", TGT="tgt", BUDGET=240, EXTRA=extra)
    report = json.load(open(os.path.join(out, "device_check.json")))
    assert report["failed"] == [] and "every check passed" in p.stderr
    assert report["environment"]["device"] == "cpu" and report["environment"]["torch"]
    assert len(report["environment"]["commit"]) == 40 and report["environment"]["date"].endswith("UTC")
    assert {case: r["status"] for case, r in report["parity"].items()} == {
        "transformer_dbsa_tiny": "ok", "transformer_pascal_tiny": "ok", "cky_lstm_tiny": "ok"}
    for name, r in report["half"]["memory-efficient-fp16"].items():
        assert r["status"] == "ok" and r["non_finite"] == [] and r["hypotheses"] == 21, name
        assert float(r["last"]["train_loss"]) > 0 and r["logged_lines"] >= 3
    rows = report["speed"]["models"]
    assert set(rows) == {"transformer", "dep_rel", "lstm_luong", "cky_lstm", "transformer (again)"}
    assert rows["transformer"]["train_512"]["ratio"] == 1.0 and rows["cky_lstm"]["reference"] == "lstm_luong"
    low, high = rows["dep_rel"]["train_512"]["step_ms_quartiles"]
    assert 0 < low <= high
    assert rows["dep_rel"]["decode"]["sentences_per_second"] > 0 and report["speed"]["setting"]["warmup_passes"] == 1
    (dist,) = report["distributed"].values()
    assert dist["status"] == "ok" and dist["ranks_initialised"] == ["0", "1"]


def test_the_half_phase_on_a_gpu_builds_every_papers_model_at_the_cpu_tables_size(data_bin, tmp_path):
    """The GPU's half-precision runs (not the dry run's tiny presets) take the CPU table's whole command for each
    paper's model; each parses and builds (the first GPU run passed the base architecture's --dbsa-encoder-layer 4,
    --pascal-heads 7 and --sync-layer 5 to 3-layer, 4-head models, which stopped them), with the phase's own
    schedule and precision last."""
    from fairseq import options, tasks
    from fairseq.dataclass.utils import convert_namespace_to_omegaconf

    for name in device_check.PAPER_MODELS:
        cmd = device_check._half_command(name, "fp16", data_bin, "src", "tgt", tiny=False, updates=30, device="cpu",
                                         save=str(tmp_path / name))
        args = options.parse_args_and_arch(options.get_training_parser(), cmd[1:])
        assert (args.max_update, args.lr, args.fp16) == (30, [0.0005], True), name
        assert args.encoder_layers == (2 if name in device_check.LSTMS else 3), name
        cfg = convert_namespace_to_omegaconf(args)
        model = tasks.setup_task(cfg.task).build_model(cfg.model)
        assert sum(p.numel() for p in model.parameters()) > 0, name


@pytest.mark.slow
def test_tanaka_base_table_dry_run_on_the_cpu(tanaka_sample, tmp_path):
    """run.sh table with DEVICE=cpu on the recipe's offline sample: the models train side by side, are scored
    against the transformer (bootstrap p-values, RIBES, the parse head's UAS) and are packed in one archive."""
    import tarfile

    work = tanaka_sample
    out = str(tmp_path / "out")
    p = _run_sh("table", out, TANAKA=work, BUDGET=300,
                EXTRA=f"--models transformer,dbsa_enc --updates 2 --work {tmp_path / 'base'} --speed none")
    summary = json.load(open(os.path.join(out, "tanaka_base.json")))
    assert summary["updates"] == 2 and summary["train"]["dbsa_enc"]["exit"] == 0, p.stderr
    assert "--max-update 2 --warmup-updates 1" in summary["extra_train_args"]
    assert "--stop-time-hours 0.03056" in summary["extra_train_args"]  # (300 - 150 - 40) s of training
    assert summary["scored"] == ["transformer", "dbsa_enc"]
    assert summary["decode_args"] == "--max-len-a 1.5 --max-len-b 10"
    assert summary["environment"]["device"] == "cpu" and summary["environment"]["torch"]
    assert sorted(os.listdir(out)) == ["tanaka_base.json", "tanaka_base.tar.gz"]  # RESULTS holds the summary and the archive
    assert "'max_len_a': 1.5" in open(os.path.join(tmp_path / "base", "eval", "dbsa_enc", "generate.log")).read()
    with tarfile.open(os.path.join(out, "tanaka_base.tar.gz")) as tar:
        names = tar.getnames()
        row = json.load(tar.extractfile("results/dbsa_enc.json"))
    assert {"results/transformer.json", "results/translations/dbsa_enc.txt", "logs/dbsa_enc.train.log",
            "logs/transformer.evaluate.log"} <= set(names)
    assert row["baseline"] == "transformer" and row["training"]["last"]["updates"] == 2
    assert "p_value" in json.dumps(row["sets"]["test"]["bootstrap"]) and "ribes" in row["sets"]["test"]
    assert "encoder" in row["uas"]


def test_a_step_past_its_time_is_killed_with_its_children(tmp_path):
    """tanaka_base.run: a command (and what it started) still running at its limit is killed and reported as
    "timeout", so that the table step keeps to its budget and writes what it has."""
    import time

    start = time.time()
    code, seconds = tanaka_base.run(["bash", "-c", "sleep 60 & sleep 60"], str(tmp_path / "x.log"), dict(os.environ),
                                    timeout=1)
    assert code == "timeout" and seconds < 10 and time.time() - start < 10
    assert "killed at its time limit" in (tmp_path / "x.log").read_text()
    assert tanaka_base.run(["true"], str(tmp_path / "y.log"), dict(os.environ), timeout=30)[0] == 0


def test_the_tables_updates_fit_the_time_from_the_speed_figures(tmp_path):
    """Updates = training seconds / (overhead x the models' summed fp16 steps at 8,192 tokens), in fifties;
    without a figure for every model, --updates."""
    speed = tmp_path / "check.json"
    rows = {"transformer": 100.0, "rel": 150.0, "dep_rel": 150.0}
    speed.write_text(json.dumps({"speed": {"models": {m: {"train_8192": {"step_ms_median": ms}}
                                                      for m, ms in rows.items()}}}))
    n, why = tanaka_base.updates_for(["transformer", "rel", "dep_rel"], str(speed), 300, fallback=7)
    assert n == int(300 / (tanaka_base.SHARING_OVERHEAD * 0.4)) // 50 * 50 == 500 and "400 ms" in why
    assert tanaka_base.updates_for(["transformer", "pascal"], str(speed), 300, fallback=7)[0] == 7
    assert tanaka_base.updates_for(["transformer"], str(tmp_path / "none.json"), 300, fallback=7)[0] == 7
    # the reference's second row counts when it is faster than its first
    rows["transformer (again)"] = 50.0
    speed.write_text(json.dumps({"speed": {"models": {m: {"train_8192": {"step_ms_median": ms}}
                                                      for m, ms in rows.items()}}}))
    assert tanaka_base.updates_for(["transformer", "rel", "dep_rel"], str(speed), 300, fallback=7)[0] == 600


def test_the_tables_updates_follow_an_earlier_runs_pace(tmp_path):
    """The committed run of 1,100 updates trained six models side by side in at most 222.5 s (202 ms an update,
    their start included): a run of any of them gets training seconds / that pace, in fifties; a model it did not
    train falls back to --updates. The speed rows had asked for 381 ms x 1.4 an update, 2.6 times the pace."""
    folder, summary = _tanaka_base_run("tanaka_base_1100_updates")
    run_json = os.path.join(folder, "tanaka_base.json")
    n, why = tanaka_base.updates_for(["transformer", "dbsa_enc"], run_json, 310, fallback=7)
    assert max(t["seconds"] for t in summary["train"].values()) == 222.5 and "202 ms an update" in why
    assert n == int(310 / (222.5 / 1100)) // 50 * 50 == 1500
    assert tanaka_base.updates_for(["transformer", "sh"], run_json, 310, fallback=7)[0] == 7
    # another precision or size, or a run whose trainings stopped short of its updates (--stop-time-hours exits
    # 0 too), sets no pace
    assert tanaka_base.updates_for(["transformer"], run_json, 310, fallback=7, precision="fp32")[0] == 7
    assert tanaka_base.updates_for(["transformer"], run_json, 310, fallback=7, size="cpu")[0] == 7
    import shutil

    short = tmp_path / "short"
    shutil.copytree(folder, short)
    row = json.loads((short / "results" / "rel.json").read_text())
    row["training"]["last"]["updates"] = 900
    (short / "results" / "rel.json").write_text(json.dumps(row))
    assert tanaka_base.updates_for(["transformer"], str(short / "tanaka_base.json"), 310, fallback=7)[0] == 7
    assert tanaka_base.train_args(600, 150, 345, precision="fp32").endswith("--stop-time-hours 0.09583 --num-workers 2")
    assert tanaka_base.train_args(600, 150, 345).endswith("0.09583 --fp16 --num-workers 2")


def test_fairseq_log_lines_with_a_non_finite_term_are_flagged():
    log = "\n".join([
        '2026-11-26 | INFO | train_inner | {"epoch": 1, "update": 0.1, "loss": "12.5", "dep_enc_loss": "3.2", '
        '"num_updates": "1", "loss_scale": "128"}',
        '2026-11-26 | INFO | train_inner | {"epoch": 1, "update": 0.2, "loss": "12.1", "dep_enc_loss": "nan", '
        '"num_updates": "2", "loss_scale": "64"}',
        '2026-11-26 | INFO | train | {"epoch": 1, "train_loss": "inf", "train_num_updates": "2"}',
        "2026-11-26 | INFO | fairseq.trainer | NOTE: gradient overflow detected, ignoring gradient"])
    lines, bad, last = device_check._finite_terms(log)
    assert lines == 3 and bad == ["dep_enc_loss=nan (update 2)", "train_loss=inf (update None)"]
    assert last == {"epoch": 1, "train_loss": "inf", "train_num_updates": "2"}


def test_the_installer_writes_every_console_script_of_setup_py_and_fairseqs():
    names = {name for name, _, _ in install.console_scripts()}
    setup = open(os.path.join(ROOT, "setup.py"), encoding="utf-8").read()
    assert names >= set(re.findall(r'"(fairseq-syntax-[\w-]+)=', setup)) | {"fairseq-train", "fairseq-generate"}
    assert all(module.startswith(("fairseq_cli.", "fairseq_syntax.cli.")) for _, module, _ in install.console_scripts())


def test_the_gpu_section_of_the_benchmarks_holds_the_committed_runs_tables():
    """docs/benchmarks.md's GPU tables are report_tables.py's on examples/gpu/results/device_check.json; the
    LSTMs are compared with lstm_luong, the rest with the transformer's row named."""
    import report_tables

    report = json.load(open(os.path.join(ROOT, "examples", "gpu", "results", "device_check.json")))
    doc = open(os.path.join(ROOT, "docs", "benchmarks.md"), encoding="utf-8").read()
    assert report_tables.markdown(report, "transformer (again)") in doc
    assert report_tables.half_markdown(report) in doc
    rows = {name: (ref, per_size) for name, ref, per_size, _ in report_tables.rows(report, "transformer (again)")}
    assert rows["cky_lstm"][0] == "lstm_luong" and rows["pascal"][0] == "transformer (again)"
    step, ratio, quartiles, mem, mem_ratio = rows["rel"][1][4096]
    assert (round(step, 1), round(ratio, 2), quartiles, round(mem), round(mem_ratio, 2)) == (54.5, 0.89, None, 1305, 1.23)
    # a reference skipped for time leaves out the rows compared with it, not the table
    del report["speed"]["models"]["lstm_luong"]["decode"]
    assert {name for name, *_ in report_tables.rows(report, "transformer")} == set(rows) - {"lstm_luong", "cky_lstm"}


#: the committed runs of run.sh table (docs/benchmarks.md, "Tanaka Ja->En at Transformer base")
TANAKA_BASE_RUNS = ("tanaka_base_1100_updates", "tanaka_base_600_updates")


def _tanaka_base_run(name):
    folder = os.path.join(ROOT, "examples", "gpu", "results", name)
    return folder, json.load(open(os.path.join(folder, "tanaka_base.json"), encoding="utf-8"))


def test_the_gpu_tanaka_tables_of_the_benchmarks_are_the_committed_runs():
    """docs/benchmarks.md's GPU Tanaka tables are results_markdown.py's on each committed run's results, every
    model of the run scored, at the updates and commit the text names."""
    sys.path.insert(0, os.path.join(ROOT, "examples", "recipes"))
    import results_markdown

    doc = open(os.path.join(ROOT, "docs", "benchmarks.md"), encoding="utf-8").read()
    for name in TANAKA_BASE_RUNS:
        folder, summary = _tanaka_base_run(name)
        assert summary["scored"] == summary["models"] and summary["size"] == "base", name
        assert f"--max-update {summary['updates']} --warmup-updates {summary['updates'] // 4} " in \
            summary["extra_train_args"] and "--fp16" in summary["extra_train_args"], name
        assert summary["environment"]["commit"].startswith("1f29539") and "1f29539" in doc
        assert results_markdown.table([os.path.join(folder, "results")], summary["models"], ribes=True) in doc


@pytest.mark.parametrize("name", TANAKA_BASE_RUNS)
def test_the_gpu_tanaka_rows_rescore_from_their_translations(name):
    """Every row's BLEU, chrF and RIBES follow from its committed translations and the corpus's references (to
    1e-9: another CPU may give RIBES another 13th digit)."""
    from conftest import require_shared
    from sacrebleu.metrics import BLEU, CHRF

    from fairseq_syntax.evaluation.scores import ribes

    sys.path.insert(0, os.path.join(ROOT, "examples", "recipes"))
    import multiseed_table

    refs = multiseed_table.references("tanaka-ja-en", require_shared("data", "small_parallel_enja"))
    folder, summary = _tanaka_base_run(name)
    for model in summary["models"]:
        scores = json.load(open(os.path.join(folder, "results", f"{model}.json"), encoding="utf-8"))["sets"]["test"]
        with open(os.path.join(folder, "results", "translations", f"{model}.txt"), encoding="utf-8") as f:
            hyps = [line.rstrip("\n") for line in f]
        assert len(hyps) == len(refs) == 500
        assert scores["bleu_signature"].startswith("nrefs:1|case:mixed|eff:no|tok:none|"), model
        got = (BLEU(tokenize="none", force=True).corpus_score(hyps, [refs]).score,
               CHRF().corpus_score(hyps, [refs]).score, ribes(hyps, refs))
        assert got == pytest.approx((scores["bleu"], scores["chrf"], scores["ribes"]), abs=1e-9), model


@pytest.mark.parametrize("case", ["cky_lstm_tiny", "lstm_luong_tiny"])
def test_the_lstm_presets_parity_mode_is_eval_mode_on_the_kernels_training_uses(case):
    """The GPU parity phase takes the LSTM presets' gradients in train mode with every dropout at 0 (cuDNN's RNN
    has no backward in eval mode): on the CPU that computes exactly what eval mode does, loss and gradients, so
    no dropout of theirs is left on; and with dropout on, it would not."""
    import copy

    import torch

    sys.path.insert(0, os.path.join(ROOT, "tests"))
    import golden_numbers

    _, model, criterion, batch = golden_numbers.build(case)

    def loss_and_grads(m):
        m.zero_grad()
        loss = criterion(m, batch)[0]
        loss.backward()
        return loss.item(), {n: p.grad.clone() for n, p in m.named_parameters() if p.grad is not None}

    reference = copy.deepcopy(model).eval()
    loss, grads = loss_and_grads(reference)
    free = device_check.without_dropout(copy.deepcopy(model))
    assert free.training
    loss_free, grads_free = loss_and_grads(free)
    assert loss_free == pytest.approx(loss, rel=1e-6) and grads_free.keys() == grads.keys()
    for n, g in grads.items():
        torch.testing.assert_close(grads_free[n], g, rtol=1e-5, atol=1e-7, msg=n)
    torch.manual_seed(0)
    assert criterion(copy.deepcopy(model).train(), batch)[0].item() != pytest.approx(loss, rel=1e-6)


def _staged_job(**variables):
    """The GPU job examples/gpu/stage.sh prints (its --print: nothing built)."""
    p = run(["env", *[f"{k}={v}" for k, v in variables.items()], "bash",
             os.path.join(ROOT, "examples", "gpu", "stage.sh"), "--print"])
    return json.loads(next(line for line in p.stdout.splitlines() if line.startswith("job: "))[len("job: "):])


def test_the_staged_job_keeps_its_deadline_30_s_inside_the_clusters_limit():
    """TIME_LIMIT_S is the cluster's job limit: the scripts' BUDGET is 30 s below it; under 300 s is refused."""
    call = _staged_job(TIME_LIMIT_S=1800)
    assert call["time_limit_s"] == 1800 and "BUDGET=1770 " in call["command"]
    p = run(["env", "TIME_LIMIT_S=200", "bash", os.path.join(ROOT, "examples", "gpu", "stage.sh"), "--print"],
            check=False)
    assert p.returncode == 1 and "TIME_LIMIT_S=200: the job needs at least 300 s" in p.stderr


@pytest.mark.slow  # about 40 s: eight 2-update trainings through the fork server
def test_the_staged_gpu_job_dry_run_on_the_cpu(tanaka_sample, tmp_path):
    """The command stage.sh prints, run as it is on the CPU (DEVICE=cpu, the recipe's offline sample as TANAKA,
    UPDATES=2, TMPDIR for the work, TIMING_EXTRA for a small timing step: the variables run.sh declares): the
    timing runner writes its JSON, then the eight runs of the stall matrix train side
    by side with their own options, the JSON parses every log, and RESULTS holds what stage.sh says the job
    writes there and nothing else."""
    import tarfile

    call = _staged_job()
    assert call["copy"] == [".carry"] and call["time_limit_s"] == 560 and "BUDGET=530 " in call["command"]
    work = tanaka_sample
    out, tmp = tmp_path / "out", tmp_path / "tmp"
    out.mkdir()
    tmp.mkdir()
    timing = ("--models transformer,transformer_dbsa_enc --blocks tanaka:256 --batches 1 --rounds 1 --warmup 1 "
              "--profile-steps 0 --vocab 200")
    variables = {**forkserver.environment(), "RESULTS": out, "DEVICE": "cpu", "TANAKA": work, "UPDATES": 2, "TMPDIR": tmp,
                 "TIMING_BUDGET": 60, "TIMING_EXTRA": timing}
    p = run(["env", *[f"{k}={v}" for k, v in variables.items()], "bash", "-c", call["command"]], check=False)
    assert p.returncode == 0, (p.stdout + p.stderr)[-3000:]
    report = json.load(open(out / "stall_matrix.json"))
    runs = report["runs"]
    assert list(runs) == list(stall_matrix.RUNS) and report["updates"] == 2
    assert "--max-update 2 --warmup-updates 150 --no-save" in report["common_args"] and "--cpu" in report["common_args"]
    for name, r in runs.items():
        s = r["summary"]
        assert r["exit"] == 0 and s["updates"] == 2 and s["valid_nll"] > 0, name
        assert s["rows"][-1]["update"] == 2 and s["rows"][-1]["nll"] > 0 and s["rows"][-1]["gnorm"] > 0, name
    assert runs["dbsa_enc_fp16_lambda05"]["args"] == "--seed 1 --dependency-lambda-enc 0.5"
    assert runs["dbsa_enc_fp16_warmup275"]["args"] == "--seed 1 --warmup-updates 275"
    assert runs["dbsa_enc_fp32_s2"]["args"] == "--seed 2" and runs["transformer_fp16"]["model"] == "transformer"
    with tarfile.open(out / "stall_matrix_logs.tar.gz") as tar:
        assert {f"logs/{n}.log" for n in runs} <= set(tar.getnames())
    # the parse loss's weight reached the criterion, the seed the model, the warm-up the schedule
    logs = {n: open(tmp / "stall-matrix" / "logs" / f"{n}.log").read() for n in runs}
    assert "dependency_lambda_enc=0.5" in logs["dbsa_enc_fp16_lambda05"]
    assert "warmup_updates=275" in logs["dbsa_enc_fp16_warmup275"] and "warmup_updates=150" in logs["dbsa_enc_bf16"]
    assert "seed=2" in logs["dbsa_enc_fp32_s2"] and "dep_enc_loss" not in logs["transformer_fp16"]
    returned = [os.path.relpath(os.path.join(d, f), out) for d, _, files in os.walk(out) for f in files]
    assert sorted(returned) == ["paired_timing.json", "paired_timing.log", "run.log", "stall_matrix.json",
                                "stall_matrix_logs.tar.gz"], returned
    assert "run.log" in returned and "stall_matrix.py on cpu" in (out / "run.log").read_text()
    timed = json.load(open(out / "paired_timing.json"))  # the speed and memory step ran before, in its own time
    assert timed["setting"]["models"] == ["transformer", "transformer_dbsa_enc"] and "paired_timing.log" in returned


def test_the_stall_matrix_runs_carry_their_precision_and_the_overflow_logging_on_a_gpu():
    """On a GPU each run gets its precision's flag and the fp16 runs fairseq's overflow-by-parameter logging (both
    options: fairseq names parameters only with unflattened gradients); the dry run on a CPU keeps the rest."""
    gpu = {name: stall_matrix.run_args(name) for name in stall_matrix.RUNS}
    assert gpu["dbsa_enc_fp16_s2"] == ["--fp16", "--seed", "2", "--debug-param-names", "--fp16-no-flatten-grads"]
    assert gpu["dbsa_enc_fp32_s1"] == ["--seed", "1"] and gpu["dbsa_enc_bf16"] == ["--bf16", "--seed", "1"]
    assert sum("--fp16" in a for a in gpu.values()) == 5 and all(
        "--debug-param-names" in a for a in gpu.values() if "--fp16" in a)
    assert stall_matrix.run_args("dbsa_enc_fp16_lambda05", cpu=True) == ["--seed", "1", "--dependency-lambda-enc", "0.5"]
    assert stall_matrix.common_args(600, 150, 295).startswith("--max-update 600 --warmup-updates 150 --no-save")
    assert "--log-interval 25 --stop-time-hours 0.08194 --num-workers 2" in stall_matrix.common_args(600, 150, 295)


def test_the_stall_summary_reads_the_stalled_runs_log():
    """summarise on the committed log of the stalled 600-update fp16 run: its NLL at 125, 300 and 600, its loss
    scale halved from 16 to 1 by overflows that never grew back, its first gradient norm; and the parameters
    fairseq names after an overflow note (a CPU fp16 run's lines)."""
    folder, _ = _tanaka_base_run("tanaka_base_600_updates")
    s = stall_matrix.summarise(open(os.path.join(folder, "logs", "dbsa_enc.train.log"), encoding="utf-8").read())
    assert s["nll_at"] == {"125": 7.469, "300": 7.319, "600": 7.606} and s["valid_nll"] == 8.154
    assert s["loss_scales"] == [[25, 16.0], [75, 8.0], [275, 4.0], [350, 2.0], [500, 1.0]]
    assert [o["after_update"] for o in s["overflows"]] == [0, 0, 0, 71, 250, 325, 475] and s["updates"] == 600
    assert s["gnorm_first"] == 11.21 and len(s["rows"]) == 24
    log = "\n".join([
        "2026-11-28 04:37:04 | INFO | train_inner | epoch 001:      2 / 9 loss=17.1, nll_loss=10.2, num_updates=2, "
        "lr=5e-06, gnorm=7.5, loss_scale=128",
        "2026-11-28 04:37:04 | INFO | fairseq.trainer | NOTE: gradient overflow detected, ignoring gradient, "
        "setting loss scale to: 64.0",
        "2026-11-28 04:37:04 | INFO | fairseq.trainer | overflow in param encoder.layers.3.self_attn.parse_head.u1",
        "2026-11-28 04:37:04 | INFO | fairseq.trainer | overflow in param encoder.embed_tokens.weight"])
    s = stall_matrix.summarise(log)
    assert s["overflows"] == [{"after_update": 2, "loss_scale": 64.0, "params": [
        "encoder.layers.3.self_attn.parse_head.u1", "encoder.embed_tokens.weight"]}]
    assert s["overflow_params"] == {"encoder.layers.3.self_attn.parse_head.u1": 1, "encoder.embed_tokens.weight": 1}
