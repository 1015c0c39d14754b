"""SentencePiece data-bins from real text with real parsers (skipped without the shared data): Multi30k En-De with
UDPipe on both sides and a model trained with the sentencepiece package (--spm-model), a Tanaka Ja-En slice with
GiNZA and a model learned by prepare (--spm-vocab-size); fairseq-syntax-inspect against an alignment by character
offsets computed here from the parser's own output; a BPE data-bin inspected; and the edges of one-sided syntax
and given vocabularies (a side without syntax tokenised as asked, pieces refused, a foreign dictionary refused by
its <unk> rate)."""
import json
import os

import pytest
from conftest import require_shared
from helpers import run, tool

from piece_reference import reference_alignment
from test_failures import assert_one_line


def _slice(src_dir, names, out, sizes, transform=None):
    """The first lines of each split: ``names`` maps our split name to the corpus's file prefix."""
    out.mkdir(parents=True, exist_ok=True)
    for split, (name, n) in sizes.items():
        for lang, path in names.items():
            with open(os.path.join(src_dir, f"{name}.{lang}"), encoding="utf-8") as f:
                lines = [next(f) for _ in range(n)]
            if transform and lang in transform:
                lines = [transform[lang](line) for line in lines]
            (out / f"{split}.{path}").write_text("".join(lines), encoding="utf-8")


def _splits(d):
    return ["--trainpref", str(d / "train"), "--validpref", str(d / "valid"), "--testpref", str(d / "test")]


MULTI30K = {"train": ("train", 300), "valid": ("val", 30), "test": ("test_2016_flickr", 30)}


@pytest.fixture(scope="module")
def multi30k_spm(tmp_path_factory):
    """Multi30k En-De, 300 / 30 / 30 pairs, UDPipe on both sides, a SentencePiece model trained with the
    sentencepiece package on the raw training text of both languages, given with --spm-model."""
    import sentencepiece as spm

    raw = require_shared("data", "multi30k", "task1", "raw")
    en = require_shared("models", "en_ewt_udpipe_small.udpipe")
    de = require_shared("models", "de_udpipe_small.udpipe")
    d = tmp_path_factory.mktemp("m30k_spm")
    _slice(raw, {"en": "en", "de": "de"}, d / "c", MULTI30K)
    lines = [line.strip() for lang in ("en", "de") for line in (d / "c" / f"train.{lang}").open(encoding="utf-8")]
    spm.SentencePieceTrainer.train(sentence_iterator=iter(lines), model_prefix=str(d / "own"), vocab_size=700,
                                   num_threads=1, minloglevel=2)
    p = run([tool("fairseq-syntax-prepare"), "-s", "en", "-t", "de", *_splits(d / "c"), "--destdir", str(d / "bin"),
             "--spm-model", str(d / "own.model"), "--parser", "udpipe", "--parser-model-source", en,
             "--parser-model-target", de, "--no-progress"])
    assert "data-bin ready" in p.stdout
    return d


def _named(rows):
    """Reference rows (unit, head unit, label, first word) named as fairseq-syntax-inspect names them."""
    first = {}
    for unit, _, _, word in rows:
        first.setdefault(unit, word)
    return [{"word": first[u], "head": -1 if h == 0 else first[h], "label": lab} for u, h, lab, _ in rows]


