"""Everything downstream of a SentencePiece data-bin, from raw text with the parser inside (skipped without
the shared data): a tiny dependency + relative model trained on Multi30k En-De pieces (UDPipe on the English), then
fairseq-syntax-generate (a bare --remove-bpe joins the pieces), fairseq-syntax-evaluate on its output, the hub
(its source tree the one prepare aligned), fairseq-syntax-interactive, a packed folder moved elsewhere, and a
SentencePiece model replaced after training refused."""
import os
import re
import shutil

import pytest
from conftest import require_shared
from helpers import USER_DIR, run, tool

SIZES = {"train": ("train", 300), "valid": ("val", 20), "test": ("test_2016_flickr", 20)}


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """(data-bin, checkpoint, corpus folder): --spm-vocab-size 500, syntax on the English side, and
    transformer_dep_rel_tiny trained 12 updates on it."""
    raw = require_shared("data", "multi30k", "task1", "raw")
    en = require_shared("models", "en_ewt_udpipe_small.udpipe")
    d = tmp_path_factory.mktemp("spm_e2e")
    (d / "c").mkdir()
    for split, (name, n) in SIZES.items():
        for lang in ("en", "de"):
            with open(os.path.join(raw, f"{name}.{lang}"), encoding="utf-8") as f:
                (d / "c" / f"{split}.{lang}").write_text("".join(next(f) for _ in range(n)), encoding="utf-8")
    data = d / "bin"
    run([tool("fairseq-syntax-prepare"), "-s", "en", "-t", "de", "--trainpref", str(d / "c" / "train"),
         "--validpref", str(d / "c" / "valid"), "--testpref", str(d / "c" / "test"), "--destdir", str(data),
         "--syntax", "source", "--parser-source", "udpipe", "--parser-model-source", en, "--spm-vocab-size", "500",
         "--no-progress"])
    run([tool("fairseq-syntax-train"), str(data), "--task", "syntax_translation", "--arch", "transformer_dep_rel_tiny",
         "--share-all-embeddings", "--optimizer", "adam", "--lr", "2e-3", "--criterion", "label_smoothed_cross_entropy",
         "--label-smoothing", "0.1", "--max-tokens", "2000", "--max-update", "12", "--cpu", "--save-dir",
         str(d / "ck"), "--no-epoch-checkpoints", "--num-workers", "0", "--seed", "1", "--log-format", "simple"])
    return str(data), str(d / "ck" / "checkpoint_last.pt"), d / "c"


def test_generate_joins_the_pieces_and_evaluate_scores_its_output(trained, tmp_path):
    """A bare --remove-bpe on a SentencePiece data-bin joins the pieces (fairseq-syntax-generate reads the record);
    fairseq-syntax-evaluate scores that output, and fairseq-generate's output in pieces joined as it reads them:
    the same text scored either way."""
    data, ck, corpus = trained
    options = ["--task", "syntax_translation", "--path", ck, "--beam", "2", "--max-len-a", "1", "--max-len-b", "5",
               "--cpu", "--batch-size", "8"]
    joined = run([tool("fairseq-syntax-generate"), data, *options, "--remove-bpe"]).stdout
    pieces = run([tool("fairseq-generate"), data, "--user-dir", USER_DIR, *options]).stdout
    hyps = re.findall(r"^D-\d+\t[^\t]*\t(.*)$", joined, flags=re.M)
    assert len(hyps) == 20 and not any("\u2581" in h for h in hyps)
    assert any("\u2581" in h for h in re.findall(r"^D-\d+\t[^\t]*\t(.*)$", pieces, flags=re.M))
    scored = []
    for name, text in (("joined", joined), ("pieces", pieces)):
        (tmp_path / name).write_text(text, encoding="utf-8")
        out = run([tool("fairseq-syntax-evaluate"), "--data", data, "--ref", str(corpus / "test.de"), "--hyp",
                   str(tmp_path / name), "--write-hyp", str(tmp_path / f"{name}.txt")]).stdout
        assert "detokenised: none (the corpus's own tokens)" in out  # German: no parser, given text
        assert re.search(r"^BLEU [0-9.]+ ", out, flags=re.M)
        scored.append((tmp_path / f"{name}.txt").read_text(encoding="utf-8"))
    assert scored[0] == scored[1] and "\u2581" not in scored[0]


