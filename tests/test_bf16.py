"""bf16 without XLA (fairseq_syntax/patches/precision.py): ``fairseq-syntax-train --bf16`` trains in bf16 on the CPU as on
GPUs (fairseq 0.12 turns --bf16 into --tpu), its checkpoint decodes with fairseq-generate, plain ``fairseq-train
--bf16`` is refused with one line naming the command that works, and PASCAL's x.5 middle parents stay exact
through the trainer's bf16 cast of the batch."""
import math
import os
import re
import types

import numpy as np
import pytest
import torch

from helpers import USER_DIR, generate_cmd, run, tool, train_cmd
from test_dbsa_e2e import DEP

#: PASCAL (middle source parents, an input), decoder DBSA (chain target parents, a loss) and Omote et al.'s
#: dependency + linear relative positions (source depths), in one tiny model
COMBINED = ["--arch", "transformer_pascal_tiny", "--dbsa-decoder-layer", "2", "--rel-dep-l", "2",
            "--rel-linear-k", "2", "--rel-decoder-k", "2"]


def _syntax_train(data_bin, save, *extra):
    cmd = train_cmd(data_bin, save, updates=2, arch=COMBINED, extra=DEP + list(extra))
    return [tool("fairseq-syntax-train")] + cmd[1:]


def test_syntax_train_bf16_trains_in_bf16_on_the_cpu_and_fairseq_generate_reads_it(data_bin, tmp_path):
    save = str(tmp_path / "ck")
    p = run(_syntax_train(data_bin, save, "--bf16"))
    log = p.stdout + p.stderr
    for term in ("loss", "dep_dec_loss"):
        values = re.findall(rf"\b{term}=(\S+?),", log)
        assert len(values) == 2 and all(math.isfinite(float(v)) for v in values), (term, values, log[-3000:])
    ck = os.path.join(save, "checkpoint_last.pt")
    state = torch.load(ck, map_location="cpu", weights_only=False)
    common = state["cfg"]["common"]
    assert common["bf16"] and not common["tpu"], common  # bf16 on, XLA off: the configuration that trained
    assert state["optimizer_history"][-1]["optimizer_name"] == "FP16Optimizer"  # fp32 master weights
    assert state["optimizer_history"][-1]["num_updates"] == 2
    assert all(torch.isfinite(v).all() for v in state["model"].values() if v.is_floating_point())
    g = run(generate_cmd(data_bin, ck, ["--bf16"]))  # no XLA (fairseq 0.12's generate casts only for --fp16)
    assert len(re.findall(r"^H-\d+", g.stdout, flags=re.M)) == 21


@pytest.mark.parametrize("option", ["--bf16", "--memory-efficient-bf16"])
def test_plain_fairseq_train_bf16_is_one_line_naming_the_command_that_works(data_bin, tmp_path, option):
    cmd = train_cmd(data_bin, str(tmp_path / "ck"), updates=1, arch=COMBINED, extra=DEP + [option])
    p = run(cmd, check=False)
    assert p.returncode == 2, (p.stdout[-2000:], p.stderr[-2000:])
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {option}:"), p.stderr
    assert f"fairseq-syntax-train {option} ..." in lines[0]
    assert not os.path.exists(tmp_path / "ck")  # refused before anything ran


def _parse(argv):
    """fairseq's training parse of argv (after the plugin's start-up), as fairseq-train runs it."""
    from fairseq import options

    import fairseq_syntax.plugin  # noqa: F401  (its start-up wraps the parse)

    return options.parse_args_and_arch(options.get_training_parser(), argv)


