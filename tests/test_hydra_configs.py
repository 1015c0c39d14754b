"""fairseq's conventions: a hydra config per named architecture (fairseq-hydra-train), every loss term in
TensorBoard (--tensorboard-logdir), and no console script printing fairseq's "Please install tensorboardX"."""
import argparse
import glob
import os
import re
import struct
import subprocess

import pytest

import forkserver
from helpers import BIN, ROOT, USER_DIR, env, run

CONFIG_DIR = os.path.join(USER_DIR, "config")
#: the presets the papers' recipes train (the registry may hold more: every one must have a config)
PAPER_PRESETS = {
    "transformer_dbsa", "transformer_dbsa_enc", "transformer_dbsa_dec", "transformer_sisa", "transformer_rel",
    "transformer_dep", "transformer_dep_rel", "transformer_pascal", "transformer_sh", "transformer_syncattn",
    "lstm_luong", "cky_lstm", "transformer_dbsa_tiny", "transformer_sisa_tiny", "transformer_rel_tiny",
    "transformer_dep_tiny", "transformer_dep_rel_tiny", "transformer_pascal_tiny", "transformer_sh_tiny",
    "transformer_syncattn_tiny", "lstm_luong_tiny", "cky_lstm_tiny",
}


def _presets():
    from fairseq_syntax.models.presets import PRESETS, architectures

    return [(arch, PRESETS[name].model) for arch, name, _ in architectures()]


def test_every_preset_has_a_config_with_the_papers_criterion():
    from omegaconf import OmegaConf

    archs = dict(_presets())
    assert PAPER_PRESETS <= set(archs)
    read = {"source": set(), "target": set()}
    assert sorted(os.listdir(CONFIG_DIR)) == sorted(f"{a}.yaml" for a in archs)
    for arch, model in archs.items():
        cfg = OmegaConf.load(os.path.join(CONFIG_DIR, f"{arch}.yaml"))
        m, crit = cfg.model, cfg.criterion
        if model == "syntax_transformer":  # the mechanisms' options at their defaults are not written
            m = OmegaConf.merge(_mechanism_defaults(), m)
        assert m._name == arch
        assert OmegaConf.is_missing(cfg.task, "data")
        assert cfg.common.user_dir == "fairseq_syntax"
        if model == "attention_lstm":
            assert cfg.task._name == "translation" and crit._name == "cross_entropy"
            assert m.cky == ("cky" in arch) and m.embed_dim == (32 if arch.endswith("_tiny") else 256)
            assert cfg.optimization.clip_norm == 3.0 and cfg.lr_scheduler._name == "fixed"
            continue
        assert cfg.task._name == "syntax_translation"
        heads = bool(m.dbsa_encoder_layer) + bool(m.dbsa_decoder_layer)
        if m.sync_layer:
            assert crit._name == "label_smoothed_cross_entropy_with_sync"
            assert (crit.dependency_lambda_enc, crit.dependency_lambda_dec, crit.sync_lambda) == (0.5, 0.5, 0.5)
        elif heads:
            assert crit._name == "label_smoothed_cross_entropy_with_dependency"
            # the self-parsing dep+rel trains its head with DBSA's kept try's weight (0.5), the papers' DBSA 1.0
            assert crit.dependency_lambda_enc == (0.5 if m.self_parse else 1.0), arch
            assert crit.dependency_normalization == "arcs"
        else:
            assert crit._name == "label_smoothed_cross_entropy"
        assert crit.label_smoothing == 0.1 and cfg.optimizer._name == "adam"
        assert cfg.lr_scheduler._name == "inverse_sqrt"
        # the syntax fields the task must collate: what the model this config builds declares it reads
        needs = _syntax_needs(m)
        for side, fields in (("source", cfg.task.source_syntax), ("target", cfg.task.target_syntax)):
            assert fields == (",".join(sorted(getattr(needs, side))) or "none"), (arch, side, needs)
            read[side] |= getattr(needs, side)
    # the configs hold at least every field the papers' mechanisms read (DBSA and PASCAL parents, depths, S&H
    # labels); a new mechanism may read others (each config is held to its own model's needs above)
    assert read["source"] >= {"parents", "depths", "labels"} and read["target"] >= {"parents"}, read


def _mechanism_defaults() -> dict:
    from fairseq_syntax.models.syntax_transformer_config import SyntaxTransformerConfig

    return {f.name: getattr(f.default, "value", f.default) for f in SyntaxTransformerConfig.__dataclass_fields__.values()
            if not f.name.startswith("_")}


