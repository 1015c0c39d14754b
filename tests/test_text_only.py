"""prepare --text-only (fairseq_syntax/preparation/text_only.py): each language's tokens and parses made once for
the data-bins of a corpus, as the recipes make them (Moses tokens, KyTea, the parser's tokens, given tokens), the
record of how (text.json) carried into a data-bin by --text-record, and reuse only of what a stamp vouches for.
The parser is UDPipe 1 with the shared English model (skipped without it); KyTea is a stand-in script on PATH."""
import json
import os
import stat

import pytest

from fairseq_syntax.data.trees.conllu import read_conllu
from fairseq_syntax.durable_files import file_sha256
from fairseq_syntax.errors import OptionError, SyntaxDataError
from fairseq_syntax.preparation.databin_record import PreparationRecord
from conftest import require_shared

EN = ["The dog-owner said: \u201cit's 5,000 & more\u201d.", "A cat sleeps ."]
DE = ["Der Hunde-Besitzer sagte: \u201ees sind 5.000 & mehr\u201c.", "Eine Katze schl\u00e4ft ."]


def _prepare(argv):
    from fairseq_syntax.cli.prepare import get_parser
    from fairseq_syntax.preparation.prepare import prepare

    return prepare(get_parser().parse_args(argv))


@pytest.fixture(scope="module")
def udpipe_en():
    pytest.importorskip("ufal.udpipe")
    return require_shared("models", "en_ewt_udpipe_small.udpipe")


def _raw(d, en=EN, de=DE):
    d.mkdir(exist_ok=True)
    for split in ("train", "valid"):
        (d / f"{split}.en").write_text("\n".join(en) + "\n", encoding="utf-8")
        (d / f"{split}.de").write_text("\n".join(de) + "\n", encoding="utf-8")
    return d


def _text(raw, work, udpipe_en, *extra):
    return ["--text-only", "-s", "en", "-t", "de", "--trainpref", str(raw / "train"), "--validpref",
            str(raw / "valid"), "--workdir", str(work), "--syntax", "source", "--parser-source", "udpipe",
            "--parser-model-source", udpipe_en, "--tokenizer-source", "moses", "--normalize-source", "moses",
            "--tokenizer-target", "moses", "--normalize-target", "moses", "--no-progress", *extra]


def test_moses_tokens_a_parse_and_the_record_of_how(tmp_path, udpipe_en):
    raw, work = _raw(tmp_path / "raw"), tmp_path / "text"
    _prepare(_text(raw, work, udpipe_en))
    assert sorted(p for p in os.listdir(work) if not p.endswith((".done", ".chunks"))) == [
        "text.json", "train.de", "train.en.conllu", "valid.de", "valid.en.conllu"]
    # the side without syntax: Moses normalisation, then its tokeniser with aggressive hyphens and XML escapes
    # (what `sacremoses normalize | sacremoses tokenize -a` writes)
    assert (work / "train.de").read_text(encoding="utf-8").splitlines() == [
        'Der Hunde @-@ Besitzer sagte : &quot; es sind 5.000 &amp; mehr &quot; .', "Eine Katze schl\u00e4ft ."]
    # the parsed side: normalised (curly quotes become "), then tokenised by the parser
    forms = [s.forms("surface") for s in read_conllu(str(work / "train.en.conllu"))]
    assert forms[0][:5] == ["The", "dog", "-", "owner", "said"] and '"' in forms[0] and "\u201c" not in forms[0]
    record = json.loads((work / "text.json").read_text())
    assert record["de"] == {"tokenizer": "moses", "normalize": "moses", "parser": None, "pretokenized": False,
                            "files": {name: file_sha256(str(work / name)) for name in ("train.de", "valid.de")}}
    assert record["en"]["tokenizer"] == "parser" and record["en"]["normalize"] == "moses"
    assert record["en"]["parser"] == {"backend": "udpipe", "options": {"model_path": os.path.abspath(udpipe_en),
                                                                       "pretokenized": False}}
    # a data-bin from this text records each language as the text record says
    bin_ = tmp_path / "bin"
    _prepare(["-s", "en", "-t", "de", "--trainpref", str(work / "train"), "--validpref", str(work / "valid"),
              "--destdir", str(bin_), "--syntax", "source", "--bpe-merges", "0", "--text-record",
              str(work / "text.json"), "--no-progress"])
    made = PreparationRecord.load(str(bin_))
    for lang in ("en", "de"):
        got = made.languages[lang]
        assert (got.tokenizer, got.normalize, got.parser) == (record[lang]["tokenizer"], record[lang]["normalize"],
                                                                record[lang]["parser"])


def test_reused_only_when_a_stamp_vouches_for_it(tmp_path, udpipe_en):
    raw, work = _raw(tmp_path / "raw"), tmp_path / "text"
    _prepare(_text(raw, work, udpipe_en))
    first = {p: (work / p).stat().st_mtime_ns for p in ("train.de", "train.en.conllu", "valid.en.conllu")}
    _prepare(_text(raw, work, udpipe_en))
    assert {p: (work / p).stat().st_mtime_ns for p in first} == first  # nothing made again
    _raw(tmp_path / "raw", en=["Another sentence .", "A cat sleeps ."])  # new input: its outputs again
    _prepare(_text(raw, work, udpipe_en))
    assert [s.forms("surface") for s in read_conllu(str(work / "train.en.conllu"))][0] == ["Another", "sentence", "."]
    _prepare(_text(raw, work, udpipe_en, "--train-first", "1"))  # other options: made again
    assert len(list(read_conllu(str(work / "train.en.conllu")))) == 1
    assert len(list(read_conllu(str(work / "valid.en.conllu")))) == 2
    # the target parsed now: its tokens file makes way for the parse (a data-bin reads one or the other)
    argv = _text(raw, work, udpipe_en, "--parser-target", "udpipe", "--parser-model-target", udpipe_en)
    argv[argv.index("source")] = "source,target"
    _prepare(argv)
    assert not (work / "train.de").exists() and (work / "train.de.conllu").exists()
    assert not (work / "train.de.done").exists()