def test_the_parse_bf16_without_tpu_under_syntax_train_tpu_when_given():
    from fairseq_syntax.errors import OptionError
    from fairseq_syntax.patches.precision import bf16_without_xla

    base = ["data-bin", "--user-dir", USER_DIR, "--task", "syntax_translation", "--arch", "transformer_pascal_tiny"]
    with bf16_without_xla():
        for option in ("--bf16", "--memory-efficient-bf16"):
            args = _parse(base + [option])
            assert (args.bf16, args.tpu, args.fp16) == (True, False, False), option
        args = _parse(base + ["--bf16", "--tpu"])  # asked for: fairseq's XLA
        assert (args.bf16, args.tpu) == (True, True)
        with pytest.raises(OptionError, match="--fp16 and --bf16 ask for two precisions"):
            _parse(base + ["--bf16", "--fp16"])
    args = _parse(base + ["--bf16", "--tpu"])  # fairseq-train with --tpu: fairseq's own meaning
    assert (args.bf16, args.tpu) == (True, True)
    with pytest.raises(OptionError, match="fairseq-syntax-train --bf16"):
        _parse(base + ["--bf16"])
    assert _parse(base).tpu is False


def test_middle_parents_above_128_survive_the_bf16_batch_cast_exactly():
    """A 300-subword sentence (150 words of 2 subwords, each headed by the next): its middle parents are x.5 up to
    298.5, which bf16 cannot hold beyond 127.5. After the trainer's own bf16 cast of the batch they are exact,
    and so are PASCAL's weights computed from them; cast to the scores' bf16 they are fp32's weights rounded."""
    from fairseq.data import Dictionary, LanguagePairDataset
    from fairseq.trainer import Trainer

    from fairseq_syntax.data.alignment.parent_strategies import subword_parents
    from fairseq_syntax.data.datasets.syntax_dataset import SideSyntax, SyntaxLanguagePairDataset, SyntaxRequest
    from fairseq_syntax.modules.parent_scaled_attention import ParentScaledHeads
    from helpers import TensorList

    n_words = 150
    words = np.repeat(np.arange(1, n_words + 1), 2)
    heads = np.where(words < n_words, words + 1, 0)  # word k's head is word k + 1; the last word is the root
    d = Dictionary()
    toks = [d.add_symbol(f"t{i % 50}") for i in range(len(words))] + [d.eos()]
    base = LanguagePairDataset(TensorList([toks]), np.array([len(toks)]), d, left_pad_source=True)
    req = SyntaxRequest(strategy="middle", source=frozenset({"parents"}), inputs=frozenset({"src_parents"}))
    ds = SyntaxLanguagePairDataset(base, req, SideSyntax(TensorList([words]), TensorList([heads]), name="src"))
    batch = ds.collater([ds[0]])
    trainer = types.SimpleNamespace(cfg=types.SimpleNamespace(common=types.SimpleNamespace(fp16=False, bf16=True)))
    prepared = Trainer._fp_convert_sample(trainer, batch)  # what fairseq's trainer does to a batch with --bf16

    parents = prepared["net_input"]["src_parents"][0]
    want = np.append(subword_parents(words, heads, "middle"), len(words))  # EOS is its own parent
    assert (want[:-1] % 1 == 0.5).all() and want[:-1].max() == 298.5 and (want > 128).sum() > 150
    assert parents.tolist() == want.tolist()  # exact: 128.5, 130.5, ..., 298.5 included
    assert parents.float().bfloat16().tolist() != want.tolist()  # what a bf16 cast of them would have made

    heads_ = ParentScaledHeads(2).eval()
    weights = heads_.weights(parents.unsqueeze(0), len(want))
    exact = heads_.weights(torch.tensor(want, dtype=torch.float32).unsqueeze(0), len(want))
    assert torch.equal(weights, exact)
    scores = torch.ones(1, 2, len(want), len(want), dtype=torch.bfloat16)
    scaled = heads_.scale(scores, weights)
    assert scaled.dtype == torch.bfloat16
    # bf16's rounding: 2^-8 relative, and its subnormals (below its smallest normal number) absolute
    torch.testing.assert_close(scaled[0, 0].float(), exact[0], rtol=2 ** -8, atol=torch.finfo(torch.bfloat16).tiny)
    # from rounded parents, the rows above 128 would weigh the wrong tokens: far beyond bf16's rounding
    rounded = heads_.weights(parents.float().bfloat16().unsqueeze(0), len(want))
    assert (rounded - exact).abs().max() > 0.05
