"""The block reader and block aligner say exactly what read_conllu and align_sentence say.

The array path (fairseq_syntax.data.trees.conllu_blocks, subword_align.iter_aligned_blocks) must give the same
per-subword fields, and the same errors naming the same file and line, as reading sentence by sentence.
Random CoNLL-U and BPE texts, valid and broken in the ways real files are, are run through both with small
blocks (so that sentences fall on every kind of block boundary), and the UD treebanks are read whole.
"""
import os
import random

import numpy as np
import pytest

from conftest import shared_path
from fairseq_syntax.data.trees.conllu import read_conllu
from fairseq_syntax.data.trees.conllu_blocks import ColumnBlock, LineBlock, columns_from_text, read_blocks
from fairseq_syntax.data.alignment.subword_align import align_sentence, iter_aligned_blocks
from fairseq_syntax.errors import SyntaxDataError

SHARED = shared_path("data")  # FAIRSEQ_SYNTAX_SHARED, else ../shared beside the checkout
FORMS = ["a", "bb", "Haus", "zum", "été", "日本語", "x@@", "@@", "n't", "01", "a\xadb", "-", "."]
LABELS = ["nsubj", "obj", "root", "nmod:poss", "compound:prt", "dép", "", "a-very-long-label:subtype"]


def _tree(rng, n):
    order = list(range(n))
    rng.shuffle(order)
    heads = [0] * n
    for i, w in enumerate(order[1:], 1):
        heads[w] = order[rng.randrange(i)] + 1
    return heads


def random_sentence(rng):
    """CoNLL-U lines of one sentence (sometimes broken) and its (tokens, words)."""
    n = rng.randint(1, 7)
    words = [rng.choice(FORMS) for _ in range(n)]
    heads = [str(h) for h in _tree(rng, n)]
    labels = [rng.choice(LABELS) for _ in range(n)]
    ids = [str(i + 1) for i in range(n)]
    if rng.random() < 0.04:  # a broken tree or HEAD
        i = rng.randrange(n)
        heads[i] = rng.choice(["0", str(i + 1), str(n + 1), "_", "\u0663", "01", "99999999999999"])
    if rng.random() < 0.02:
        ids[rng.randrange(n)] = rng.choice(["7", "1", "\u0661", "x"])
    if rng.random() < 0.03:
        words[rng.randrange(n)] = rng.choice(["a b", "x\xa0y", "", "t\u2003u"])
    ranges = {}
    w = 0
    while w < n - 1:
        if rng.random() < 0.25:
            b = min(n - 1, w + rng.randint(1, 2))
            ranges[w] = (f"{w + 1}-{b + 1}", rng.choice(["zum", "au", "can't", "im Haus"]))
            w = b + 1
        else:
            w += 1
    if ranges and rng.random() < 0.05:  # a broken range
        w = rng.choice(list(ranges))
        ranges[w] = (rng.choice([f"{w + 1}-{w + 1}", f"{w + 2}-{w + 3}", f"{w + 1}-{n + 2}", f"{w + 1}-x"]), "zz")
    lines = []
    if rng.random() < 0.5:
        lines.append("# sent_id = s")
    if rng.random() < 0.2:
        lines.append("# text\twith a tab")
    tokens = []
    covered = 0
    for i in range(n):
        if i in ranges:
            ident, form = ranges[i]
            lines.append(f"{ident}\t{form}\t_\t_\t_\t_\t_\t_\t_\t_")
            tokens.append(form.replace(" ", "_"))
            a, _, b = ident.partition("-")
            covered = int(b) if b.isdigit() else 0
        if rng.random() < 0.03:
            lines.append(f"{i}.1\tnull\t_\t_\t_\t_\t_\t_\t_\t_")
        if i + 1 > covered:
            tokens.append(words[i])
        cols = [ids[i], words[i], "_", "_", "_", "_", heads[i], labels[i], "_", "_"]
        if rng.random() < 0.01:
            cols = cols[:9] if rng.random() < 0.5 else cols + ["x"]
        lines.append("\t".join(cols))
        if rng.random() < 0.02:
            lines.append("# a comment between words")
    if rng.random() < 0.01:
        lines.insert(rng.randrange(len(lines) + 1), rng.choice(["garbage", "3-4\tzz\t_\t_\t_\t_\t_\t_\t_\t_"]))
    return lines, tokens, words


