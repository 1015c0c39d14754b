"""Translating raw text, the parse inside: prepare records how the data-bin was made; a tiny dep_rel model
trained on the real Multi30k slice (UDPipe on both sides) is packed, loaded from the packed folder in a fresh
process and translates raw, untokenised English sentences exactly as fairseq-generate translates the same
sentences prepared by prepare; fairseq-interactive on raw text; bad input. Skipped without the shared data or
ufal.udpipe."""
import json
import os
import subprocess
import sys

import pytest

from helpers import USER_DIR, env, run, tool

N_TRAIN, N_TEST = 300, 12
#: updates of each model: dep_rel's translations must differ from sentence to sentence; the others' need only be
#: translations (and trees) that the two decoding paths must agree on
UPDATES = {"dep_rel": 40, "dbsa": 10, "cky_lstm": 10}
# a length limit that does not depend on the batch (fairseq's max_len_a scales the longest source of the batch)
GENERATION = {"beam": 4, "lenpen": 0.6, "max_len_a": 0, "max_len_b": 40}

pytestmark = pytest.mark.slow  # its module fixture trains on the real Multi30k slice (~45 s)


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """(data-bin, dep_rel checkpoint, raw test English, DBSA checkpoint) on the Multi30k slice."""
    pytest.importorskip("ufal.udpipe")
    from conftest import require_shared

    raw = require_shared("data", "multi30k", "task1", "raw")
    models = {lang: require_shared("models", name) for lang, name in (("en", "en_ewt_udpipe_small.udpipe"),
                                                                      ("de", "de_udpipe_small.udpipe"))}
    d = tmp_path_factory.mktemp("raw_text")
    for split, name, first, n in (("train", "train", 0, N_TRAIN), ("valid", "val", 0, 20),
                                  ("test", "test_2016_flickr", 0, N_TEST)):
        for lang in ("en", "de"):
            lines = open(os.path.join(raw, f"{name}.{lang}"), encoding="utf-8").read().splitlines()[first:first + n]
            (d / f"{split}.{lang}").write_text("\n".join(lines) + "\n", encoding="utf-8")
    data = str(d / "data-bin")
    run([tool("fairseq-syntax-prepare"), "-s", "en", "-t", "de", "--trainpref", str(d / "train"), "--validpref",
         str(d / "valid"), "--testpref", str(d / "test"), "--destdir", data, "--bpe-merges", "500",
         "--parser", "udpipe", "--parser-model-source", models["en"], "--parser-model-target", models["de"],
         "--normalize-source", "moses", "--normalize-target", "moses", "--no-progress"])
    checkpoints = {}
    for name, arch, criterion in (("dep_rel", "transformer_dep_rel_tiny", "label_smoothed_cross_entropy"),
                                  ("dbsa", "transformer_dbsa_tiny", "label_smoothed_cross_entropy_with_dependency"),
                                  ("cky_lstm", "cky_lstm_tiny", "label_smoothed_cross_entropy")):
        save = str(d / f"ck_{name}")
        share = [] if name == "cky_lstm" else ["--share-all-embeddings"]
        run([tool("fairseq-train"), data, "--user-dir", USER_DIR, "--task", "syntax_translation", "--arch", arch,
             *share, "--criterion", criterion, "--label-smoothing", "0.1", "--optimizer", "adam",
             "--lr", "2e-3", "--max-tokens", "2000", "--max-update", str(UPDATES[name]), "--cpu", "--save-dir", save,
             "--no-epoch-checkpoints", "--disable-validation", "--num-workers", "0", "--seed", "1"])
        checkpoints[name] = os.path.join(save, "checkpoint_last.pt")
    test_en = (d / "test.en").read_text(encoding="utf-8").splitlines()
    return data, checkpoints, test_en, d


def generated(data, checkpoint, out):
    """fairseq-generate on the prepared test split, detokenised as the recipes score it."""
    from fairseq_syntax.evaluation.detokenize import detokenize

    p = run([tool("fairseq-generate"), data, "--user-dir", USER_DIR, "--task", "syntax_translation", "--path",
             checkpoint, "--beam", "4", "--lenpen", "0.6", "--max-len-a", "0", "--max-len-b", "40", "--remove-bpe",
             "--batch-size", "5", "--cpu"])
    hyps = sorted((int(line.split("\t")[0][2:]), line.split("\t")[2]) for line in p.stdout.splitlines()
                  if line.startswith("H-"))
    return list(detokenize([h for _, h in hyps], "de"))