def _inspected_as_offsets_say(data_bin, work, sides, sp, splits=("valid", "test"), limit=None):
    """Every sentence of ``splits``: fairseq-syntax-inspect's units and heads equal to the alignment computed here
    by character offsets from the parser's CoNLL-U (its # text the raw sentence) and SentencePiece's offsets.
    Returns how many sentences had a unit of several tokens (pieces that cut across tokens), and how many a unit
    of several words (those, and multiword tokens)."""
    from fairseq.data import Dictionary

    from fairseq_syntax.data.trees.conllu import read_conllu

    merged = several = 0
    for split in splits:
        for side, lang in sides:
            known = set(Dictionary.load(os.path.join(data_bin, f"dict.{lang}.txt")).symbols)
            labels = set(Dictionary.load(os.path.join(data_bin, f"dict.{lang}.labels.txt")).symbols)
            sents = list(read_conllu(os.path.join(work, f"{split}.{lang}.conllu")))
            for k, sent in enumerate(sents[:limit]):
                raw = next(c for c in sent.comments if c.startswith("# text = "))[len("# text = "):]
                proto = sp.encode(raw, out_type="proto")
                char_of = {len(raw[:i].encode("utf-8")): i for i in range(len(raw) + 1)}
                spans = [(char_of[p.begin], char_of[p.end]) for p in proto.pieces]
                expected = reference_alignment(sent, raw, spans)
                view = json.loads(run([tool("fairseq-syntax-inspect"), str(data_bin), "--split", split, "--index",
                                       str(k), "--json"]).stdout)
                got = view[side]
                # the data-bin's pieces (a piece its dictionary lacks is <unk>)
                assert [r["piece"] for r in got] == [p.piece if p.piece in known else "<unk>"
                                                     for p in proto.pieces], (split, k)
                # a label the training split lacks is <unk> in the label dictionary
                expected = [(u, h, lab if lab in labels else "<unk>", w) for u, h, lab, w in expected]
                assert [{key: r[key] for key in ("word", "head", "label")} for r in got] == _named(expected), \
                    (split, lang, k, raw)
                units = max(u for u, _, _, _ in expected)
                merged += units < len(sent.tokens)
                several += units < len(sent.words)
    return merged, several


def test_multi30k_with_a_given_model_and_udpipe_on_both_sides(multi30k_spm):
    """--spm-model: the model is copied into the data-bin and recorded with its path and SHA-256; every piece's
    unit and head, as inspect shows them, are those of an alignment by character offsets into the parser's raw
    sentence."""
    from fairseq_syntax.data.alignment.piece_align import load_sentencepiece
    from fairseq_syntax.durable_files import file_sha256

    d = multi30k_spm
    record = json.loads((d / "bin" / "preparation.json").read_text())
    assert record["version"] == 2 and record["bpe"] is None
    for lang in ("en", "de"):
        entry = record["spm"][lang]
        assert entry["file"] == "spm.model" and entry["source"] == str(d / "own.model")
        assert entry["sha256"] == file_sha256(str(d / "own.model")) == file_sha256(str(d / "bin" / "spm.model"))
    sp = load_sentencepiece(str(d / "own.model"))
    _, several = _inspected_as_offsets_say(d / "bin", d / "bin" / "work", [("source", "en"), ("target", "de")], sp)
    assert several > 5  # units of several words (German im, zum; English don't) are in play


@pytest.mark.slow  # GiNZA: about 15 s
def test_tanaka_with_a_learned_model_and_ginza(tmp_path):
    """--spm-vocab-size on a Tanaka Ja-En slice (the Japanese without KyTea's spaces, as the recipe gives GiNZA
    it), syntax on the Japanese side only: exit 0, the model kept in the data-bin and recorded as learned; the
    pieces, which cut across GiNZA's words, inspect as character offsets say."""
    from fairseq_syntax.data.alignment.piece_align import load_sentencepiece

    corpus = require_shared("data", "small_parallel_enja")
    pytest.importorskip("ja_ginza")
    sizes = {"train": ("train", 300), "valid": ("dev", 20), "test": ("test", 20)}
    _slice(corpus, {"ja": "ja", "en": "en"}, tmp_path / "c", sizes, {"ja": lambda x: x.replace(" ", "")})
    run([tool("fairseq-syntax-prepare"), "-s", "ja", "-t", "en", *_splits(tmp_path / "c"), "--destdir",
         str(tmp_path / "bin"), "--syntax", "source", "--parser-source", "spacy", "--parser-model-source", "ja_ginza",
         "--spm-vocab-size", "800", "--no-progress"])
    record = json.loads((tmp_path / "bin" / "preparation.json").read_text())
    assert record["spm"]["ja"]["source"] is None and record["spm"]["ja"]["pieces"] == 800
    assert not (tmp_path / "bin" / "test.ja-en.en.words.bin").exists()  # no target syntax
    sp = load_sentencepiece(str(tmp_path / "bin" / "spm.model"))
    merged, _ = _inspected_as_offsets_say(tmp_path / "bin", tmp_path / "bin" / "work", [("source", "ja")], sp)
    assert merged > 10  # Japanese pieces often span GiNZA's words


