"""fairseq-syntax-evaluate on fairseq-generate's output as it is written: corpus order restored, detokenised as
the data-bin's record says, scored as the recipes score; and the mistakes a researcher can make, refused."""
import json
import os
import random
import re

import pytest

from conftest import require_shared
from fairseq_syntax.cli.evaluate import main
from fairseq_syntax.errors import OptionError, SyntaxDataError
from fairseq_syntax.preparation.databin_record import LanguageRecord, PreparationRecord
from helpers import run, tool

RESULTS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples")


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read().splitlines()


def data_bin(folder, **languages):
    """A folder holding only a preparation record: LANG=TOKENIZER (what the recipes' prepare records)."""
    os.makedirs(folder, exist_ok=True)
    PreparationRecord(languages={lang: LanguageRecord(tokenizer=t, normalize="moses" if t == "moses" else None)
                                 for lang, t in languages.items()}).save(str(folder))
    return str(folder)


def generate_output(path, hyps, sources=None, targets=None, split="test", seed=0, closing=True, tweak=None):
    """The lines fairseq-generate prints for ``hyps`` (tokenised, BPE removed): S/T/H/D/P per sentence, the
    sentences in a shuffled (batch) order, then its closing line. ``tweak(lines)`` edits them before writing."""
    order = list(range(len(hyps)))
    random.Random(seed).shuffle(order)
    lines = []
    for i in order:
        score = -0.1 * (i % 7) - 0.25
        if sources is not None:
            lines.append(f"S-{i}\t{sources[i]}")
        if targets is not None:
            lines.append(f"T-{i}\t{targets[i]}")
        lines += [f"H-{i}\t{score}\t{hyps[i]}", f"D-{i}\t{score}\t{hyps[i]}",
                  f"P-{i}\t" + " ".join("-0.5000" for _ in hyps[i].split() + ["</s>"])]
    if closing:
        lines.append(f"Generate {split} with beam=4: BLEU4 = 12.34, 45.6/20.1/10.2/5.3 (BP=1.000, ratio=1.010, "
                     "syslen=100, reflen=99)")
    if tweak:
        lines = tweak(lines)
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    return str(path)


def moses_tokens(lines, lang):
    """The recipes' Moses tokenisation (preparation/side_texts.py moses_tokens: aggressive hyphen splitting, XML
    escapes)."""
    from sacremoses import MosesTokenizer

    tok = MosesTokenizer(lang)
    return [tok.tokenize(x, aggressive_dash_splits=True, escape=True, return_str=True) for x in lines]


def model_tokens(lines, lang):
    """Each committed (detokenised) line in a tokenised form the detokeniser turns back into it exactly: Moses'
    tokens where that round trip holds, else the line itself, on which the detokeniser is checked to be
    idempotent (an unbalanced quote, 'SEEEE".', that Moses' tokens would reopen on the other side)."""
    from fairseq_syntax.evaluation.detokenize import detokenize

    tokens = moses_tokens(lines, lang)
    kept = [i for i, (a, b) in enumerate(zip(lines, detokenize(tokens, lang))) if a != b]
    assert list(detokenize([lines[i] for i in kept], lang)) == [lines[i] for i in kept]
    assert len(kept) <= 2 and sum(a != b for a, b in zip(lines, tokens)) > 0.9 * len(lines)  # detokenising matters
    return [lines[i] if i in kept else t for i, t in enumerate(tokens)]


def mecab_tokens(lines):
    """Japanese in MeCab's words (any segmentation stands for the model's: the spaces are removed again)."""
    from sacrebleu.metrics import BLEU

    split = BLEU(tokenize="ja-mecab").tokenizer
    assert not any(" " in x for x in lines)
    tokens = [split(x) for x in lines]
    assert all("".join(t.split()) == x for t, x in zip(tokens, lines))
    return tokens