def test_the_data_bin_records_how_it_was_made(trained):
    data, _, _, _ = trained
    from fairseq_syntax.preparation.databin_record import PreparationRecord

    record = PreparationRecord.load(data)
    en = record.languages["en"]
    assert en.tokenizer == "parser" and en.normalize == "moses" and en.parser["backend"] == "udpipe"
    assert en.parser["options"]["model_path"].endswith("en_ewt_udpipe_small.udpipe")
    assert record.bpe == {"en": "bpe.codes", "de": "bpe.codes"} and os.path.exists(os.path.join(data, "bpe.codes"))


def test_packed_model_translates_raw_text_as_generate_does(trained, tmp_path):
    """pack -> a fresh interpreter loads the folder and translates the raw test sentences (Moses normalisation,
    UDPipe tokens and parse, BPE, depths inside); the output equals fairseq-generate's on the same sentences
    prepared by prepare, detokenised as the recipes do."""
    data, checkpoints, test_en, _ = trained
    folder = tmp_path / "model"
    p = run([tool("fairseq-syntax-pack"), data, checkpoints["dep_rel"], "-o", str(folder)])
    assert "parser en: udpipe parsers/en_ewt_udpipe_small.udpipe" in p.stdout
    assert sorted(os.listdir(folder)) == sorted(["README.md", "bpe.codes", "dict.de.labels.txt", "dict.de.txt",
                                                 "dict.en.labels.txt", "dict.en.txt", "model.pt", "parsers",
                                                 "preparation.json"])
    want = generated(data, checkpoints["dep_rel"], tmp_path)
    assert len(want) == N_TEST and len(set(want)) > 1  # a model that says different things
    code = ("import json, sys\nfrom fairseq_syntax.inference.hub import from_pretrained\n"
            "m = from_pretrained(sys.argv[1])\nlines = json.load(open(sys.argv[2]))\n"
            f"print(json.dumps(m.translate(lines, **{GENERATION!r})))")
    (tmp_path / "in.json").write_text(json.dumps(test_en), encoding="utf-8")
    out = subprocess.run([sys.executable, "-c", code, str(folder), str(tmp_path / "in.json")], capture_output=True,
                         text=True, env=env(), cwd=str(tmp_path))  # not the checkout: the folder alone
    assert out.returncode == 0, out.stderr[-3000:]
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got == want


def test_an_lstm_model_translates_raw_text_as_generate_does(trained, tmp_path):
    """The hub is the same for the LSTM models (here CKY attention): raw text in, generate's output out."""
    from fairseq_syntax.inference.hub import from_pretrained

    data, checkpoints, test_en, _ = trained
    hub = from_pretrained(os.path.dirname(checkpoints["cky_lstm"]), "checkpoint_last.pt", data)
    assert hub.translate(test_en, **GENERATION) == generated(data, checkpoints["cky_lstm"], tmp_path)


def test_raw_text_edge_cases_and_interactive(trained):
    """An empty line translates to an empty line and the next lines still translate; characters outside the
    vocabulary are parsed as the user wrote them; fairseq-interactive with no --bpe gives the hub's output."""
    from fairseq_syntax.inference.hub import from_pretrained

    data, checkpoints, test_en, _ = trained
    hub = from_pretrained(os.path.dirname(checkpoints["dep_rel"]), "checkpoint_last.pt", data)
    lines = [test_en[0], "", "the zanéuha peliju dutove", "!!! ...", test_en[1]]
    out = hub.translate(lines, **GENERATION)
    assert len(out) == 5 and out[1] == "" and all(out[k] for k in (0, 2, 4))
    assert out[0] == hub.translate(test_en[0], **GENERATION)  # a line alone: the same translation
    encoded = hub.encode_raw(["the zanéuha peliju dutove"]).sources[0]
    assert encoded.tokens == ["the", "zanéuha", "peliju", "dutove"]  # the user's words, parsed as written
    assert encoded.tree.words == encoded.tokens and len(encoded.heads) == len(encoded.bpe.split())
    p = run([tool("fairseq-interactive"), data, "--user-dir", USER_DIR, "--task", "syntax_translation", "--path",
             checkpoints["dep_rel"], "--beam", "4", "--lenpen", "0.6", "--max-len-a", "0", "--max-len-b", "40",
             "--buffer-size", "2", "--cpu"], input="\n".join(lines) + "\n")
    d_lines = {int(x.split("\t")[0][2:]): x.split("\t")[2] if x.count("\t") >= 2 else ""
               for x in p.stdout.splitlines() if x.startswith("D-")}
    assert [d_lines[k] for k in range(5)] == out


