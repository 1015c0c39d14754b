"""CoNLL-U reading: multiword tokens, empty nodes, and malformed input."""
import io

import pytest

from fairseq_syntax.data.trees.conllu import read_conllu, write_conllu
from fairseq_syntax.data.alignment.subword_align import align_sentence
from fairseq_syntax.data.trees.tree import token_tree
from fairseq_syntax.errors import SyntaxDataError

ZUM = """# text = Er geht zum Haus .
1\tEr\ter\tPRON\t_\t_\t2\tnsubj\t_\t_
2\tgeht\tgehen\tVERB\t_\t_\t0\troot\t_\t_
3-4\tzum\t_\t_\t_\t_\t_\t_\t_\t_
3\tzu\tzu\tADP\t_\t_\t5\tcase\t_\t_
4\tdem\tder\tDET\t_\t_\t5\tdet\t_\t_
5\tHaus\tHaus\tNOUN\t_\t_\t2\tobl\t_\t_
6\t.\t.\tPUNCT\t_\t_\t2\tpunct\t_\t_

"""

EMPTY = """1\tSue\tSue\tPROPN\t_\t_\t2\tnsubj\t_\t_
2\tlikes\tlike\tVERB\t_\t_\t0\troot\t_\t_
3\tcoffee\tcoffee\tNOUN\t_\t_\t2\tobj\t_\t_
4\tand\tand\tCCONJ\t_\t_\t5\tcc\t_\t_
5\tBill\tBill\tPROPN\t_\t_\t2\tconj\t_\t_
5.1\tlikes\tlike\tVERB\t_\t_\t_\t_\t2:conj\t_
6\ttea\ttea\tNOUN\t_\t_\t5\torphan\t_\t_

"""


def read(text, name="x.conllu"):
    return list(read_conllu(io.StringIO(text), name))


def test_multiword_token_words_and_surface():
    (s,) = read(ZUM)
    assert s.words == ["Er", "geht", "zu", "dem", "Haus", "."]
    assert s.tokens == ["Er", "geht", "zum", "Haus", "."]
    assert s.token_of_word == [0, 1, 2, 2, 3, 4]
    assert s.heads == [2, 0, 5, 5, 2, 2]


def test_multiword_token_collapse_surface_tree():
    (s,) = read(ZUM)
    heads, labels = token_tree(s.heads, s.labels, s.token_of_word)
    # zum (token 3) takes the head of its shallowest word (zu -> Haus = token 4)
    assert heads == [2, 0, 4, 2, 2]
    assert labels == ["nsubj", "root", "case", "obl", "punct"]


def test_multiword_alignment_surface_and_words():
    (s,) = read(ZUM)
    w, h, lab = align_sentence(s, "Er geht z@@ um Haus .", "<bpe>")
    assert w == [1, 2, 3, 3, 4, 5] and h == [2, 0, 4, 4, 2, 2]
    w, h, lab = align_sentence(s, "Er geht zu dem Ha@@ us .", "<bpe>")
    assert w == [1, 2, 3, 4, 5, 5, 6] and h == [2, 0, 5, 5, 2, 2, 2]


def test_multiword_collapse_cannot_make_a_cycle():
    # span {2,3}: word 2's head is outside (4), 4's head is 3 (inside the span)
    heads = [0, 4, 1, 3]
    t_heads, _ = token_tree(heads, ["x"] * 4, [0, 1, 1, 2])
    # representative of the span is word 3 (depth 1), its head word 1 -> token 1
    assert t_heads == [0, 1, 2]


def test_empty_nodes_are_skipped():
    (s,) = read(EMPTY)
    assert s.words == ["Sue", "likes", "coffee", "and", "Bill", "tea"]
    assert s.heads == [2, 0, 2, 5, 2, 5]


def test_roundtrip_writer():
    sents = read(ZUM + EMPTY)
    out = io.StringIO()
    write_conllu(sents, out)
    again = read(out.getvalue())
    assert [(s.words, s.tokens, s.heads, s.labels) for s in again] == [
        (s.words, s.tokens, s.heads, s.labels) for s in sents
    ]


def bad(text, match):
    with pytest.raises(SyntaxDataError, match=match) as e:
        read(text, "bad.conllu")
    return str(e.value)


def test_head_out_of_range():
    msg = bad("1\ta\t_\t_\t_\t_\t0\troot\t_\t_\n2\tb\t_\t_\t_\t_\t7\tdep\t_\t_\n\n", "HEAD 7 is out of range")
    assert msg.startswith("bad.conllu:2:")


def test_non_integer_head():
    msg = bad("1\ta\t_\t_\t_\t_\t0\troot\t_\t_\n2\tb\t_\t_\t_\t_\tx\tdep\t_\t_\n\n", "HEAD 'x' is not")
    assert msg.startswith("bad.conllu:2:")


def test_cycle():
    bad("1\ta\t_\t_\t_\t_\t0\troot\t_\t_\n2\tb\t_\t_\t_\t_\t3\tdep\t_\t_\n3\tc\t_\t_\t_\t_\t2\tdep\t_\t_\n\n",
        r"bad.conllu:1 \(sentence 1\): cycle through words \[2, 3\]")


