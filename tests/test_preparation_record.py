"""The preparation record (DATA-BIN/preparation.json): what prepare records of each language, and how raw text is
encoded from it (fairseq_syntax.preparation.databin_record, fairseq_syntax.inference.source)."""
import json
import os

import pytest
from fairseq.data import Dictionary

from fairseq_syntax.data.trees.conllu import sentence_from_heads, write_conllu
from fairseq_syntax.errors import SyntaxDataError
from fairseq_syntax.inference.source import RawSourceEncoder
from fairseq_syntax.preparation.databin_record import LanguageRecord, PreparationRecord
from helpers import run, tool


def _corpus(tmp_path, src_lines, tgt_lines, src_conllu=None):
    for name, lines in (("src", src_lines), ("tgt", tgt_lines)):
        (tmp_path / f"train.{name}").write_text("\n".join(lines) + "\n", encoding="utf-8")
    if src_conllu is not None:
        with open(tmp_path / "train.src.conllu", "w", encoding="utf-8") as f:
            write_conllu(src_conllu, f)
    return str(tmp_path / "train")


def test_given_tokens_are_recorded_not_normalised_again(tmp_path):
    """A side without syntax given as tokens (the recipes' Moses-tokenised text) keeps its tokens: the
    normalisation option only records how they were made; a side given as CoNLL-U without a parser named
    records no parser (none ran)."""
    tokens = ["He said : ( really ) at 50 % ;", "a b c"]
    trees = [sentence_from_heads(["x", "y"], [0, 1]), sentence_from_heads(["z"], [0])]
    pref = _corpus(tmp_path, ["x y", "z"], tokens, trees)
    dest = tmp_path / "bin"
    run([tool("fairseq-syntax-prepare"), "-s", "src", "-t", "tgt", "--trainpref", pref, "--destdir", str(dest),
         "--syntax", "source", "--bpe-merges", "0", "--normalize-target", "moses", "--tokenizer-target", "moses",
         "--no-progress"])
    assert (dest / "work" / "train.tok.tgt").read_text(encoding="utf-8").splitlines() == tokens
    record = PreparationRecord.load(str(dest))
    assert record.languages["tgt"] == LanguageRecord(tokenizer="moses", normalize="moses", parser=None)
    assert record.languages["src"].parser is None and record.languages["src"].tokenizer == "given"
    assert record.bpe is None and record.bpe_merges == 0


def _dictionary(words):
    d = Dictionary()
    for w in words:
        d.add_symbol(w)
    return d


def test_kytea_and_given_tokens_are_the_texts_own(tmp_path):
    record = PreparationRecord(languages={"ja": LanguageRecord(tokenizer="kytea"),
                                          "en": LanguageRecord(tokenizer="given", lowercase=True)})
    ja = RawSourceEncoder(record, str(tmp_path), "ja", _dictionary(["今日", "は", "晴れ"]))
    [src] = ja.encode(["今日 は 晴れ"], with_syntax=False).sources
    assert src.tokens == ["今日", "は", "晴れ"] and src.ids.tolist()[:3] == [ja.dictionary.index(w) for w in src.tokens]
    en = RawSourceEncoder(record, str(tmp_path), "en", _dictionary(["a", "dog"]))
    out = en.encode(["A Dog", ""], first_line=7, with_syntax=False)
    assert out.sources[0].tokens == ["a", "dog"] and out.sources[1].empty and out.sources[1].line == 8
    assert out[1].tolist() == [en.dictionary.eos()]  # an empty line: EOS alone


def test_a_model_that_needs_the_parse_without_a_recorded_parser_says_so(tmp_path):
    record = PreparationRecord(languages={"en": LanguageRecord(tokenizer="given")})
    enc = RawSourceEncoder(record, str(tmp_path), "en", _dictionary(["a"]))
    with pytest.raises(SyntaxDataError, match="no parser is recorded for en: give one"):
        enc.encode(["a b"], with_syntax=True)


