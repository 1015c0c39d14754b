"""examples/tanaka-ja-en and tanaka-en-ja: one preparation with a parser per side (GiNZA for Japanese, UDPipe
for English), both directions trained on it, scored on tokens that do not depend on the model's segmentation;
and prepare's per-side parsers, loaded (and refused) before any parsing. Skipped without the shared data, GiNZA or
ufal.udpipe."""
import json
import os
import re

import pytest

from helpers import ROOT, run, tool
from test_recipes import listed_models, recipe

SLICE = {"train": 200, "dev": 40, "test": 30}


def _parsers():
    pytest.importorskip("ufal.udpipe")
    pytest.importorskip("ja_ginza")
    from conftest import require_shared

    return require_shared("models", "en_ewt_udpipe_small.udpipe")


def _tiny_corpus(tmp_path):
    from conftest import require_shared

    corpus = require_shared("data", "small_parallel_enja")
    d = tmp_path / "corpus"
    d.mkdir()
    for lang in ("ja", "en"):
        lines = open(os.path.join(corpus, f"dev.{lang}"), encoding="utf-8").read().splitlines()[:6]
        if lang == "ja":
            lines = [line.replace(" ", "") for line in lines]  # untokenised: GiNZA tokenises it
        (d / f"train.{lang}").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return str(d / "train")