def corpus_case(name, tmp_path):
    """(committed JSON's scores, the test set's name, --data, --ref, generate files of the model and its
    baseline, the tokenised texts put in them)."""
    if name == "multi30k":
        raw = require_shared("data", "multi30k", "task1", "raw")
        folder, model, split = os.path.join(RESULTS, "multi30k-en-de", "results"), "dep_rel", "test2016"
        ref, src = os.path.join(raw, "test_2016_flickr.de"), read(os.path.join(raw, "test_2016_flickr.en"))
        data = data_bin(tmp_path / "data-bin", en="moses", de="moses")
        translations = f"{{}}.{split}.txt"

        tokenise, target_tokens = (lambda lines: model_tokens(lines, "de")), (lambda lines: moses_tokens(lines, "de"))
    else:
        corpus = require_shared("data", "small_parallel_enja")
        src_lang, tgt_lang = ("ja", "en") if name == "tanaka-ja-en" else ("en", "ja")
        folder, model, split = os.path.join(RESULTS, name, "results", "amd-epyc"), (
            "dbsa" if tgt_lang == "en" else "rel"), "test"
        src = read(os.path.join(corpus, f"test.{src_lang}"))
        ref = os.path.join(corpus, "test.en")
        if tgt_lang == "ja":  # the recipe's raw Japanese: the corpus's KyTea spaces removed (the recipe's download)
            ref = str(tmp_path / "test.ja")
            with open(ref, "w", encoding="utf-8") as f:
                f.write("".join(x.replace(" ", "") + "\n" for x in read(os.path.join(corpus, "test.ja"))))
        data = data_bin(tmp_path / "data-bin", ja="parser", en="given")
        translations = "{}.txt"

        tokenise = target_tokens = (lambda lines: lines) if tgt_lang == "en" else mecab_tokens  # English: the
        # corpus's own tokens
    with open(os.path.join(folder, f"{model}.json"), encoding="utf-8") as f:
        committed = json.load(f)
    files = {}
    for role, m in (("hyp", model), ("baseline", committed["baseline"])):
        hyps = tokenise(read(os.path.join(folder, "translations", translations.format(m))))
        files[role] = generate_output(tmp_path / f"gen.{m}.txt", hyps, src, target_tokens(read(ref)),
                                      seed=len(files))
    return committed["sets"][split], data, ref, files


@pytest.mark.parametrize("name", ["multi30k", "tanaka-ja-en", "tanaka-en-ja"])
def test_generate_output_scores_as_the_recipes_scored_the_committed_translations(name, tmp_path, capsys):
    """The evaluate command on raw fairseq-generate output equals the recipes' scoring on the committed Tanaka
    and Multi30k translations: the committed (scored, detokenised) translations of a model and its baseline,
    in the tokens the model writes, shuffled into batch order with S/T/H/P lines, score what the committed JSON
    holds (BLEU, chrF, RIBES, the paired bootstrap's p-values), with only --data to say how: En-De Moses-
    detokenised and 13a, Tanaka Ja->En on the corpus's English tokens with RIBES, En->Ja with the spaces
    removed and ja-mecab, RIBES on MeCab's tokens."""
    if name == "tanaka-en-ja":
        pytest.importorskip("MeCab")
    committed, data, ref, files = corpus_case(name, tmp_path)
    r = main(["--data", data, "--ref", ref, "--hyp", files["hyp"], "--baseline", files["baseline"],
              "--write-hyp", str(tmp_path / "scored.txt")])
    for key in ("bleu", "chrf", "ribes", "baseline_bleu", "baseline_ribes"):
        assert (key in r) == (key in committed) and r.get(key, 0) == pytest.approx(committed.get(key, 0), rel=1e-12)
    for key in ("bleu_signature", "chrf_signature", "ribes_tokens", "sentences"):
        assert r.get(key) == committed.get(key), key
    for metric, stored in committed["bootstrap"].items():
        assert r["bootstrap"][metric]["system"]["p_value"] == pytest.approx(stored["system"]["p_value"], rel=1e-12)
        assert r["bootstrap"][metric]["system"]["mean"] == pytest.approx(stored["system"]["mean"], rel=1e-9)
    assert set(r["bootstrap"]) == set(committed["bootstrap"])
    out = capsys.readouterr()
    assert "fairseq-generate output (split test, beam 4" in out.out and "warning" not in out.err
    assert r["length_basis"] == "source"  # the S- lines