def random_files(rng, d):
    conllu_lines, bpe_lines = [], []
    for _ in range(rng.randint(0, 12)):
        lines, tokens, words = random_sentence(rng)
        conllu_lines += lines
        r = rng.random()
        conllu_lines += [""] if r < 0.9 else [] if r < 0.93 else ["", ""] if r < 0.96 else ["  "]
        if rng.random() < 0.03:
            conllu_lines += ["# a comment-only paragraph", ""]
        units = tokens if rng.random() < 0.6 else words
        units = [u.replace(" ", "_").replace("\xa0", "_") for u in units]
        subs = []
        for u in units:
            if len(u) > 2 and rng.random() < 0.7:
                k = rng.randrange(1, len(u))
                subs += [u[:k] + "@@", u[k:]]
            else:
                subs.append(u)
        line = " ".join(subs)
        r = rng.random()
        if r < 0.02:
            line = line.replace(" ", "  ", 1)
        elif r < 0.04:
            line = line + " "
        elif r < 0.05:
            line = line.replace(" ", "\t", 1)
        elif r < 0.06:
            line = "@@ " + line
        elif r < 0.07:
            line = line + " wrong"
        elif r < 0.08:
            line = ""
        elif r < 0.09:
            line = line.replace(" ", "\xa0", 1)
        bpe_lines.append(line)
    r = rng.random()
    if r < 0.03 and bpe_lines:
        bpe_lines.pop()
    elif r < 0.06:
        bpe_lines.append("extra line")
    conllu = "\n".join(conllu_lines) + ("\n" if rng.random() < 0.9 else "")
    bpe = "\n".join(bpe_lines) + ("\n" if bpe_lines and rng.random() < 0.9 else "")
    newline = "\r\n" if rng.random() < 0.05 else "\n"
    c, b = os.path.join(d, "x.conllu"), os.path.join(d, "x.bpe")
    with open(c, "w", encoding="utf-8", newline=newline) as f:
        f.write(conllu)
    with open(b, "w", encoding="utf-8") as f:
        f.write(bpe)
    return c, b


def reference_alignment(conllu, bpe, units, marker="@@"):
    """Sentence by sentence, as preprocess aligned before the block path: (outputs, error text or None)."""
    out = []
    try:
        sents = read_conllu(conllu)
        with open(bpe, encoding="utf-8") as f:
            lineno = 0
            for lineno, line in enumerate(f, 1):
                sent = next(sents, None)
                if sent is None:
                    raise SyntaxDataError(
                        bpe, f"line count mismatch: {conllu} has {lineno - 1} sentences but this file has more "
                        f"lines (line {lineno} has no parse)")
                out.append(align_sentence(sent, line, f"{bpe}:{lineno}", units, marker))
            extra = next(sents, None)
            if extra is not None:
                raise SyntaxDataError(
                    conllu, f"line count mismatch: {bpe} has {lineno} lines but this file has more sentences "
                    f"(the sentence at line {extra.line} has no text line)")
    except (SyntaxDataError, ValueError) as e:
        return out, f"{type(e).__name__}: {e}"
    return out, None


def block_alignment(conllu, bpe, units, block_chars, marker="@@"):
    out = []
    try:
        for block in iter_aligned_blocks(conllu, bpe, units, marker, progress=False, block_chars=block_chars):
            out += list(block.sentences())
    except (SyntaxDataError, ValueError) as e:
        return out, f"{type(e).__name__}: {e}"
    return out, None


def reference_sentences(conllu):
    out = []
    try:
        for s in read_conllu(conllu):
            out.append((s.words, s.heads, s.labels, s.tokens, s.token_of_word))
    except (SyntaxDataError, ValueError) as e:
        return out, f"{type(e).__name__}: {e}"
    return out, None


def block_sentences(conllu, block_chars):
    out = []
    try:
        for block in read_blocks(conllu, block_chars):
            if isinstance(block, LineBlock):
                out += [(s.words, s.heads, s.labels, s.tokens, s.token_of_word) for s in block.read()]
                continue
            lines = block.forms.split("\n")
            for k in range(len(block)):
                a, b = block.starts[k], block.starts[k + 1]
                words = lines[k].split(" ")
                tokens, token_of_word = block.multiword.get(k, (words, list(range(len(words)))))
                out.append((words, block.heads[a:b].tolist(), [block.label_names[i] for i in block.labels[a:b]],
                            tokens, token_of_word))
    except (SyntaxDataError, ValueError) as e:
        return out, f"{type(e).__name__}: {e}"
    return out, None