def test_a_bpe_data_bin_inspects_with_multiword_tokens_named_by_their_first_word(tmp_path):
    """UD German PUD's gold trees with BPE: a multiword token (zum = zu dem) is one unit, named by its first word,
    and a head inside one is named the same way."""
    from fairseq_syntax.data.alignment.subword_align import first_words_of
    from fairseq_syntax.data.trees.conllu import read_conllu, write_conllu

    de = require_shared("data", "UD_German-PUD", "de_pud-ud-test.conllu")
    en = require_shared("data", "UD_English-PUD", "en_pud-ud-test.conllu")
    c = tmp_path / "c"
    c.mkdir()
    sents = {"de": list(read_conllu(de))[:120], "en": list(read_conllu(en))[:120]}
    for split, sl in (("train", slice(0, 100)), ("valid", slice(100, 120))):
        for lang in ("en", "de"):
            with open(c / f"{split}.{lang}.conllu", "w", encoding="utf-8") as f:
                write_conllu(sents[lang][sl], f)
    run([tool("fairseq-syntax-prepare"), "-s", "en", "-t", "de", "--trainpref", str(c / "train"), "--validpref",
         str(c / "valid"), "--destdir", str(tmp_path / "bin"), "--bpe-merges", "300", "--no-progress"])
    k = next(i for i, s in enumerate(sents["de"][:100]) if s.has_multiword_tokens())
    sent = sents["de"][k]
    view = json.loads(run([tool("fairseq-syntax-inspect"), str(tmp_path / "bin"), "--split", "train", "--index",
                           str(k), "--json"]).stdout)
    rows = view["target"]
    units = []
    for r in rows:  # the units in order, each named by its first word
        if not units or units[-1] != r["word"]:
            units.append(r["word"])
    token_first = sorted(set(first_words_of(sent, list(range(1, len(sent.tokens) + 1)), "surface")))
    assert units == token_first and len(units) == len(sent.tokens) < len(sent.words)
    assert all(r["head"] == -1 or r["head"] in token_first for r in rows)
    text = run([tool("fairseq-syntax-inspect"), str(tmp_path / "bin"), "--split", "train", "--index", str(k)]).stdout
    assert text.splitlines()[1].split() == ["pos", "piece", "word", "head", "label"]


# --- the edges of one-sided syntax and given vocabularies ---------------------------------------------------------
@pytest.fixture(scope="module")
def multi30k_en_fr(tmp_path_factory):
    raw = require_shared("data", "multi30k", "task1", "raw")
    d = tmp_path_factory.mktemp("m30k_fr")
    _slice(raw, {"en": "en", "fr": "fr"}, d, {"train": ("train", 200), "valid": ("val", 20)})
    return d


def test_a_side_without_syntax_is_tokenised_as_its_tokeniser_says(multi30k_en_fr, tmp_path):
    """--syntax source (an English parser only) and --tokenizer-target moses in the one-step prepare: the French
    side is tokenised by sacremoses ("buissons." -> "buissons ."), and the record says moses because it ran."""
    from sacremoses import MosesTokenizer

    en = require_shared("models", "en_ewt_udpipe_small.udpipe")
    d = multi30k_en_fr
    run([tool("fairseq-syntax-prepare"), "-s", "en", "-t", "fr", "--trainpref", str(d / "train"), "--validpref",
         str(d / "valid"), "--destdir", str(tmp_path / "bin"), "--syntax", "source", "--parser-source", "udpipe",
         "--parser-model-source", en, "--tokenizer-target", "moses", "--bpe-merges", "500", "--no-progress"])
    tok = MosesTokenizer("fr")
    given = (d / "train.fr").read_text(encoding="utf-8").splitlines()
    made = (tmp_path / "bin" / "work" / "train.tok.fr").read_text(encoding="utf-8").splitlines()
    assert made == [tok.tokenize(x, aggressive_dash_splits=True, escape=True, return_str=True) for x in given]
    assert any(line.endswith(" .") for line in made) and made != given
    record = json.loads((tmp_path / "bin" / "preparation.json").read_text())["languages"]
    assert record["fr"]["tokenizer"] == "moses" and record["fr"]["parser"] is None
    assert record["en"]["tokenizer"] == "parser"


