"""The UDPipe 1 models of the shared folder (conftest.SHARED, its models/) parse at the quality the README beside
them states (skipped when they or ufal.udpipe are absent).

Each model parses held-out gold syntactic words through the project's UDPipe backend (pre-tokenised input,
UDPipe's own tags) and its unlabelled attachment score against the gold trees must sit in a band around the
figure in that models/README.md: German, UD German PUD sentences 801-1000 in file order (never seen in
training; README: UAS 77.4, 3243/4189 words); English, a slice of UD English EWT test (README: UAS 82.2 on the
whole test set)."""
import pytest

from conftest import require_shared


def gold_and_parsed(model_name, treebank, sentences):
    """(gold sentences, the model's parses of their gold words) for a slice of a treebank."""
    pytest.importorskip("ufal.udpipe")
    from fairseq_syntax.data.trees.conllu import read_conllu
    from fairseq_syntax.parsing import build_parser

    model = require_shared("models", model_name)
    path = require_shared("data", *treebank)
    gold = list(read_conllu(path))[sentences]
    parser = build_parser("udpipe", model_path=model, pretokenized=True)
    lines = [" ".join(s.words) for s in gold]  # gold syntactic words ('zu dem', not 'zum')
    parsed = parser.parse(lines)
    assert len(parsed) == len(gold)
    for g, p in zip(gold, parsed):
        assert p.words == g.words  # the parser kept the given words: heads compare position by position
    return gold, parsed


def uas(gold, parsed):
    correct = sum(gh == ph for g, p in zip(gold, parsed) for gh, ph in zip(g.heads, p.heads))
    total = sum(len(g) for g in gold)
    return 100.0 * correct / total, total


def test_german_udpipe_model_on_held_out_pud():
    gold, parsed = gold_and_parsed("de_udpipe_small.udpipe", ("UD_German-PUD", "de_pud-ud-test.conllu"),
                                   slice(800, 1000))
    score, words = uas(gold, parsed)
    assert len(gold) == 200 and words == 4189  # the README's held-out set (PUD 801-1000)
    assert 74.0 <= score <= 81.0, f"German UAS {score:.1f} on PUD 801-1000 (README: 77.4)"


def test_english_udpipe_model_on_ewt_test_slice():
    gold, parsed = gold_and_parsed("en_ewt_udpipe_small.udpipe", ("UD_English-EWT", "en_ewt-ud-test.conllu"),
                                   slice(0, 600))
    score, words = uas(gold, parsed)
    assert words > 5000
    assert 78.0 <= score <= 87.0, f"English UAS {score:.1f} on EWT test sentences 1-600 (README: 82.2 on all)"