def test_no_root():
    bad("1\ta\t_\t_\t_\t_\t2\tdep\t_\t_\n2\tb\t_\t_\t_\t_\t1\tdep\t_\t_\n\n", "no root")


def test_two_roots():
    bad("1\ta\t_\t_\t_\t_\t0\troot\t_\t_\n2\tb\t_\t_\t_\t_\t0\troot\t_\t_\n\n", "2 roots")


def test_wrong_column_count_and_id_order():
    bad("1\ta\t_\t_\t0\troot\n\n", "expected 10 tab-separated columns, found 6")
    bad("1\ta\t_\t_\t_\t_\t0\troot\t_\t_\n3\tb\t_\t_\t_\t_\t1\tdep\t_\t_\n\n", "word ID 3 out of order")


def test_second_sentence_line_numbers():
    text = ZUM + "1\ta\t_\t_\t_\t_\t0\troot\t_\t_\n2\tb\t_\t_\t_\t_\t9\tdep\t_\t_\n\n"
    msg = bad(text, "out of range")
    assert msg.startswith("bad.conllu:11:")


def test_form_with_space_is_one_token():
    (s,) = read("1\tparce que\t_\t_\t_\t_\t2\tmark\t_\t_\n2\tok\t_\t_\t_\t_\t0\troot\t_\t_\n\n")
    assert s.tokens == ["parce_que", "ok"]


def test_self_loop():
    bad("1\ta\t_\t_\t_\t_\t0\troot\t_\t_\n2\tb\t_\t_\t_\t_\t2\tdep\t_\t_\n\n", "word 2 is its own head")


def test_depths_from_check_tree():
    from fairseq_syntax.data.trees.tree import check_tree

    # 1 <- 2 <- 3(root) -> 4 -> 5
    assert check_tree([2, 3, 0, 3, 4], "x") == [2, 1, 0, 1, 2]


def test_overlapping_or_repeated_multiword_ranges():
    base = "1\ta\t_\t_\t_\t_\t0\troot\t_\t_\n2\tb\t_\t_\t_\t_\t1\tdep\t_\t_\n"
    bad(base + "3-4\tzum\t_\t_\t_\t_\t_\t_\t_\t_\n3-4\tzum\t_\t_\t_\t_\t_\t_\t_\t_\n"
        "3\tzu\t_\t_\t_\t_\t1\tdep\t_\t_\n4\tdem\t_\t_\t_\t_\t1\tdep\t_\t_\n\n", r"bad.conllu:4: multiword token range 3-4")
    bad(base + "3-3\tz\t_\t_\t_\t_\t_\t_\t_\t_\n3\tz\t_\t_\t_\t_\t1\tdep\t_\t_\n\n", "must span at least two words")


def test_byte_order_mark(tmp_path):
    p = tmp_path / "bom.conllu"
    p.write_bytes("\ufeff1\ta\t_\t_\t_\t_\t0\troot\t_\t_\n\n".encode("utf-8"))
    (s,) = list(read_conllu(str(p)))
    assert s.words == ["a"]


def _brute_force_best_tree(s):
    import itertools

    from fairseq_syntax.data.trees.tree import check_tree

    n = len(s) - 1
    best, best_score = None, -float("inf")
    for heads in itertools.product(range(n + 1), repeat=n):
        try:
            check_tree(list(heads), "x")
        except SyntaxDataError:
            continue
        score = sum(s[w + 1, h] for w, h in enumerate(heads))
        if score > best_score:
            best, best_score = list(heads), score
    return best, best_score


def test_max_spanning_tree_matches_brute_force():
    import numpy as np

    from fairseq_syntax.data.trees.decoding import max_spanning_tree
    from fairseq_syntax.data.trees.tree import check_tree

    rng = np.random.default_rng(0)
    for trial in range(60):
        n = int(rng.integers(2, 6))
        s = rng.normal(size=(n + 1, n + 1))
        if trial % 3 == 0:
            s[rng.random(s.shape) < 0.3] = -np.inf  # some arcs ruled out (future-masked)
        heads = max_spanning_tree(s)
        check_tree(heads, "mst")  # a tree with one root
        _, best = _brute_force_best_tree(np.where(np.isfinite(s), s, -1e9))
        assert sum(np.where(np.isfinite(s), s, -1e9)[w + 1, h] for w, h in enumerate(heads)) == pytest.approx(best)



def test_sentence_line_is_its_first_line_also_when_a_multiword_token_opens_it():
    text = "1\ta\t_\t_\t_\t_\t0\troot\t_\t_\n\n1-2\tzum\t_\t_\t_\t_\t_\t_\t_\t_\n" \
        "1\tzu\t_\t_\t_\t_\t3\tcase\t_\t_\n2\tdem\t_\t_\t_\t_\t3\tdet\t_\t_\n3\tHaus\t_\t_\t_\t_\t0\troot\t_\t_\n\n"
    first, second = read(text)
    assert (first.line, second.line) == (1, 3)  # the range line, not the first word line (4)
    assert second.word_lines == [4, 5, 6] and second.tokens == ["zum", "Haus"]