def _same(got, ref, case):
    """The same outputs and the same error (a block stops at its error, so the outputs before an error are
    those of the blocks before it)."""
    assert got[1] == ref[1], case
    if ref[1] is None:
        assert got[0] == ref[0], case
    else:
        assert got[0] == ref[0][:len(got[0])], case


def test_random_texts_read_and_align_as_sentence_by_sentence(tmp_path):
    rng = random.Random(7)
    kinds = {"column": 0, "line": 0, "errors": 0}
    for case in range(1500):
        c, b = random_files(rng, str(tmp_path))
        block_chars = rng.choice([1, 40, 200, 1 << 20])
        _same(block_sentences(c, block_chars), reference_sentences(c), case)
        units = rng.choice(["auto", "auto", "surface", "words"])
        ref = reference_alignment(c, b, units)
        _same(block_alignment(c, b, units, block_chars), ref, case)
        kinds["errors"] += ref[1] is not None
        try:
            for block in read_blocks(c, 1 << 20):
                kinds["column" if isinstance(block, ColumnBlock) else "line"] += 1
                if isinstance(block, LineBlock):
                    list(block.read())
        except (SyntaxDataError, ValueError):
            pass
    # the cases exercise both paths and both outcomes
    assert kinds["column"] > 500 and kinds["line"] > 100 and 100 < kinds["errors"] < 1400, kinds


def test_plain_block_is_read_by_arrays():
    text = ("# sent_id = 1\n1-2\tzum\t_\t_\t_\t_\t_\t_\t_\t_\n1\tzu\t_\t_\t_\t_\t3\tcase\t_\t_\n"
            "2\tdem\t_\t_\t_\t_\t3\tdet\t_\t_\n3\tHaus\t_\t_\t_\t_\t0\troot\t_\t_\n\n"
            "1\tja\t_\t_\t_\t_\t0\troot\t_\t_\n1.1\tnull\t_\t_\t_\t_\t_\t_\t_\t_\n\n")
    block = columns_from_text(text)
    assert isinstance(block, ColumnBlock)
    assert block.forms == "zu dem Haus\nja\n"
    assert block.heads.tolist() == [3, 3, 0, 0] and block.depths.tolist() == [1, 1, 0, 0]
    assert [block.label_names[i] for i in block.labels] == ["case", "det", "root", "root"]
    assert block.multiword == {0: (["zum", "Haus"], [0, 0, 1])}
    assert block.starts.tolist() == [0, 3, 4]


@pytest.mark.parametrize("line, why", [
    ("2\tb\t_\t_\t_\t_\t2\tdep\t_\t_", "its own head"),
    ("2\tb\t_\t_\t_\t_\t0\tdep\t_\t_", "2 roots"),
    ("2\tb\t_\t_\t_\t_\t3\tdep\t_\t_", "HEAD 3 is out of range"),
    ("3\tb\t_\t_\t_\t_\t1\tdep\t_\t_", "word ID 3 out of order"),
    ("2\tb\t_\t_\t_\t_\t1\tdep\t_", "expected 10 tab-separated columns"),
])
def test_broken_block_gives_read_conllus_error_with_its_line(tmp_path, line, why):
    """A bad line in the third block: the error names the file's own line and sentence."""
    good = "1\ta\t_\t_\t_\t_\t0\troot\t_\t_\n\n"
    p = tmp_path / "x.conllu"
    p.write_text(good * 5 + "1\ta\t_\t_\t_\t_\t0\troot\t_\t_\n" + line + "\n\n" + good)
    with pytest.raises(SyntaxDataError) as e:
        for block in read_blocks(str(p), block_chars=60):
            if isinstance(block, LineBlock):
                list(block.read())
    assert why in str(e.value)
    assert f"{p}:{12 if 'columns' in why or 'order' in why or 'range' in why else 11}" in str(e.value)


def _treebanks():
    if not os.path.isdir(SHARED):
        return []
    return sorted(os.path.join(r, f) for r, _, fs in os.walk(SHARED) for f in fs if f.endswith(".conllu"))