def test_a_relative_parser_model_is_recorded_absolute(tmp_path):
    pytest.importorskip("ufal.udpipe")
    from conftest import require_shared

    model = require_shared("models", "en_ewt_udpipe_small.udpipe")
    os.symlink(model, tmp_path / "en.udpipe")
    pref = _corpus(tmp_path, ["the dog runs ."], ["der Hund läuft ."])
    run([tool("fairseq-syntax-prepare"), "-s", "src", "-t", "tgt", "--trainpref", pref, "--destdir",
         str(tmp_path / "bin"), "--syntax", "source", "--parser", "udpipe", "--parser-model-source", "en.udpipe",
         "--bpe-merges", "0", "--gpu", "--no-progress"], cwd=str(tmp_path))
    parser = PreparationRecord.load(str(tmp_path / "bin")).languages["src"].parser
    assert parser["options"]["model_path"] == str(tmp_path / "en.udpipe") and "gpu" not in parser["options"]


def _plain_corpus(d, n=40):
    words = "the a cat dog sat on mat ran fast house tree big small red blue".split()
    for split in ("train", "valid", "test"):
        with open(d / f"{split}.src", "w", encoding="utf-8") as s, open(d / f"{split}.tgt", "w",
                                                                          encoding="utf-8") as t:
            for i in range(n):
                sent = [words[(i * 7 + k * 3) % len(words)] for k in range(3 + i % 5)]
                s.write(" ".join(sent) + "\n")
                t.write(f"„{sent[0]}“ – {' '.join(reversed(sent))}\n")  # curly quotes, an en dash


def _splits(d):
    return [a for s in ("train", "valid", "test") for a in (f"--{s}pref", str(d / s))]


def test_normalising_a_side_given_as_tokens_normalises_it(tmp_path):
    """--normalize-target moses on a side prepare does not parse (no --tokenizer-target): a step, as in
    --text-only, not a statement. The target's text is normalised (its curly quotes and en dash made ASCII) before
    BPE, and the record says so (normalised, then taken as given), so decoding raw text repeats exactly that."""
    from sacremoses import MosesPunctNormalizer

    _plain_corpus(tmp_path)
    p = run([tool("fairseq-syntax-prepare"), "-s", "src", "-t", "tgt", *_splits(tmp_path), "--destdir",
             str(tmp_path / "bin"), "--syntax", "none", "--normalize-target", "moses", "--bpe-merges", "50",
             "--no-progress"], check=False)
    assert p.returncode == 0, p.stderr[-2000:]
    normalise = MosesPunctNormalizer("tgt").normalize
    given = (tmp_path / "train.tgt").read_text(encoding="utf-8").splitlines()
    made = (tmp_path / "bin" / "work" / "train.tok.tgt").read_text(encoding="utf-8").splitlines()
    assert made == [normalise(line) for line in given] and made != given
    record = json.loads((tmp_path / "bin" / "preparation.json").read_text())["languages"]["tgt"]
    assert record["normalize"] == "moses" and record["tokenizer"] == "given"


def _data_bin_without_record(tmp_path, merges=30):
    """A data-bin with BPE (no syntax), as prepared before records existed: its preparation.json and copied codes
    removed; returns it and its work folder."""
    _plain_corpus(tmp_path)
    dest, work = tmp_path / "bin", tmp_path / "work"
    run([tool("fairseq-syntax-prepare"), "-s", "src", "-t", "tgt", *_splits(tmp_path), "--destdir", str(dest),
         "--workdir", str(work), "--syntax", "none", "--bpe-merges", str(merges), "--no-progress"])
    (dest / "preparation.json").unlink()
    (dest / "bpe.codes").unlink()
    return dest, work