def test_kytea_tokens_are_kept_by_the_parser(tmp_path, udpipe_en, monkeypatch):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    kytea = bin_dir / "kytea"  # stand-in: one token per character
    kytea.write_text("#!/usr/bin/env python3\nimport sys\nassert sys.argv[1:] == ['-notags']\n"
                     "for line in sys.stdin:\n    print(' '.join(line.strip().replace(' ', '')))\n")
    kytea.chmod(kytea.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    raw, work = _raw(tmp_path / "raw", en=["abc", "de"]), tmp_path / "text"
    argv = _text(raw, work, udpipe_en)
    argv[argv.index("--tokenizer-source") + 1] = "kytea"
    argv[argv.index("--normalize-source") + 1] = "none"
    _prepare(argv)
    assert [s.forms("surface") for s in read_conllu(str(work / "train.en.conllu"))] == [["a", "b", "c"], ["d", "e"]]
    record = json.loads((work / "text.json").read_text())["en"]
    assert record["tokenizer"] == "kytea" and record["pretokenized"] and record["parser"]["options"]["pretokenized"]
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(OptionError, match="no kytea on PATH"):
        _prepare(argv + ["--train-first", "1"])


def test_a_data_bin_from_the_text_takes_no_other_word_on_how(tmp_path, udpipe_en):
    raw, work = _raw(tmp_path / "raw"), tmp_path / "text"
    _prepare(_text(raw, work, udpipe_en))
    base = ["-s", "en", "-t", "de", "--trainpref", str(work / "train"), "--destdir", str(tmp_path / "bin"),
            "--bpe-merges", "0", "--text-record", str(work / "text.json"), "--no-progress"]
    with pytest.raises(OptionError, match="give none of --parser-source"):
        _prepare(base + ["--syntax", "source", "--parser-source", "stanza"])
    with pytest.raises(SyntaxDataError, match="no parse of de in the text"):
        _prepare(base + ["--syntax", "source,target"])  # the text has Moses tokens of de, no parse
    (work / "text.json").write_text("{}")
    with pytest.raises(SyntaxDataError, match="no language 'en'"):
        _prepare(base + ["--syntax", "source"])


def test_a_data_bin_takes_only_the_text_its_record_describes(tmp_path, udpipe_en, monkeypatch):
    """text.json lists each file it describes with its SHA-256: a file of the text folder that is not as listed
    (a --text-only run with other options killed midway left it beside the old record; one not made by the run
    the record describes), a record removed by a run that did not finish, and text changed while a prepare reads
    it are refused, naming the file (before: the data-bin recorded tokens of one kind over text of another,
    exit 0)."""
    raw, work = _raw(tmp_path / "raw"), tmp_path / "text"
    _prepare(_text(raw, work, udpipe_en))
    record = json.loads((work / "text.json").read_text())
    assert set(record["de"]["files"]) == {"train.de", "valid.de"}
    base = ["-s", "en", "-t", "de", "--trainpref", str(work / "train"), "--validpref", str(work / "valid"),
            "--bpe-merges", "0", "--syntax", "source", "--text-record", str(work / "text.json"), "--no-progress"]
    _prepare(base + ["--destdir", str(tmp_path / "ok")])
    good = (work / "valid.de").read_bytes()
    (work / "valid.de").write_text("Der Hund schläft\nEine Katze schläft\n", encoding="utf-8")
    with pytest.raises(SyntaxDataError, match="valid.de.*not the file text.json lists"):
        _prepare(base + ["--destdir", str(tmp_path / "bin1")])
    (work / "valid.de").write_bytes(good)
    (work / "test.de").write_text("x\n")
    (work / "test.en").write_text("x\n")
    with pytest.raises(SyntaxDataError, match="test.en.*not made by the --text-only run"):
        _prepare(base + ["--destdir", str(tmp_path / "bin2"), "--testpref", str(work / "test")])
    from fairseq_syntax.preparation import prepare as prepare_module
    real = prepare_module.check_destdir

    def meanwhile(*a, **k):  # another --text-only rewrites the text while this prepare runs
        (work / "train.de").write_text("anders\nganz anders\n", encoding="utf-8")
        return real(*a, **k)

    monkeypatch.setattr(prepare_module, "check_destdir", meanwhile)
    with pytest.raises(SyntaxDataError, match="train.de.*changed while this prepare ran"):
        _prepare(base + ["--destdir", str(tmp_path / "bin3")])
    monkeypatch.undo()
    from fairseq_syntax.preparation import text_only
    monkeypatch.setattr(text_only, "make_split", lambda *a, **k: (_ for _ in ()).throw(KeyboardInterrupt()))
    with pytest.raises(KeyboardInterrupt):  # a --text-only run stopped before it finished: no record is left
        _prepare(_text(raw, work, udpipe_en))
    assert not (work / "text.json").exists()