def test_order_restored_and_plain_text_unchanged(tmp_path):
    """A generate file and the same translations as plain text in corpus order score alike; --write-hyp writes
    them detokenised in corpus order; a plain file with --data is scored as it is (the record only picks the
    tokenizer and RIBES)."""
    ref = ["Ein Mann im T-Shirt.", "Zwei Hunde spielen im Schnee.", "Eine Frau liest \"Die Zeit\"."]
    tokens = ["Ein Mann im T @-@ Shirt .", "Zwei Hunde spielen im Schnee .", "Eine Frau liest &quot; Die Zeit &quot; ."]
    (tmp_path / "ref.de").write_text("\n".join(ref) + "\n", encoding="utf-8")
    data = data_bin(tmp_path / "bin", en="moses", de="moses")
    gen = generate_output(tmp_path / "gen.txt", tokens, targets=tokens, seed=3)
    out = tmp_path / "scored.txt"
    r = main(["--data", data, "--ref", str(tmp_path / "ref.de"), "--hyp", gen, "--write-hyp", str(out),
              "--bootstrap-samples", "10"])
    assert read(out) == ref and r["bleu"] == pytest.approx(100) and "ribes" not in r
    assert r["scoring"]["target_lang"] == "de" and "Moses" in r["scoring"]["detokenize"]
    plain = main(["--data", data, "--ref", str(tmp_path / "ref.de"), "--hyp", str(out)])
    assert plain["bleu"] == r["bleu"] and plain["inputs"]["hyp"]["read_as"].startswith("plain text")
    # --detokenize none: the tokens as they are; the same file without --data or --detokenize is refused
    tok = main(["--detokenize", "none", "--ref", str(tmp_path / "ref.de"), "--hyp", gen])
    assert tok["bleu"] < 100 and "tok:13a" in tok["bleu_signature"]
    with pytest.raises(OptionError, match="gen.txt is fairseq-generate's output: give --data"):
        main(["--ref", str(tmp_path / "ref.de"), "--hyp", gen])


def test_the_record_chooses_tokenizer_and_ribes(tmp_path, capsys):
    """Japanese parser tokens: spaces removed, ja-mecab, RIBES on (--no-ribes turns it off); the target language
    comes from --ref's extension or --target-lang; a data-bin without a record, or a reference whose name does not
    say the language, is refused with what to give; a tokenised Japanese reference is warned about."""
    pytest.importorskip("MeCab")
    (tmp_path / "ref.ja").write_text("私はテニス部員です。\n彼はつらい人生を送った。\n", encoding="utf-8")
    data = data_bin(tmp_path / "bin", ja="parser", en="given")
    gen = generate_output(tmp_path / "gen.txt", ["私 は テニス 部員 です 。", "彼 は つらい 人生 を 送っ た 。"])
    r = main(["--data", data, "--ref", str(tmp_path / "ref.ja"), "--hyp", gen, "--bootstrap-samples", "10"])
    assert "tok:ja-mecab" in r["bleu_signature"] and r["ribes"] == pytest.approx(100) == r["bleu"]
    assert "ribes" not in main(["--data", data, "--ref", str(tmp_path / "ref.ja"), "--hyp", gen, "--no-ribes"])
    assert "warning" not in capsys.readouterr().err
    (tmp_path / "tok.ja").write_text("私 は テニス 部員 です 。\n彼 は つらい 人生 を 送っ た 。\n", encoding="utf-8")
    main(["--data", data, "--ref", str(tmp_path / "tok.ja"), "--hyp", gen])
    assert "tok.ja: most lines hold spaces, and the hypotheses are scored with theirs" in capsys.readouterr().err
    (tmp_path / "ref.txt").write_text((tmp_path / "ref.ja").read_text(encoding="utf-8"), encoding="utf-8")
    with pytest.raises(OptionError, match="holds en and ja, and the name of --ref .ref.txt. ends in neither"):
        main(["--data", data, "--ref", str(tmp_path / "ref.txt"), "--hyp", gen])
    again = main(["--data", data, "--target-lang", "ja", "--ref", str(tmp_path / "ref.txt"), "--hyp", gen])
    assert again["bleu"] == r["bleu"]
    os.makedirs(tmp_path / "old")
    with pytest.raises(SyntaxDataError, match="preparation.json: missing.*--detokenize"):
        main(["--data", str(tmp_path / "old"), "--ref", str(tmp_path / "ref.ja"), "--hyp", gen])