def test_record_only_refuses_codes_a_later_preparation_learned_again(tmp_path):
    """--record-only copies WORKDIR's BPE codes into the record that raw-text decoding segments with. Codes the
    work folder got from another preparation (here: learned again with 8 merges, the data-bin made with 30) were
    copied and recorded, exit 0; they are refused now, naming the sentence they segment otherwise, and nothing is
    written. The codes that made the data-bin are recorded, byte for byte."""
    from subword_nmt.learn_bpe import learn_bpe

    dest, work = _data_bin_without_record(tmp_path)
    right = (work / "bpe.codes.joint").read_bytes()
    with open(tmp_path / "train.src", encoding="utf-8") as fin, open(work / "bpe.codes.joint", "w",
                                                                     encoding="utf-8") as fout:
        learn_bpe(fin, fout, 8, min_frequency=2)
    command = [tool("fairseq-syntax-prepare"), "-s", "src", "-t", "tgt", *_splits(tmp_path), "--destdir", str(dest),
               "--workdir", str(work), "--syntax", "none", "--bpe-merges", "30", "--record-only", "--no-progress"]
    p = run(command, check=False)
    assert p.returncode != 0 and "these BPE codes did not make the data-bin's subwords" in p.stderr, p.stderr[-2000:]
    assert "valid.src-tgt.src.bin, sentence 1" in p.stderr and "bpe.codes.joint" in p.stderr
    assert not (dest / "preparation.json").exists() and not (dest / "bpe.codes").exists()
    (work / "bpe.codes.joint").write_bytes(right)
    assert "recorded" in run(command).stdout
    assert (dest / "bpe.codes").read_bytes() == right


def test_record_only_names_the_default_parser_of_a_side_it_parsed(tmp_path):
    """--record-only with the options of a preparation that parsed the source with the default parser (no
    --parser option given): the record names that parser and the parser's tokens, not whitespace tokens
    (before: parser none, tokenizer given, and raw lines were split on whitespace at decoding)."""
    dest, work = _data_bin_without_record(tmp_path)
    p = run([tool("fairseq-syntax-prepare"), "-s", "src", "-t", "tgt", *_splits(tmp_path), "--destdir", str(dest),
             "--workdir", str(work), "--syntax", "source", "--record-only", "--no-progress"])
    assert "recorded" in p.stdout
    src = PreparationRecord.load(str(dest)).languages["src"]
    assert src.parser is not None and src.parser["backend"] == "stanza" and src.tokenizer == "parser", src


def test_the_codes_check_skips_what_it_cannot_join_back_and_reads_the_next_split(tmp_path):
    """check_codes_segment_data_bin on a data-bin built by hand: an empty valid split gives way to train; a line
    with a token that holds subword-nmt's separator (``x @@ y``: the word ``@@``) cannot be joined back for
    certain and is skipped, not refused; the other lines must come out as held, so codes with fewer merges are
    refused."""
    import io

    from fairseq.data import indexed_dataset
    from subword_nmt.apply_bpe import BPE
    from subword_nmt.learn_bpe import learn_bpe

    from fairseq_syntax.preparation.bpe import check_codes_segment_data_bin

    def codes(merges, name):
        out = io.StringIO()
        learn_bpe(io.StringIO("cat cat cat dog dog\n" * 5), out, merges, min_frequency=2)
        (tmp_path / name).write_text(out.getvalue(), encoding="utf-8")
        return str(tmp_path / name)

    right, wrong = codes(10, "right.codes"), codes(1, "wrong.codes")
    with open(right, encoding="utf-8") as f:
        held = BPE(f).process_line("cat cab")
    assert held == "cat ca@@ b"  # cat whole, which one merge splits
    lines = ["x @@ y", held]
    d = Dictionary()
    for line in lines:
        for sym in line.split():
            d.add_symbol(sym)
    d.save(str(tmp_path / "dict.src.txt"))
    for split, rows in (("valid", []), ("train", lines)):
        prefix = str(tmp_path / f"{split}.src-tgt.src")
        builder = indexed_dataset.make_builder(prefix + ".bin", impl="mmap", vocab_size=len(d))
        for line in rows:
            builder.add_item(d.encode_line(line, add_if_not_exist=False, append_eos=True).long())
        builder.finalize(prefix + ".idx")
    assert check_codes_segment_data_bin(right, str(tmp_path), "src", "tgt", "src") == 1  # x @@ y skipped
    with pytest.raises(SyntaxDataError, match="train.src-tgt.src.bin, sentence 2"):
        check_codes_segment_data_bin(wrong, str(tmp_path), "src", "tgt", "src")
