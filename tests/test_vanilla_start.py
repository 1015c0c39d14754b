"""A syntax model started from a vanilla transformer's parameters (fairseq_syntax/models/vanilla_start.py): the
relative position terms start at zero and the model computes the vanilla function (post-norm and pre-norm);
mechanisms that cannot start so start at their own initialisation; a syntax model's own checkpoint loads as
before; a parameter of another shape is one line naming it and both shapes."""
import pytest
import torch

from fairseq_syntax.models.vanilla_start import complete_from_vanilla, mechanism_keys
from helpers import tiny_model


def _batch(d, bsz=3, src_len=7, tgt_len=5, seed=0):
    g = torch.Generator().manual_seed(seed)
    src = torch.randint(d.nspecial, len(d), (bsz, src_len), generator=g)
    src[:, -1] = d.eos()
    prev = torch.randint(d.nspecial, len(d), (bsz, tgt_len), generator=g)
    prev[:, 0] = d.eos()
    depths = torch.randint(0, 4, (bsz, src_len), generator=g)
    return src, torch.full((bsz,), src_len), prev, depths


#: the shapes of fairseq's transformer (post-norm), its pre-norm form, and mBART's (pre-norm, layer norm on the
#: embeddings, learned positions)
SHAPES = {"post-norm": {}, "pre-norm": dict(encoder_normalize_before=True, decoder_normalize_before=True),
          "mbart": dict(encoder_normalize_before=True, decoder_normalize_before=True, layernorm_embedding=True,
                        encoder_learned_pos=True, decoder_learned_pos=True)}


@pytest.mark.parametrize("shape", sorted(SHAPES))
@pytest.mark.parametrize("arch", ["transformer_rel_tiny", "transformer_dep_tiny", "transformer_dep_rel_tiny"])
def test_relative_positions_start_at_zero_and_keep_the_vanilla_function(arch, shape):
    """Shaw's and Omote's key and value terms start at zero: the syntax model's outputs are the vanilla
    transformer's, whatever tree depths it is given (Eq. 17-22 with the terms zero)."""
    norm = SHAPES[shape]
    torch.manual_seed(1)
    vanilla, d = tiny_model("syntax_transformer_tiny", **norm)  # no mechanism: fairseq's own layers
    torch.manual_seed(2)
    model, _ = tiny_model(arch, **norm)
    assert mechanism_keys(model.state_dict()) and not mechanism_keys(vanilla.state_dict())
    model.load_state_dict(vanilla.state_dict())
    assert all((model.state_dict()[k] == 0).all() for k in mechanism_keys(model.state_dict()))
    src, lengths, prev, depths = _batch(d)
    with torch.no_grad():
        expected, _ = vanilla(src, lengths, prev)
        got, _ = model(src, lengths, prev, src_depths=depths)
    assert torch.allclose(got, expected, atol=1e-5), (got - expected).abs().max()


def test_a_parse_head_starts_at_its_own_initialisation():
    """DBSA's parse head replaces a head's output: it cannot start as the vanilla function; it starts where a
    model trained from scratch does, every shared parameter as the checkpoint holds it."""
    vanilla, _ = tiny_model("syntax_transformer_tiny")
    torch.manual_seed(3)
    model, _ = tiny_model("transformer_dbsa_tiny")
    before = {k: v.clone() for k, v in model.state_dict().items()}
    given, started = complete_from_vanilla(model.state_dict(), vanilla.state_dict())
    assert set(started) == set(mechanism_keys(before)) and set(started.values()) == {"its own initialisation"}
    model.load_state_dict(vanilla.state_dict())
    for k, v in model.state_dict().items():
        expected = before[k] if k in started else vanilla.state_dict()[k]
        assert torch.equal(v, expected), k