def test_a_data_bin_of_controlled_trees_controls_the_raw_texts_trees_and_its_models_only(trained, tmp_path, caplog):
    """A data-bin whose record names a tree control (prepare --tree-control): raw text is parsed, then its trees
    controlled the same way, and the log says so; a checkpoint trained on the parser's trees is refused with it."""
    import logging
    import shutil

    from fairseq.data import Dictionary

    from fairseq_syntax.data.trees.tree_controls import TreeControl
    from fairseq_syntax.errors import SyntaxDataError
    from fairseq_syntax.inference.hub import from_pretrained
    from fairseq_syntax.inference.source import RawSourceEncoder
    from fairseq_syntax.preparation.databin_record import PreparationRecord

    data, checkpoints, test_en, _ = trained
    copy = tmp_path / "data-bin"
    shutil.copytree(data, copy)
    record = json.loads((copy / "preparation.json").read_text(encoding="utf-8"))
    record["tree_control"] = {"kind": "right-chain", "seed": 1, "uas": {}}
    (copy / "preparation.json").write_text(json.dumps(record), encoding="utf-8")
    loaded = PreparationRecord.load(str(copy))
    encoder = RawSourceEncoder(loaded, str(copy), "en", Dictionary.load(str(copy / "dict.en.txt")))
    with caplog.at_level(logging.WARNING):
        sources = encoder.encode(test_en[:3]).sources
    assert "--tree-control right-chain (seed 1): the input's parses are replaced the same way" in caplog.text
    for src in sources:
        n = len(src.tree.words)
        assert src.tree.heads == TreeControl.parse("right-chain").heads([0] * n, "")
    with pytest.raises(SyntaxDataError, match="trained on --tree-control none"):
        from_pretrained(os.path.dirname(checkpoints["dep_rel"]), "checkpoint_last.pt", str(copy))


def test_parse_heads_give_conllu_of_the_users_words(trained):
    from fairseq_syntax.data.trees.conllu import read_conllu
    from fairseq_syntax.inference.hub import from_pretrained

    data, checkpoints, test_en, _ = trained
    hub = from_pretrained(os.path.dirname(checkpoints["dbsa"]), "checkpoint_last.pt", data)
    conllu = hub.parse([test_en[0], ""])
    assert conllu[1] == ""
    [tree] = list(read_conllu(conllu[0].splitlines(keepends=True)))
    assert tree.words == hub.encode_raw([test_en[0]]).sources[0].tokens and tree.heads.count(0) == 1
    batched = hub.parse([test_en[0], "", test_en[1]])  # one padded batch: the same trees as one at a time
    assert batched == [conllu[0], "", hub.parse(test_en[1])]
    assert len(test_en[0].split()) != len(test_en[1].split())
    with pytest.raises(ValueError, match="no encoder parse head"):
        from_pretrained(os.path.dirname(checkpoints["dep_rel"]), "checkpoint_last.pt", data).parse("a dog")


def test_a_wrong_parser_path_and_a_missing_record_fail_clearly(trained, tmp_path):
    import shutil

    from fairseq_syntax.errors import SyntaxDataError
    from fairseq_syntax.inference.hub import from_pretrained

    data, checkpoints, _, _ = trained
    bare = tmp_path / "bare"
    shutil.copytree(data, bare, ignore=shutil.ignore_patterns("preparation.json", "work"))
    hub = from_pretrained(os.path.dirname(checkpoints["dep_rel"]), "checkpoint_last.pt", str(bare))
    with pytest.raises(SyntaxDataError, match="preparation.json: missing"):
        hub.translate("a dog runs")
    p = run([tool("fairseq-syntax-pack"), str(bare), checkpoints["dep_rel"], "-o", str(tmp_path / "x")],
            check=False)
    assert p.returncode == 1 and "preparation.json: missing" in p.stderr and "Traceback" not in p.stderr


