"""Raw text as a new user gives it (the hub interface, fairseq-interactive, a packed folder): the packed folder's
own interactive command runs, importing the hub leaves the program's logging alone, a bad sentence raises
(or is blanked with on_error="blank"), nbest gives n translations, a missing data path and --batch-size
without --buffer-size are one line, input mostly outside the vocabulary is warned about, interactive's errors
name fairseq's S- id, a line separator inside a line is refused, and --constraints are segmented as the target
side was."""
import logging
import os
import re
import shlex
import subprocess
import sys

import pytest

from helpers import ROOT, USER_DIR, env, run, tool
from test_failures import assert_one_line, checkpoint  # noqa: F401  (module fixture)


@pytest.fixture(scope="module")
def hub(data_bin, checkpoint):  # noqa: F811
    from fairseq_syntax.inference.hub import from_pretrained

    return from_pretrained(os.path.dirname(str(checkpoint)), os.path.basename(str(checkpoint)), data_bin)


def _sentences(data_bin, n):
    from fairseq.data import Dictionary

    d = Dictionary.load(os.path.join(data_bin, "dict.src.txt"))
    words = [w for w in d.symbols[d.nspecial:] if not w.endswith("@@")][:12]
    return [" ".join(words[k:k + 4]) for k in range(n)]


def test_the_packed_folders_interactive_command_runs(data_bin, checkpoint, tmp_path):  # noqa: F811
    folder = tmp_path / "packed"
    run([tool("fairseq-syntax-pack"), data_bin, str(checkpoint), "-o", str(folder)])
    readme = (folder / "README.md").read_text()
    command = re.search(r"^(fairseq-interactive .*?)< raw\.txt$", readme, flags=re.M | re.S).group(1)
    command = command.replace("\\\n", " ").replace("THIS_FOLDER", str(folder))
    command = re.sub(r'"\$\(python -c .*?\)"', USER_DIR, command)
    argv = shlex.split(command)
    assert argv[:2] == ["fairseq-interactive", str(folder)] and "-s" in argv and "-t" in argv
    p = run([tool(argv[0]), *argv[1:], "--cpu", "--max-len-b", "5"], input="\n".join(_sentences(data_bin, 2)) + "\n")
    assert len(re.findall(r"^D-\d+\t", p.stdout, flags=re.M)) == 2, p.stderr[-2000:]


def test_importing_the_hub_leaves_the_programs_logging_alone(data_bin, checkpoint):  # noqa: F811
    code = ("import logging\nimport fairseq_syntax.inference.hub as h\nroot = logging.getLogger()\n"
            "print(root.level, len(root.handlers))\n"
            f"m = h.from_pretrained({os.path.dirname(str(checkpoint))!r}, {os.path.basename(str(checkpoint))!r}, "
            f"{data_bin!r})\nprint(repr(m.translate('a b', max_len_b=3)) != '')\n")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env(), cwd=ROOT)
    assert p.stdout.split("\n")[:2] == [f"{logging.WARNING} 0", "True"], p.stderr[-2000:]
    assert "INFO" not in p.stderr and "DEBUG" not in p.stderr, p.stderr[-2000:]


def test_a_bad_sentence_raises_or_is_blanked(hub, data_bin):
    from fairseq_syntax.errors import InputLineError

    good = _sentences(data_bin, 1)[0]
    with pytest.raises(InputLineError, match=r"input line 2: holds a line separator \(U\+2028\)"):
        hub.translate([good, "a\u2028b"], max_len_b=3)
    out = hub.translate([good, "a\u2028b", good], on_error="blank", max_len_b=3)
    assert len(out) == 3 and out[1] == "" and out[0] == out[2]
    assert [e.line for e in hub.errors] == [2]
    with pytest.raises(ValueError, match="on_error"):
        hub.translate(good, on_error="skip")


def test_nbest_gives_n_translations(hub, data_bin):
    one, two = _sentences(data_bin, 2)
    out = hub.translate([one, two], beam=4, nbest=2, max_len_b=3)
    assert len(out) == 2 and all(isinstance(x, list) and len(x) == 2 for x in out)
    assert out[0][0] == hub.translate(one, beam=4, max_len_b=3)
    assert isinstance(hub.translate(one, nbest=3, max_len_b=3), list)


def test_a_folder_without_the_data_and_batch_size_without_buffer_size(data_bin, checkpoint, tmp_path):  # noqa: F811
    from fairseq_syntax.errors import SyntaxDataError
    from fairseq_syntax.inference.hub import from_pretrained

    with pytest.raises(SyntaxDataError, match="no dictionaries"):
        from_pretrained(os.path.dirname(str(checkpoint)), os.path.basename(str(checkpoint)))
    p = run([tool("fairseq-interactive"), data_bin, "--user-dir", USER_DIR, "--task", "syntax_translation", "--path",
             str(checkpoint), "--cpu", "--batch-size", "8", "-s", "src", "-t", "tgt"], input="a b\n", check=False)
    assert_one_line(p, "--batch-size is larger than --buffer-size", "--buffer-size")


def test_input_mostly_outside_the_vocabulary_is_warned_about(hub, caplog):
    with caplog.at_level(logging.WARNING):
        hub.translate("ЖЖЖ ЩЩЩ ЮЮЮ", max_len_b=3)
    assert any(re.match(r"input line 1: (\d+) of \1 tokens are outside the model's vocabulary", r.getMessage())
               for r in caplog.records), [r.getMessage() for r in caplog.records]


