"""The papers' training-pair filters (fairseq_syntax.preparation.pair_filter): length and language identification."""
import pytest

from conftest import require_shared
from fairseq_syntax.preparation.pair_filter import language_keep, length_keep


def test_length_keep_by_hand():
    lengths = [(3, 4), (100, 100), (101, 90), (10, 16), (10, 15), (0, 2), (1, 1)]
    assert length_keep(lengths) == [True] * 7  # no limits
    assert length_keep(lengths, max_words=100) == [True, True, False, True, True, True, True]
    # ratio: longer <= 1.5 x shorter (an empty side counts as length 1)
    assert length_keep(lengths, max_ratio=1.5) == [True, True, True, False, True, False, True]
    assert length_keep(lengths, max_words=100, max_ratio=1.5) == [True, True, False, False, True, False, True]


def _pud_pairs():
    from fairseq_syntax.data.trees.conllu import read_conllu

    def text(lang, name):
        path = require_shared("data", f"UD_{name}-PUD", f"{lang}_pud-ud-test.conllu")
        return [next(c for c in s.comments if c.startswith("# text = "))[9:] for s in read_conllu(path)]

    return list(zip(text("en", "English"), text("de", "German")))[:60]


@pytest.mark.parametrize("tool", ["langid", "langdetect"])
def test_language_keep_drops_pairs_in_the_wrong_languages(tool):
    pytest.importorskip(tool)
    pairs = _pud_pairs()  # real news sentences: English / German translations
    swapped = {3, 17, 29, 44, 58}
    mixed = [(b, a) if i in swapped else (a, b) for i, (a, b) in enumerate(pairs)]
    keep = language_keep(mixed, ("en", "de"), tool)
    assert all(not keep[i] for i in swapped)
    assert sum(keep) >= len(pairs) - len(swapped) - 2  # the tools may miss an odd short sentence
    assert language_keep([("Hello there, how are you today?", "123 456")], ("en", "de"), tool) == [False]


def test_language_keep_unknown_tool():
    with pytest.raises(ValueError, match="unknown language identifier 'fasttext'"):
        language_keep([("a", "b")], ("en", "de"), "fasttext")