@pytest.mark.parametrize("side", ["source", "target"])
def test_a_wrong_parser_model_fails_before_any_parsing(side, tmp_path):
    """prepare with GiNZA for the Japanese source and UDPipe for the English target: a wrong model on either
    side fails with one line naming that side and model, before a sentence is parsed (no parse chunk)."""
    udpipe = _parsers()
    pref = _tiny_corpus(tmp_path)
    models = {"source": "ja_ginza", "target": udpipe}
    models[side] = "ja_ginzzza" if side == "source" else str(tmp_path / "missing.udpipe")
    dest = tmp_path / "bin"
    p = run([tool("fairseq-syntax-prepare"), "-s", "ja", "-t", "en", "--trainpref", pref, "--destdir", str(dest),
             "--parser-source", "spacy", "--parser-model-source", models["source"], "--parser-target", "udpipe",
             "--parser-model-target", models["target"], "--pretokenized", "target", "--bpe-merges", "20",
             "--no-progress"], check=False)
    assert p.returncode == 1
    errors = [line for line in p.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "Traceback" not in p.stderr
    lang = "ja" if side == "source" else "en"
    assert f"error: {side} side ({lang}): " in errors[0] and os.path.basename(models[side]) in errors[0]
    parsed = [f for f in os.listdir(dest / "work")] if (dest / "work").exists() else []
    assert not any("conllu" in f for f in parsed), parsed


def test_per_side_parsers_and_tokens(tmp_path):
    """The same command with the right models: the Japanese tokens are GiNZA's (the text without spaces, rejoined,
    is the input), the English keeps the given tokens (--pretokenized target)."""
    udpipe = _parsers()
    pref = _tiny_corpus(tmp_path)
    dest = tmp_path / "bin"
    run([tool("fairseq-syntax-prepare"), "-s", "ja", "-t", "en", "--trainpref", pref, "--destdir", str(dest),
         "--parser-source", "spacy", "--parser-model-source", "ja_ginza", "--parser-target", "udpipe",
         "--parser-model-target", udpipe, "--pretokenized", "target", "--bpe-merges", "20", "--no-progress"])
    ja = (dest / "work" / "train.tok.ja").read_text(encoding="utf-8").splitlines()
    en = (dest / "work" / "train.tok.en").read_text(encoding="utf-8").splitlines()
    assert [line.replace(" ", "") for line in ja] == open(pref + ".ja", encoding="utf-8").read().splitlines()
    assert all(len(line.split()) > 1 for line in ja)  # tokenised by the parser
    assert en == open(pref + ".en", encoding="utf-8").read().splitlines()
    for lang in ("ja", "en"):
        assert (dest / f"train.ja-en.{lang}.heads.idx").exists()


@pytest.mark.slow
def test_tanaka_recipe_on_real_slice_both_directions(tmp_path):
    """prepare (the corpus's first lines; GiNZA + UDPipe) -> train 2 updates -> evaluate, Ja->En and En->Ja on
    the one data-bin; English scored on the corpus's tokens, Japanese detokenised and scored with sacreBLEU's
    ja-mecab tokenizer; RIBES and the bootstrap test against the transformer."""
    _parsers()
    pytest.importorskip("MeCab")
    from conftest import require_shared

    from fairseq_syntax.data.trees.conllu import read_conllu

    corpus = require_shared("data", "small_parallel_enja")
    part = tmp_path / "tanaka"
    part.mkdir()
    for name, n in SLICE.items():
        for lang in ("ja", "en"):
            with open(os.path.join(corpus, f"{name}.{lang}"), encoding="utf-8") as f:
                (part / f"{name}.{lang}").write_text("".join(next(f) for _ in range(n)), encoding="utf-8")
    work = tmp_path / "work"
    ja_en, en_ja = str(work / "tanaka-ja-en"), str(work / "tanaka-en-ja")
    assert "transformer" in listed_models("tanaka-en-ja", en_ja) and "syncattn" not in listed_models(
        "tanaka-en-ja", en_ja)
    prep = recipe("tanaka-en-ja", "prepare", "transformer", "dep_rel", TANAKA_DIR=str(part), WORK=en_ja)
    assert "data shared with tanaka-ja-en" in prep.stderr and not os.path.exists(os.path.join(en_ja, "raw"))
    raw_ja = open(os.path.join(ja_en, "raw", "test.ja"), encoding="utf-8").read().splitlines()
    assert len(raw_ja) == 30 and not any(" " in line for line in raw_ja)  # KyTea's spaces removed
    for split, n in (("train", 200), ("valid", 40), ("test", 30)):
        for lang in ("ja", "en"):
            assert len(list(read_conllu(os.path.join(ja_en, "text", f"{split}.{lang}.conllu")))) == n
    tok_en = open(os.path.join(ja_en, "main", "work", "test.tok.en"), encoding="utf-8").read().splitlines()
    assert tok_en == open(part / "test.en", encoding="utf-8").read().splitlines()  # the corpus's tokens
    for d, work_dir in (("tanaka-ja-en", ja_en), ("tanaka-en-ja", en_ja)):
        for model in ("transformer", "dep_rel"):  # the baseline first: dep_rel is tested against it
            recipe(d, "train", model, SAMPLE=1, WORK=work_dir)
            out = recipe(d, "evaluate", model, "--max-len-b", "10", SAMPLE=1, WORK=work_dir).stdout
            assert re.search(r"^RIBES \d+\.\d+", out, flags=re.M)
            scores = json.load(open(os.path.join(work_dir, "eval", model, "scores.json")))
            assert scores["sentences"] == 30 and "ribes" in scores
            tok = "tok:ja-mecab" if d == "tanaka-en-ja" else "tok:none"
            assert tok in scores["bleu_signature"] and scores["ribes_tokens"] == tok[4:]
            assert ("bootstrap" in scores) == (model == "dep_rel")
            if model == "dep_rel":
                assert set(scores["bootstrap"]) == {"bleu", "chrf", "ribes"}
    hyp = open(os.path.join(en_ja, "eval", "dep_rel", "hyp.txt"), encoding="utf-8").read().splitlines()
    assert len(hyp) == 30 and not any(" " in line for line in hyp)  # Japanese output detokenised
    _packed_self_parsing_models_translate_raw_text_without_a_parser(ja_en, en_ja, tmp_path)


#: run in one fresh process: each packed model FOLDER translates its raw LINES with its own parse head's trees, in
#: the order given (JSON: [[folder, lines, hide], ...]); for a model with hide, no parser package can be imported
#: (the first; the block is lifted after it), otherwise every spaCy pipeline loaded is recorded with its
#: components. Prints one JSON line per model: the translations, the pipelines and the parser modules imported.
_TRANSLATE_RAW = '''
import json, sys
from fairseq_syntax.inference.hub import from_pretrained
PARSERS = ("stanza", "spacy", "ufal", "ufal.udpipe", "ginza", "ja_ginza")
for folder, lines, hide in json.loads(sys.argv[1]):
    loaded = []
    if hide:  # no parser package can be imported
        for name in PARSERS:
            sys.modules[name] = None
    else:  # every spaCy pipeline loaded, with its components
        for name in PARSERS:
            if sys.modules.get(name, 0) is None:
                del sys.modules[name]
        import spacy
        load = spacy.load
        def recording_load(*args, **kwargs):
            nlp = load(*args, **kwargs)
            loaded.append(list(nlp.pipe_names))
            return nlp
        spacy.load = recording_load
    out = from_pretrained(folder, inference_parser="self").translate(lines, beam=2, max_len_b=5)
    print(json.dumps({"translations": out, "pipelines": loaded,
                      "parsers": sorted(k for k in sys.modules if k.split(".")[0] in ("stanza", "ufal")
                                        and sys.modules[k] is not None)}))
'''


def _packed_self_parsing_models_translate_raw_text_without_a_parser(ja_en, en_ja, tmp_path):
    """dep_rel_self trained both ways (2 updates), packed: En->Ja translates raw English where no parser package
    can be imported; Ja->En translates raw Japanese with GiNZA's tokenizer alone (ja_ginza loaded with no
    pipeline component: SudachiPy's tokenizer and dictionary), UDPipe and stanza not imported. Both in one
    fresh process (no parser imported before the first), one after the other."""
    import subprocess
    import sys

    from helpers import env

    jobs = []
    for d, work_dir, lines, hide in (("tanaka-en-ja", en_ja, ["i like cats .", "where is the station ?"], True),
                                     ("tanaka-ja-en", ja_en, ["猫が好きです。", "駅はどこですか。"], False)):
        recipe(d, "train", "dep_rel_self", SAMPLE=1, WORK=work_dir)
        folder = str(tmp_path / f"packed-{d}")
        data = os.path.join(os.path.dirname(work_dir), "tanaka-ja-en", "main", "data-bin")
        run([tool("fairseq-syntax-pack"), data, os.path.join(work_dir, "checkpoints", "dep_rel_self",
                                                             "checkpoint_last.pt"), "-o", folder])
        jobs.append([folder, lines, hide])
    p = subprocess.run([sys.executable, "-c", _TRANSLATE_RAW, json.dumps(jobs)], capture_output=True, text=True,
                       env={**env(), "PYTHONPATH": ROOT})
    assert p.returncode == 0, p.stderr[-3000:]
    outs = [json.loads(line) for line in p.stdout.strip().splitlines()[-2:]]
    for (_, _, hide), out in zip(jobs, outs):
        assert len(out["translations"]) == 2 and out["parsers"] == [], out
        assert out["pipelines"] == ([] if hide else [[]]), out  # Ja->En: one pipeline, no component