def test_interactive_names_the_s_id_and_refuses_separators(data_bin, checkpoint):  # noqa: F811
    lines = _sentences(data_bin, 3)
    lines[1] = lines[1].replace(" ", "\u2028", 1)
    p = run([tool("fairseq-interactive"), data_bin, "--user-dir", USER_DIR, "--task", "syntax_translation", "--path",
             str(checkpoint), "--cpu", "--max-len-b", "3", "-s", "src", "-t", "tgt"], input="\n".join(lines) + "\n")
    assert "error: input line 2: holds a line separator (U+2028)" in p.stderr
    assert "(S-1: an empty translation)" in p.stderr
    assert re.search(r"^D-1\t[^\t]*\t$", p.stdout, flags=re.M)


def _split_target_word(data_bin):
    """A target-language word the data-bin's target BPE splits into subwords of its dictionary, and those."""
    from fairseq.data import Dictionary
    from subword_nmt.apply_bpe import BPE

    from fairseq_syntax.preparation.databin_record import PreparationRecord

    codes = PreparationRecord.load(data_bin).bpe_codes("tgt", data_bin)
    with open(codes, encoding="utf-8") as f:
        bpe = BPE(f)
    d = Dictionary.load(os.path.join(data_bin, "dict.tgt.txt"))
    pieces = [w for w in d.symbols[d.nspecial:] if w.endswith("@@")]
    ends = [w for w in d.symbols[d.nspecial:] if not w.endswith("@@")]
    for a in pieces:
        for b in ends:
            word = a[:-2] + b
            segmented = bpe.process_line(word)
            if " " in segmented and all(d.index(p) != d.unk() for p in segmented.split()):
                return word, segmented
    raise AssertionError("no target word the BPE splits")


def test_interactive_constraints_are_segmented_as_the_target_side(data_bin, checkpoint):  # noqa: F811
    """fairseq-interactive's --constraints on raw text: a constraint is target-language text, made into the
    subwords the target side was trained on (it was looked up whole: a word the BPE splits became <unk>, and the
    decoder was made to write <unk>)."""
    word, segmented = _split_target_word(data_bin)
    source = _sentences(data_bin, 1)[0]
    p = run([tool("fairseq-interactive"), data_bin, "--user-dir", USER_DIR, "--task", "syntax_translation", "--path",
             str(checkpoint), "--cpu", "--max-len-b", "10", "--beam", "2", "--constraints", "-s", "src", "-t", "tgt"],
            input=f"{source}\t{word}\n")
    assert re.search(r"^C-0\t(.*)$", p.stdout, flags=re.M).group(1) == segmented, p.stdout
    hypothesis = re.search(r"^H-0\t[^\t]*\t(.*)$", p.stdout, flags=re.M).group(1)
    assert "<unk>" not in hypothesis and segmented in hypothesis, p.stdout
    # fairseq's constraints are subword sequences (they may follow a subword of another word: no word boundary)
    assert word in re.search(r"^D-0\t[^\t]*\t(.*)$", p.stdout, flags=re.M).group(1), p.stdout


def test_codes_replaced_after_training_are_refused_at_raw_input(data_bin, checkpoint, tmp_path):  # noqa: F811
    """The checkpoint records the SHA-256 of the BPE codes in the data-bin's preparation record it was trained
    with. Codes replaced since (a copy of the data-bin with other codes beside the same dictionary) segmented raw
    input otherwise than the training text, exit 0; they are refused, naming the file, before any line is
    encoded. The same data-bin with its own codes decodes."""
    import shutil

    import torch

    from fairseq_syntax.errors import SyntaxDataError
    from fairseq_syntax.inference.hub import from_pretrained

    state = torch.load(str(checkpoint), map_location="cpu", weights_only=True)["task_state"]
    codes = os.path.join(data_bin, "bpe.codes")
    from fairseq_syntax.durable_files import file_sha256

    assert set(state["fairseq_syntax_bpe_codes"].values()) == {file_sha256(codes)}
    other = tmp_path / "bin"
    shutil.copytree(data_bin, other)
    lines = (other / "bpe.codes").read_text(encoding="utf-8").splitlines(keepends=True)
    (other / "bpe.codes").write_text("".join(lines[: len(lines) // 2]), encoding="utf-8")  # fewer merges
    p = run([tool("fairseq-syntax-pack"), str(other), str(checkpoint), "-o", str(tmp_path / "packed")], check=False)
    assert p.returncode != 0 and "not the BPE codes of 'src' the model was trained with" in p.stderr, p.stderr[-2000:]
    assert not (tmp_path / "packed").exists()  # refused before anything is written
    model = from_pretrained(os.path.dirname(str(checkpoint)), os.path.basename(str(checkpoint)), str(other))
    with pytest.raises(SyntaxDataError, match=r"bpe\.codes: not the BPE codes of 'src' the model was trained with"):
        model.translate(_sentences(data_bin, 1)[0], max_len_b=3)
    assert from_pretrained(os.path.dirname(str(checkpoint)), os.path.basename(str(checkpoint)),
                           data_bin).translate(_sentences(data_bin, 1)[0], max_len_b=3) is not None