def _drop(sid):
    """The lines of sentence ``sid`` taken out (a sentence fairseq-generate did not translate)."""
    return lambda lines: [x for x in lines if not re.match(f"[A-Z]-{sid}\t", x)]


@pytest.mark.parametrize("case, tweak, message", [
    ("missing", _drop(2), "no translation of 1 of the 4 sentences of .*ref.de .ids 2.*skip-invalid-size"),
    ("nbest", lambda lines: lines[:-1] + [x.replace("\t-", "\t-9") for x in lines if x.startswith("D-1\t")]
     + lines[-1:], "a second D- line for sentence 1 .*--nbest"),
    ("other split", lambda lines: lines[:-1] + ["H-7\t-1\tx", "D-7\t-1\tx"] + lines[-1:],
     "sentence ids up to 7, and .*ref.de has 4 lines"),
    ("H without D", lambda lines: [x for x in lines if not x.startswith("D-")], "4 H- lines and no D- lines"),
    ("cut short", lambda lines: lines[:-1], "without fairseq-generate's closing line"),
    ("no --remove-bpe", lambda lines: [x.replace("Hund", "Hu@@ nd") for x in lines], "without --remove-bpe"),
    ("fairseq's --tokenizer", lambda lines: [x.replace("Hund .", "Hund.") if x.startswith("D-") else x
                                             for x in lines], "fairseq-generate's own --tokenizer"),
])
def test_mistakes_are_refused_with_what_to_do(case, tweak, message, tmp_path):
    tokens = ["Ein Hund .", "Zwei Hund .", "Drei Hund .", "Vier Hund ."]
    (tmp_path / "ref.de").write_text("Ein Hund.\nZwei Hund.\nDrei Hund.\nVier Hund.\n", encoding="utf-8")
    gen = generate_output(tmp_path / "gen.txt", tokens, targets=tokens, tweak=tweak)
    data = data_bin(tmp_path / "bin", en="moses", de="moses")
    with pytest.raises(SyntaxDataError, match=message):
        main(["--data", data, "--ref", str(tmp_path / "ref.de"), "--hyp", gen])


def test_one_line_from_the_command_and_a_wrong_reference_warned(tmp_path):
    """Through the console script: the error as one line with status 1; and a --ref that is not what the T- lines
    say fairseq-generate translated (another test set of the same size) scores with a warning."""
    tokens = ["Ein Hund .", "Zwei Katzen ."]
    (tmp_path / "ref.de").write_text("Ein Hund.\nZwei Katzen.\n", encoding="utf-8")
    (tmp_path / "other.de").write_text("Ein Haus.\nDrei Bäume.\n", encoding="utf-8")
    data = data_bin(tmp_path / "bin", en="moses", de="moses")
    gen = generate_output(tmp_path / "gen.txt", tokens, targets=tokens, tweak=_drop(1))
    p = run([tool("fairseq-syntax-evaluate"), "--data", data, "--ref", str(tmp_path / "ref.de"), "--hyp", gen],
            check=False)
    errors = [x for x in p.stderr.splitlines() if x.startswith("error:")]
    assert p.returncode == 1 and len(errors) == 1 and "Traceback" not in p.stderr
    assert errors[0].startswith(f"error: {gen}: no translation of 1 of the 2 sentences")
    gen = generate_output(tmp_path / "gen.txt", tokens, targets=tokens)
    p = run([tool("fairseq-syntax-evaluate"), "--data", data, "--ref", str(tmp_path / "other.de"), "--hyp", gen,
             "--bootstrap-samples", "10"])
    assert "warning: " in p.stderr and "is it the reference of the split it translated" in p.stderr
    assert p.stdout.startswith(f"hyp: {gen}: fairseq-generate output (split test, beam 4, 2 sentences")