def test_a_line_the_parser_rejects_is_named(trained, tmp_path):
    """A parser that fails on one line of a batch: the error names that line of the whole input, no traceback
    from inside fairseq (here the CoNLL-U lookup parser, which knows one sentence)."""
    import shutil

    from fairseq_syntax.data.trees.conllu import sentence_from_heads, write_conllu
    from fairseq_syntax.errors import SyntaxDataError
    from fairseq_syntax.inference.hub import from_pretrained
    from fairseq_syntax.preparation.databin_record import PreparationRecord

    data, checkpoints, _, _ = trained
    copy = tmp_path / "bin"
    shutil.copytree(data, copy, ignore=shutil.ignore_patterns("work"))
    with open(copy / "lookup.conllu", "w", encoding="utf-8") as f:
        write_conllu([sentence_from_heads(["a", "dog", "runs"], [2, 3, 0])], f)
    record = PreparationRecord.load(str(copy))
    record.languages["en"].tokenizer, record.languages["en"].normalize = "given", None
    record.languages["en"].parser = {"backend": "conllu", "options": {"path": "lookup.conllu"}}
    record.save(str(copy))
    hub = from_pretrained(os.path.dirname(checkpoints["dep_rel"]), "checkpoint_last.pt", str(copy))
    assert hub.translate("a dog runs", **GENERATION)  # known: translated
    with pytest.raises(SyntaxDataError, match=r"^input line 2: the parser failed on this line: .*no sentence"):
        hub.translate(["a dog runs", "a cat sleeps"])
    # fairseq-interactive: that line is reported by its number over the whole input and gets an empty
    # translation; the session goes on (buffers of 2: the bad line is the first of the second buffer)
    p = run([tool("fairseq-interactive"), str(copy), "--user-dir", USER_DIR, "--task", "syntax_translation",
             "--path", checkpoints["dep_rel"], "--beam", "4", "--buffer-size", "2", "--cpu"],
            input="a dog runs\n\na cat sleeps\na dog runs\n")
    assert "error: input line 3: the parser failed on this line" in p.stderr and "Traceback" not in p.stderr
    d_lines = {int(x.split("\t")[0][2:]): x.split("\t")[2] if x.count("\t") >= 2 else ""
               for x in p.stdout.splitlines() if x.startswith("D-")}
    assert sorted(d_lines) == [0, 1, 2, 3] and d_lines[1] == d_lines[2] == "" and d_lines[0] == d_lines[3] != ""


def test_too_long_lines_and_line_breaks_are_named(trained):
    """A line longer than the model reads, a string holding a line break: errors naming the line, where fairseq
    would drop the line (and shift every later output) or stop inside its batching."""
    from fairseq_syntax.errors import InputLineError
    from fairseq_syntax.inference.hub import from_pretrained

    data, checkpoints, test_en, _ = trained
    hub = from_pretrained(os.path.dirname(checkpoints["dep_rel"]), "checkpoint_last.pt", data)
    limit = hub.max_positions[0]
    with pytest.raises(InputLineError, match=rf"^input line 2: \d+ tokens after BPE .* at most {limit}"):
        hub.translate([test_en[0], " ".join(["dog"] * (limit + 5))], **GENERATION)
    with pytest.raises(InputLineError, match="^input line 2: holds a line break"):
        hub.translate([test_en[0], "A dog runs.\nA cat sleeps."], **GENERATION)


def test_pack_keeps_two_parser_models_of_one_name_apart(trained, tmp_path):
    import shutil

    from fairseq_syntax.preparation.databin_record import PreparationRecord

    data, checkpoints, _, _ = trained
    copy = tmp_path / "bin"
    shutil.copytree(data, copy, ignore=shutil.ignore_patterns("work"))
    record = PreparationRecord.load(str(copy))
    for lang in ("en", "de"):  # each language's UDPipe model under the same file name
        src = record.languages[lang].parser["options"]["model_path"]
        os.makedirs(tmp_path / lang)
        shutil.copyfile(src, tmp_path / lang / "model.udpipe")
        record.languages[lang].parser["options"]["model_path"] = str(tmp_path / lang / "model.udpipe")
    record.save(str(copy))
    run([tool("fairseq-syntax-pack"), str(copy), checkpoints["dep_rel"], "-o", str(tmp_path / "out")])
    packed = PreparationRecord.load(str(tmp_path / "out"))
    paths = {lang: packed.languages[lang].parser["options"]["model_path"] for lang in ("en", "de")}
    assert paths["en"] != paths["de"]
    for lang, path in paths.items():
        with open(tmp_path / "out" / path, "rb") as a, open(tmp_path / lang / "model.udpipe", "rb") as b:
            assert a.read() == b.read()
    readme = (tmp_path / "out" / "README.md").read_text(encoding="utf-8")
    assert "Licence of the parser models copied: not stated" in readme and "--task syntax_translation" in readme