def test_a_syntax_models_own_checkpoint_loads_as_before():
    """A checkpoint that holds mechanism parameters is the syntax model's: nothing is filled in, and one that
    lacks some of them (another architecture) is refused as before."""
    model, _ = tiny_model("transformer_dep_rel_tiny")
    state = model.state_dict()
    assert complete_from_vanilla(state, state) == (state, {})
    partial = {k: v for k, v in state.items() if "relative.linear" not in k}
    with pytest.raises(RuntimeError, match="Missing key"):
        model.load_state_dict(partial)


def test_a_parameter_of_another_shape_is_named_with_both_shapes():
    from fairseq_syntax.patches.checkpoint_reading import mismatched_checkpoint

    vanilla, _ = tiny_model("syntax_transformer_tiny", encoder_ffn_embed_dim=48, decoder_ffn_embed_dim=48)
    model, _ = tiny_model("transformer_dep_rel_tiny")
    with pytest.raises(RuntimeError) as e:
        model.load_state_dict(vanilla.state_dict())
    message = str(mismatched_checkpoint("vanilla.pt", e.value))
    assert message.startswith("vanilla.pt: its encoder.layers.0.fc1.weight is [48, 32], the model built here has "
                              "[64, 32]"), message
    assert "more of another shape" in message and "\n" not in message


# --- end to end on real text ----------------------------------------------------------------------------------
import os  # noqa: E402
import re  # noqa: E402
import shutil  # noqa: E402

from conftest import require_shared  # noqa: E402
from helpers import USER_DIR, run, tool  # noqa: E402

TINY = ["--encoder-layers", "2", "--decoder-layers", "2", "--encoder-embed-dim", "32", "--decoder-embed-dim", "32",
        "--encoder-ffn-embed-dim", "64", "--decoder-ffn-embed-dim", "64", "--encoder-attention-heads", "2",
        "--decoder-attention-heads", "2", "--share-all-embeddings"]
COMMON = ["--task", "syntax_translation", "--optimizer", "adam", "--criterion", "label_smoothed_cross_entropy",
          "--label-smoothing", "0.1", "--max-tokens", "2000", "--cpu", "--no-epoch-checkpoints", "--num-workers",
          "0", "--seed", "1", "--log-format", "simple"]


@pytest.fixture(scope="module")
def multi30k(tmp_path_factory):
    """A Multi30k En-De slice (300 / 20 / 20 pairs), the English parsed by UDPipe, BPE."""
    raw = require_shared("data", "multi30k", "task1", "raw")
    en = require_shared("models", "en_ewt_udpipe_small.udpipe")
    d = tmp_path_factory.mktemp("vanilla_start")
    (d / "c").mkdir()
    for split, name, n in (("train", "train", 300), ("valid", "val", 20), ("test", "test_2016_flickr", 20)):
        for lang in ("en", "de"):
            with open(os.path.join(raw, f"{name}.{lang}"), encoding="utf-8") as f:
                (d / "c" / f"{split}.{lang}").write_text("".join(next(f) for _ in range(n)), encoding="utf-8")
    run([tool("fairseq-syntax-prepare"), "-s", "en", "-t", "de", "--trainpref", str(d / "c" / "train"),
         "--validpref", str(d / "c" / "valid"), "--testpref", str(d / "c" / "test"), "--destdir", str(d / "bin"),
         "--syntax", "source", "--parser-source", "udpipe", "--parser-model-source", en, "--bpe-merges", "500",
         "--no-progress"])
    return d


def _translations(data, checkpoint):
    out = run([tool("fairseq-generate"), data, "--user-dir", USER_DIR, "--task", "syntax_translation", "--path",
               checkpoint, "--beam", "4", "--batch-size", "20", "--max-len-a", "1", "--max-len-b", "8", "--cpu",
               "--remove-bpe"]).stdout
    return sorted(re.findall(r"^H-(\d+)\t[^\t]*\t(.*)$", out, flags=re.M))


#: the presets whose mechanism parameters all start at zero (vanilla_start.ZERO_PARTS): the vanilla function
FUNCTION_PRESERVING = ["transformer_rel", "transformer_dep", "transformer_dep_rel"]


@pytest.fixture(scope="module", params=[False, pytest.param(True, marks=pytest.mark.slow)],
                ids=["post-norm", "pre-norm"])