@pytest.mark.parametrize("kind", ["pieces", "bpe"])
def test_text_that_holds_pieces_or_bpe_marks_is_refused(multi30k_en_fr, tmp_path, kind):
    """Raw text already cut by SentencePiece (▁) or subword-nmt (@@) is refused before any work, naming the file,
    the line and the options that segment raw text."""
    d = tmp_path / "c"
    d.mkdir()
    for split in ("train", "valid"):
        for lang in ("en", "fr"):
            lines = (multi30k_en_fr / f"{split}.{lang}").read_text(encoding="utf-8").splitlines()
            if lang == "en" and split == "train":
                lines[6] = ("\u2581" + lines[6].replace(" ", " \u2581") if kind == "pieces"
                            else lines[6].replace("a", "a@@ ", 1))
            (d / f"{split}.{lang}").write_text("\n".join(lines) + "\n", encoding="utf-8")
    p = run([tool("fairseq-syntax-prepare"), "-s", "en", "-t", "fr", "--trainpref", str(d / "train"),
             "--validpref", str(d / "valid"), "--destdir", str(tmp_path / "bin"), "--syntax", "none",
             "--bpe-merges", "100", "--no-progress"], check=False)
    what = "SentencePiece pieces" if kind == "pieces" else "BPE continuation marks"
    assert_one_line(p, f"{d / 'train.en'}:7: holds {what}", "--spm-model PATH", "--bpe-merges N")
    assert not (tmp_path / "bin").exists()


def test_a_foreign_dictionary_is_refused_with_its_unk_rate(multi30k_spm, multi30k_en_fr, tmp_path):
    """--srcdict with another preparation's dictionary (the SentencePiece pieces of En-De, given to a BPE En-Fr
    data-bin) turns most training tokens into <unk>: prepare stops with the rate and the likely cause, the data-bin
    unfinished; --allow-unk-rate 1 accepts it."""
    d = multi30k_en_fr
    foreign = str(multi30k_spm / "bin" / "dict.en.txt")
    command = [tool("fairseq-syntax-prepare"), "-s", "en", "-t", "fr", "--trainpref", str(d / "train"),
               "--validpref", str(d / "valid"), "--destdir", str(tmp_path / "bin"), "--syntax", "none",
               "--bpe-merges", "300", "--srcdict", foreign, "--no-progress"]
    line = assert_one_line(run(command, check=False), f"error: {foreign}: turns ",
                           "% of the en training tokens into <unk>", "not made from this segmentation",
                           "--allow-unk-rate")
    rate = float(line.split("turns ")[1].split("%")[0])
    assert rate > 30 and (tmp_path / "bin" / ".prepare-unfinished").exists()
    ok = run(command + ["--allow-unk-rate", "1", "--overwrite"])
    assert "data-bin ready" in ok.stdout


def test_the_batch_of_a_corpus_of_ones_own_on_gpus():
    """fairseq-syntax-settings --gpus N --batch-tokens T: the per-GPU --max-tokens and --update-freq."""
    out = run([tool("fairseq-syntax-settings"), "--gpus", "4", "--batch-tokens", "25000"]).stdout
    assert "--max-tokens 3125 --update-freq 2  # 4 x 2 x 3125 = 25000 tokens" in out
    out = run([tool("fairseq-syntax-settings"), "--gpus", "3", "--batch-tokens", "25000", "--max-tokens", "8192"]).stdout
    assert "--max-tokens 4167 --update-freq 2" in out and "(2 over 25000" in out
    p = run([tool("fairseq-syntax-settings"), "tanaka-ja-en", "--gpus", "2", "--batch-tokens", "100"], check=False)
    assert p.returncode == 2 and "--batch-tokens is the batch of a corpus of one's own" in p.stderr