def _syntax_needs(model_cfg):
    """``syntax_needs()`` of the model a config's ``model`` section builds (as fairseq-hydra-train builds it),
    at small widths: what a model reads depends on its syntax options, not on its sizes."""
    from fairseq import models
    from fairseq.data import Dictionary
    from omegaconf import OmegaConf

    d = Dictionary()
    for i in range(8):
        d.add_symbol(f"w{i}")
    cfg = OmegaConf.create(OmegaConf.to_container(model_cfg))
    for side in ("encoder", "decoder"):
        width = 8 * cfg[f"{side}_attention_heads"] + 16  # above the label embedding's 10 dimensions
        cfg[f"{side}_embed_dim"], cfg[f"{side}_ffn_embed_dim"] = width, 8
    cfg.decoder_input_dim = cfg.decoder_output_dim = cfg.decoder_embed_dim
    task = argparse.Namespace(source_dictionary=d, target_dictionary=d, src_label_dict=d)
    return models.build_model(cfg, task).syntax_needs()


@pytest.mark.slow  # 52 fairseq option parses through hydra in all, 13 a part
@pytest.mark.parametrize("part", range(4))
def test_configs_are_what_the_generator_writes(part):
    """One source of truth: the configs are the preset table's models with their recipes' training settings
    (a quarter of the table each, so that the parts run on several workers)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("hydra_configs", os.path.join(ROOT, "examples", "recipes",
                                                                                "hydra_configs.py"))
    generator = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(generator)
    problems = generator.check(CONFIG_DIR, generator.architectures()[part::4])
    assert not problems, "run `python examples/recipes/hydra_configs.py`:\n" + "\n".join(problems)


def test_config_builds_the_model_fairseq_train_builds():
    """The model a config's ``model`` section builds (as fairseq-hydra-train does: dataclass defaults merged
    first, then the architecture function on the DictConfig) is the one ``fairseq-train --arch`` builds."""
    from fairseq import models, options
    from fairseq.data import Dictionary
    from fairseq.dataclass.utils import convert_namespace_to_omegaconf, merge_with_parent
    from omegaconf import OmegaConf

    d = Dictionary()
    for i in range(20):
        d.add_symbol(f"w{i}")
    task = argparse.Namespace(source_dictionary=d, target_dictionary=d, src_label_dict=d)
    checked = 0
    for arch, model in _presets():
        if not (arch.endswith("_tiny") or model == "attention_lstm"):
            continue
        cfg = OmegaConf.load(os.path.join(CONFIG_DIR, f"{arch}.yaml")).model
        dc = models.MODEL_DATACLASS_REGISTRY.get(model)
        if dc is not None:
            cfg = merge_with_parent(dc(), cfg)
        from_config = models.build_model(cfg, task)
        argv = ["DATA", "--task", "translation", "--arch", arch]
        if model == "syntax_transformer":
            argv.append("--share-all-embeddings")
        args = options.parse_args_and_arch(options.get_training_parser(), argv)
        from_argv = models.build_model(convert_namespace_to_omegaconf(args).model, task)
        assert str(from_config) == str(from_argv), arch
        shapes = [{k: tuple(v.shape) for k, v in m.state_dict().items()} for m in (from_config, from_argv)]
        assert shapes[0] == shapes[1], arch
        checked += 1
    assert checked >= 10


def _train_inner(log: str):
    """{num_updates: {key: value}} of the train_inner lines of a simple-format log."""
    out = {}
    for line in log.splitlines():
        if "train_inner" in line and "num_updates=" in line:
            kv = dict(x.split("=", 1) for x in re.findall(r"(\w+=[^,\s]+)", line.split(" - ", 1)[-1]))
            out[int(kv["num_updates"])] = kv
    return out


@pytest.mark.slow  # 7 s
def test_fairseq_hydra_train_from_a_config(data_bin, tmp_path):
    """Plain fairseq-hydra-train (no wrapper) trains transformer_dbsa_tiny from its config: 2 updates on CPU,
    the parse-head losses logged, a checkpoint with the parse heads written."""
    save = tmp_path / "ckpt"
    p = run([forkserver.command("fairseq-hydra-train"), "--config-dir", CONFIG_DIR, "--config-name",
             "transformer_dbsa_tiny", f"task.data={data_bin}", f"common.user_dir={USER_DIR}",
             f"checkpoint.save_dir={save}", "checkpoint.no_epoch_checkpoints=true", "common.cpu=true",
             "common.log_interval=1", "common.seed=3", "optimization.max_update=2", "dataset.batch_size=16",
             "dataset.num_workers=0", "hydra.output_subdir=null"],
            cwd=str(tmp_path), extra_env=forkserver.environment())  # its own process, forked
    log = p.stdout + p.stderr
    inner = _train_inner(log)
    assert sorted(inner) == [1, 2], log[-3000:]
    for kv in inner.values():
        assert float(kv["dep_enc_loss"]) > 0 and float(kv["dep_dec_loss"]) > 0
    assert "criterion: LabelSmoothedCrossEntropyWithDependencyCriterion" in log
    assert (save / "checkpoint_last.pt").exists() and (save / "checkpoint_best.pt").exists()

    import torch

    import fairseq_syntax.plugin  # noqa: F401  (allow-lists the checkpoint's globals)

    state = torch.load(save / "checkpoint_last.pt", map_location="cpu")
    assert state["cfg"]["model"]["_name"] == "transformer_dbsa_tiny"
    assert state["cfg"]["model"]["dbsa_encoder_layer"] == 2 and state["cfg"]["model"]["dbsa_decoder_layer"] == 2
    heads = {k.split(".self_attn.")[0] for k in state["model"] if ".parse_head." in k}
    assert heads == {"encoder.layers.1", "decoder.layers.1"}, sorted(state["model"])


def _events(path):
    """{tag: [(step, value)]} of one TensorBoard event file (TFRecord: length, crc, Event proto, crc)."""
    from tensorboardX.proto import event_pb2

    data = open(path, "rb").read()
    tags, i = {}, 0
    while i < len(data):
        (n,) = struct.unpack("<Q", data[i:i + 8])
        ev = event_pb2.Event()
        ev.ParseFromString(data[i + 12:i + 12 + n])
        i += 12 + n + 4
        for v in ev.summary.value:
            tags.setdefault(v.tag, []).append((ev.step, v.simple_value))
    return tags


@pytest.mark.slow  # 5 s
def test_tensorboard_logs_every_loss_term(data_bin, tmp_path):
    """--tensorboard-logdir: each loss term of the SyncAttn criterion (dep_enc_loss, dep_dec_loss, sync_loss)
    is written for every update, for the epoch and for validation, with the values of the text log."""
    tb = tmp_path / "tb"
    p = run([forkserver.command("fairseq-train"), data_bin, "--user-dir", USER_DIR, "--task", "syntax_translation",
             "--arch", "transformer_syncattn_tiny", "--criterion", "label_smoothed_cross_entropy_with_sync",
             "--label-smoothing", "0.1", "--optimizer", "adam", "--lr", "1e-3", "--max-tokens", "1000",
             "--max-update", "3", "--cpu", "--no-save", "--log-format", "simple", "--log-interval", "1",
             "--num-workers", "0", "--seed", "3", "--tensorboard-logdir", str(tb)],
            cwd=str(tmp_path), extra_env=forkserver.environment())  # a process of its own (forked): fairseq
    # closes (flushes) its TensorBoard writers at exit; in tmp_path: fairseq-train makes ./checkpoints with --no-save
    inner = _train_inner(p.stdout + p.stderr)
    assert sorted(inner) == [1, 2, 3]
    terms = ("loss", "nll_loss", "dep_enc_loss", "dep_dec_loss", "sync_loss")
    for split in ("train_inner", "train", "valid"):
        files = glob.glob(str(tb / split / "events.out.tfevents.*"))
        assert len(files) == 1, (split, os.listdir(tb))
        tags = _events(files[0])
        for term in terms:
            assert term in tags, (split, sorted(tags))
        if split == "train_inner":
            for term in terms:
                assert [s for s, _ in tags[term]] == [1, 2, 3]
                for step, value in tags[term]:
                    assert abs(value - float(inner[step][term])) <= 1e-3 * max(1.0, abs(value)), (term, step)
        else:
            assert [s for s, _ in tags["sync_loss"]] == [3]


def _console_scripts():
    root = os.path.dirname(USER_DIR)
    with open(os.path.join(root, "setup.py")) as f:
        return re.findall(r'"(fairseq-syntax-[a-z-]+)=', f.read())


def test_no_console_script_prints_the_tensorboardX_hint():
    """fairseq logs "Please install tensorboardX" when it imports its tasks (fairseq.tasks.text_to_speech)
    in an interpreter without tensorboardX. The data tools run here one by one (they start without fairseq).
    The model tools all import fairseq's tasks in the same way; fairseq-syntax-train's and fairseq-train's cold
    starts stand for them (test_cli_startup.py, test_training_registers_the_plugin_and_logs_as_fairseq_train_does,
    which checks this line too)."""
    data_tools = {f"fairseq-syntax-{t}" for t in ("parse", "align", "binarize", "prepare", "synth", "multitask",
                                                   "evaluate", "detokenize")}
    names = _console_scripts()
    assert "fairseq-syntax-train" in names and len(names) >= 10
    cmds = [[os.path.join(BIN, n), "--help"] for n in names if n in data_tools]
    assert len(cmds) >= 5
    procs = [subprocess.Popen(c, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              env=env())  # fresh interpreters: what a user starts
             for c in cmds]
    for cmd, proc in zip(cmds, procs):
        out, _ = proc.communicate(timeout=300)
        assert proc.returncode == 0, (cmd, out[-2000:])
        assert "usage:" in out, cmd
        assert "tensorboardX" not in out, (cmd, [x for x in out.splitlines() if "tensorboard" in x])
