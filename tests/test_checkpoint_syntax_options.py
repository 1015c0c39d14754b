"""A checkpoint carries its training command's syntax options (the task state): fairseq-interactive and a
model loaded by fairseq's checkpoint_utils adopt them as fairseq-generate does from the saved task config. And
raw lines meet the trained model's conventions whatever the decoding command says: the tree on the side its
tokens are padded, the length limit of the model rather than of the command line."""
import os
import re

import pytest

from helpers import USER_DIR, run, tool, train_cmd

ARCH = ["--arch", "transformer_pascal_tiny", "--max-source-positions", "24", "--max-skipped-fraction", "0.5",
        "--skip-invalid-size-inputs-valid-test"]


@pytest.fixture(scope="module")
def trained(data_bin, tmp_path_factory):
    """transformer_pascal_tiny trained 2 updates with an explicit --parent-strategy first (PASCAL's own is
    middle: training warns and uses first) and a source limit of 24 positions."""
    save = tmp_path_factory.mktemp("ck")
    run(train_cmd(data_bin, str(save), updates=2, arch=ARCH, extra=["--parent-strategy", "first"]))
    return save / "checkpoint_last.pt"


def test_a_loaded_checkpoint_brings_its_parent_strategy(data_bin, trained):
    from fairseq import checkpoint_utils, tasks
    from fairseq.dataclass.utils import convert_namespace_to_omegaconf
    from fairseq.options import get_generation_parser, parse_args_and_arch

    parser = get_generation_parser(interactive=True)
    args = parse_args_and_arch(parser, [data_bin, "--user-dir", USER_DIR, "--task", "syntax_translation",
                                        "--path", str(trained), "--cpu", "-s", "src", "-t", "tgt"])
    cfg = convert_namespace_to_omegaconf(args)
    task = tasks.setup_task(cfg.task)  # as fairseq-interactive: --parent-strategy auto on this command line
    checkpoint_utils.load_model_ensemble([str(trained)], task=task)
    assert task.syntax_request.strategy_of("source") == "first"


def test_the_tree_is_collated_on_the_side_the_tokens_are_padded(data_bin, trained):
    """Token rows given to the hub get their parse collated on the side fairseq padded them: its inference
    dataset pads on the left whatever the checkpoint's left_pad_source says, so a model trained with
    left_pad_source False decodes a batch of rows of different lengths as a model with True does (before,
    the tree was padded on the right, beside the wrong tokens)."""
    from fairseq_syntax.inference.hub import from_pretrained

    conllu = os.path.join(os.path.dirname(data_bin), "raw", "test.src.conllu")
    lines = sorted((line for line in open(os.path.join(data_bin, "work", "test.bpe.src")).read().splitlines()
                    if len(line.split()) < 23), key=lambda line: len(line.split()))  # the model reads 24
    lines = lines[:2] + lines[-2:]  # lengths that differ within one batch
    assert len(lines[0].split()) < len(lines[-1].split())
    outputs = []
    for left_pad in (True, False):
        hub = from_pretrained(os.path.dirname(str(trained)), os.path.basename(str(trained)), data_bin,
                              left_pad_source=left_pad, inference_parser="conllu", inference_parser_model=conllu)
        rows = [hub.task.src_dict.encode_line(line, add_if_not_exist=False).long() for line in lines]
        hyps = hub.generate(rows, beam=2, max_len_b=3)
        outputs.append([(h[0]["tokens"].tolist(), round(float(h[0]["score"]), 5)) for h in hyps])
    assert outputs[0] == outputs[1]


def _interactive(data_bin, checkpoint, lines):
    conllu = os.path.join(os.path.dirname(data_bin), "raw", "test.src.conllu")
    return run([tool("fairseq-interactive"), data_bin, "--user-dir", USER_DIR, "--task", "syntax_translation",
                "--path", str(checkpoint), "--beam", "2", "--cpu", "-s", "src", "-t", "tgt", "--max-len-b", "3",
                "--inference-parser", "conllu", "--inference-parser-model", conllu], input="\n".join(lines) + "\n")