def vanilla(multi30k, request):
    """A vanilla transformer (fairseq's own architecture) trained 12 updates: its checkpoint and its norm options."""
    norm = ["--encoder-normalize-before", "--decoder-normalize-before"] if request.param else []
    save = multi30k / f"vanilla_{request.param}"
    run([tool("fairseq-train"), str(multi30k / "bin"), "--user-dir", USER_DIR, "--arch", "transformer", *TINY,
         *norm, *COMMON, "--lr", "2e-3", "--max-update", "12", "--save-dir", str(save)])
    return str(save / "checkpoint_last.pt"), norm


@pytest.mark.parametrize("arch", FUNCTION_PRESERVING)
def test_fine_tuning_a_vanilla_checkpoint_starts_as_it(multi30k, vanilla, tmp_path, arch):
    """fairseq-syntax-train --finetune-from-model from the vanilla checkpoint into each function-preserving
    preset at a learning rate too small to move anything: the same beam translations of the test set as the
    vanilla checkpoint, post-norm and pre-norm."""
    data, (checkpoint, norm) = str(multi30k / "bin"), vanilla
    p = run([tool("fairseq-syntax-train"), data, "--arch", arch, *TINY, *norm, *COMMON, "--lr", "1e-20",
             "--max-update", "1", "--finetune-from-model", checkpoint, "--save-dir", str(tmp_path / arch)])
    started = re.search(r"started from a vanilla checkpoint: (\d+) mechanism parameter\(s\) \([^)]*\) at (\w+)",
                        p.stderr)
    assert started and int(started[1]) > 0 and started[2] == "zero", p.stderr[-2000:]
    expected = _translations(data, checkpoint)
    assert len(expected) == 20 and _translations(data, str(tmp_path / arch / "checkpoint_last.pt")) == expected


def test_a_checkpoint_of_another_dictionary_is_one_line(multi30k, vanilla, tmp_path):
    """The same data with one more word in its dictionary: the embeddings' rows differ, named in one line."""
    from test_failures import assert_one_line

    checkpoint, norm = vanilla
    other = tmp_path / "bin"
    shutil.copytree(multi30k / "bin", other)
    for d in (other / "dict.en.txt", other / "dict.de.txt"):  # the token dictionaries, not the labels'
        d.write_text(d.read_text(encoding="utf-8") + "zzunseen 1\n", encoding="utf-8")
    rows = len((other / "dict.en.txt").read_text(encoding="utf-8").splitlines()) + 4  # fairseq's four specials
    p = run([tool("fairseq-syntax-train"), str(other), "--arch", "transformer_dep_rel", *TINY, *norm, *COMMON,
             "--lr", "1e-4", "--max-update", "1", "--finetune-from-model", checkpoint, "--save-dir",
             str(tmp_path / "dep_rel")], check=False)
    assert_one_line(p, f"{checkpoint}: its encoder.embed_tokens.weight is [{rows - 1}, 32], the model built here "
                       f"has [{rows}, 32]")


def test_a_checkpoint_of_another_size_is_one_line(multi30k, tmp_path):
    from test_failures import assert_one_line

    data = str(multi30k / "bin")
    wide = [x if x != "64" else "96" for x in TINY]
    run([tool("fairseq-train"), data, "--user-dir", USER_DIR, "--arch", "transformer", *wide, *COMMON, "--lr",
         "2e-3", "--max-update", "2", "--save-dir", str(tmp_path / "vanilla")])
    vanilla = str(tmp_path / "vanilla" / "checkpoint_last.pt")
    p = run([tool("fairseq-syntax-train"), data, "--arch", "transformer_dep_rel", *TINY, *COMMON, "--lr", "1e-4",
             "--max-update", "1", "--finetune-from-model", vanilla, "--save-dir", str(tmp_path / "dep_rel")],
            check=False)
    assert_one_line(p, f"{vanilla}: its encoder.layers.0.fc1.weight is [96, 32], the model built here has [64, 32]")