def test_the_hub_aligns_raw_text_as_prepare_did(trained):
    """Raw training sentences through the hub: the record's parser parses them, SentencePiece cuts them and the
    tree is aligned by character offsets exactly as in the data-bin; the translation is text, not pieces."""
    from fairseq.data.indexed_dataset import MMapIndexedDataset

    from fairseq_syntax.inference.hub import from_pretrained

    data, ck, corpus = trained
    model = from_pretrained(os.path.dirname(ck), os.path.basename(ck), data)
    lines = (corpus / "train.en").read_text(encoding="utf-8").splitlines()[:40]
    encoded = model.encode_raw(lines)
    prefix = os.path.join(data, "train.en-de.en")
    tokens, words, heads = (MMapIndexedDataset(prefix + ext) for ext in ("", ".words", ".heads"))
    for k, src in enumerate(encoded.sources):
        assert src.ids.tolist() == tokens[k].tolist(), k
        assert src.words.tolist() == words[k].tolist() and src.heads.tolist() == heads[k].tolist(), k
    out = model.translate("Two dogs play in the snow.", beam=2, max_len_b=5)
    assert isinstance(out, str) and "\u2581" not in out


def test_interactive_translates_raw_lines(trained):
    data, ck, corpus = trained
    lines = (corpus / "test.en").read_text(encoding="utf-8").splitlines()[:3]
    p = run([tool("fairseq-syntax-interactive"), data, "--task", "syntax_translation", "--path", ck, "--cpu",
             "--beam", "2", "--max-len-b", "5", "-s", "en", "-t", "de"], input="\n".join(lines) + "\n")
    hyps = re.findall(r"^D-\d+\t[^\t]*\t(.*)$", p.stdout, flags=re.M)
    assert len(hyps) == 3 and not any("\u2581" in h for h in hyps), p.stdout[-2000:]


def test_a_moved_packed_folder_translates_raw_text(trained, tmp_path):
    """fairseq-syntax-pack copies the SentencePiece model; the folder, moved, translates raw text on its own."""
    from fairseq_syntax.inference.hub import from_pretrained

    data, ck, _ = trained
    run([tool("fairseq-syntax-pack"), data, ck, "-o", str(tmp_path / "packed")])
    assert (tmp_path / "packed" / "spm.model").is_file()
    shutil.move(str(tmp_path / "packed"), str(tmp_path / "moved"))
    out = from_pretrained(str(tmp_path / "moved")).translate("A man rides a bike.", beam=2, max_len_b=5)
    assert isinstance(out, str) and "\u2581" not in out


def test_a_sentencepiece_model_replaced_after_training_is_refused(trained, tmp_path):
    """The checkpoint records the SHA-256 of the data-bin's SentencePiece model: a data-bin whose model was
    replaced (learned again with fewer pieces) is refused where raw text is segmented, and by pack."""
    import sentencepiece as spm

    from fairseq_syntax.errors import SyntaxDataError
    from fairseq_syntax.inference.hub import from_pretrained

    data, ck, corpus = trained
    other = tmp_path / "bin"
    shutil.copytree(data, other)
    lines = (corpus / "train.en").read_text(encoding="utf-8").splitlines()
    spm.SentencePieceTrainer.train(sentence_iterator=iter(lines), model_prefix=str(tmp_path / "m"), vocab_size=200,
                                   num_threads=1, minloglevel=2)
    shutil.copyfile(tmp_path / "m.model", other / "spm.model")
    model = from_pretrained(os.path.dirname(ck), os.path.basename(ck), str(other))
    with pytest.raises(SyntaxDataError, match=r"spm\.model: not the SentencePiece model of 'en' the model was "):
        model.translate("Two dogs play.", max_len_b=3)
    p = run([tool("fairseq-syntax-pack"), str(other), ck, "-o", str(tmp_path / "packed")], check=False)
    assert p.returncode == 1 and "not the SentencePiece model of" in p.stderr