@pytest.mark.slow  # every UD treebank: 7 s
@pytest.mark.skipif(not _treebanks(), reason="the shared UD treebanks ($FAIRSEQ_SYNTAX_SHARED/data) are not present")
def test_ud_treebanks_read_as_read_conllu_reads_them(tmp_path):
    """Every UD treebank here (multiword tokens, empty nodes, comments): same sentences, and the same
    alignment to a BPE'd text of its surface tokens, in blocks that are mostly read by arrays."""
    for path in _treebanks():
        ref = reference_sentences(path)
        assert ref[1] is None, ref[1]
        assert block_sentences(path, 1 << 16) == ref, path
        kinds = []
        for block in read_blocks(path, 1 << 16):
            kinds.append(isinstance(block, ColumnBlock))
            if isinstance(block, LineBlock):
                list(block.read())
        print(path, f"{sum(kinds)} of {len(kinds)} blocks read by arrays")
        bpe = tmp_path / "x.bpe"
        with open(bpe, "w", encoding="utf-8") as f:
            for s in read_conllu(path):
                f.write(" ".join(t[:2] + "@@ " + t[2:] if len(t) > 3 else t for t in s.tokens) + "\n")
        assert block_alignment(path, str(bpe), "auto", 1 << 16) == reference_alignment(path, str(bpe), "auto"), path


def test_labels_that_share_a_key_are_told_apart():
    """Labels longer than 16 bytes, or many labels in one block, are still told apart exactly."""
    from fairseq_syntax.data.trees.conllu_blocks import _labels

    labels = [f"label{i:03d}" for i in range(300)] + ["x" * 40, "x" * 39 + "y", ""]
    text = "\t".join(labels) + "\t"
    a = np.frombuffer(text.encode(), dtype=np.uint8)
    ends = np.flatnonzero(a == 9)
    begins = np.concatenate([[0], ends[:-1] + 1])
    index, names = _labels(a, begins, ends)
    assert [names[i] for i in index] == labels
    index, names = _labels(a, begins[:300], ends[:300])
    assert [names[i] for i in index] == labels[:300]


def test_block_writer_writes_the_files_of_the_sentence_writer(tmp_path, monkeypatch):
    """align_and_binarize (blocks) writes byte for byte the files that StreamingSyntaxWriter.add writes
    sentence by sentence: mmap datasets, text form and label dictionary, across flushes and blocks."""
    import filecmp

    from fairseq_syntax.data.alignment.binarize import align_and_binarize
    from fairseq_syntax.data.alignment import syntax_io
    from fairseq_syntax.data.trees import conllu_blocks

    small_blocks = conllu_blocks.read_blocks
    monkeypatch.setattr(conllu_blocks, "read_blocks", lambda path, block_chars=0: small_blocks(path, 90))
    monkeypatch.setattr(syntax_io.StreamingSyntaxWriter, "FLUSH", 7)
    rng = random.Random(3)
    compared = 0
    while compared < 40:
        c, b = random_files(rng, str(tmp_path))
        aligned, error = reference_alignment(c, b, "auto")
        if error or len(aligned) < 3:
            continue
        ref, new = tmp_path / "ref", tmp_path / "new"
        for d in (ref, new):
            if d.exists():
                for f in d.iterdir():
                    f.unlink()
            d.mkdir(exist_ok=True)
        writer = syntax_io.StreamingSyntaxWriter(syntax_io.syntax_prefix(str(ref), "train", "s", "t", "s"),
                                                 str(ref / "text"))
        for sentence in aligned:
            writer.add(*sentence)
        writer.finish().save(syntax_io.label_dict_path(str(ref), "s"))
        align_and_binarize(c, b, str(new), "train", "s", "t", "s", text_prefix=str(new / "text"), progress=False)
        names = sorted(os.listdir(ref))
        # the block writer also writes each subword's first parser word (the sentence writer is given none)
        extra = {f"train.s-t.s.{syntax_io.FIRST_WORDS}.{ext}" for ext in ("bin", "idx")}
        assert set(os.listdir(new)) == set(names) | extra and len(names) == 10
        match, mismatch, errors = filecmp.cmpfiles(ref, new, names, shallow=False)
        assert not mismatch and not errors, (compared, mismatch)
        compared += 1


def test_range_line_without_words_is_an_error():
    """read_conllu used to carry a multiword-token range across an empty line into the next sentence."""
    import io

    text = "1-2\tzum\t_\t_\t_\t_\t_\t_\t_\t_\n\n1\ta\t_\t_\t_\t_\t0\troot\t_\t_\n\n"
    with pytest.raises(SyntaxDataError, match=r"x:2: multiword token range ends at word 2 but the sentence"):
        list(read_conllu(io.StringIO(text), "x"))
    with pytest.raises(SyntaxDataError, match=r"x:1: multiword token range ends at word 2"):
        list(read_conllu(io.StringIO(text.split("\n")[0]), "x"))