def test_a_line_longer_than_the_model_reads_is_refused_by_its_number(data_bin, trained):
    """The model reads 24 source positions, the command line's limit is fairseq's 1024: a longer line is an
    error naming it and an empty translation, and the session goes on."""
    lines = open(os.path.join(data_bin, "work", "test.tok.src")).read().splitlines()
    short = min(lines, key=len)
    long_line = max(lines, key=len)
    assert len(long_line.split()) > 24
    p = _interactive(data_bin, trained, [short, long_line, short])
    assert re.search(r"error: input line 2: .*\(S-1: an empty translation\)", p.stderr), p.stderr[-2000:]
    assert len(re.findall(r"^H-\d+", p.stdout, flags=re.M)) == 3


def test_an_ensemble_of_checkpoints_trained_with_other_options_is_refused(data_bin, trained, tmp_path):
    """Two checkpoints whose training gave other --parent-strategy: an ensemble reads one, so loading them
    together is refused naming the option (before, the first's was taken for both, as if typed), unless the
    command line gives it."""
    from fairseq import checkpoint_utils, tasks
    from fairseq.dataclass.utils import convert_namespace_to_omegaconf
    from fairseq.options import get_generation_parser, parse_args_and_arch

    from fairseq_syntax.errors import OptionError

    other = tmp_path / "other"
    run(train_cmd(data_bin, str(other), updates=2, arch=ARCH))  # PASCAL's own strategy (middle)
    paths = [str(trained), str(other / "checkpoint_last.pt")]

    def load(*extra):
        parser = get_generation_parser(interactive=True)
        args = parse_args_and_arch(parser, [data_bin, "--user-dir", USER_DIR, "--task", "syntax_translation",
                                            "--path", ":".join(paths), "--cpu", "-s", "src", "-t", "tgt", *extra])
        task = tasks.setup_task(convert_namespace_to_omegaconf(args).task)
        checkpoint_utils.load_model_ensemble(paths, task=task)
        return task

    with pytest.raises(OptionError, match=r"trained with different --parent-strategy \(first and auto\)"):
        load()
    assert load("--parent-strategy", "middle").syntax_request.strategy_of("source") == "middle"


def test_a_checkpoint_read_with_another_data_bins_dictionary_is_refused(data_bin, trained, tmp_path):
    """A data-bin whose dictionary has the training's size but another order (re-prepared on other data, a
    label set in another order) maps every index to another token: fairseq loads the weights without a word and
    decodes garbage. The checkpoint's task state carries a digest of each dictionary: refused, naming the file;
    the data-bin it was trained on loads."""
    import shutil

    from fairseq import checkpoint_utils, tasks
    from fairseq.dataclass.utils import convert_namespace_to_omegaconf
    from fairseq.options import get_generation_parser, parse_args_and_arch

    from fairseq_syntax.errors import SyntaxDataError

    def load(folder):
        args = parse_args_and_arch(get_generation_parser(interactive=True), [
            str(folder), "--user-dir", USER_DIR, "--task", "syntax_translation", "--path", str(trained), "--cpu",
            "-s", "src", "-t", "tgt"])
        task = tasks.setup_task(convert_namespace_to_omegaconf(args).task)
        checkpoint_utils.load_model_ensemble([str(trained)], task=task)

    load(data_bin)
    other = tmp_path / "other"
    shutil.copytree(data_bin, other)
    lines = (other / "dict.tgt.txt").read_text().splitlines(keepends=True)
    lines[0], lines[1] = lines[1], lines[0]  # same size, two tokens swapped
    (other / "dict.tgt.txt").write_text("".join(lines))
    with pytest.raises(SyntaxDataError, match=r"dict\.tgt\.txt: not the dictionary this checkpoint was trained"):
        load(other)
