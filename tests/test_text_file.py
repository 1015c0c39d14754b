"""TextFile's ways of reading (readline, next_text, read) give the file's lines as Python's text mode
does, in any order and across the blocks it decodes, with or without a line end after the last line."""
import random

import pytest

import fairseq_syntax.text_reading as text_reading
from fairseq_syntax.text_reading import open_text


@pytest.mark.parametrize("open_end", [False, True])
def test_mixed_reads_give_the_file_in_order(tmp_path, monkeypatch, open_end):
    monkeypatch.setattr(text_reading, "BLOCK_BYTES", 7)  # a block a line or two: every read crosses blocks
    rng = random.Random(1)
    lines = [("".join(rng.choice("ab▁ 語") for _ in range(rng.randrange(0, 9)))) for _ in range(200)]
    text = "".join(x + "\n" for x in lines)
    if open_end:
        text = text[:-1]
    path = tmp_path / "t.txt"
    path.write_text(text, encoding="utf-8")
    expected = text.splitlines(keepends=True)
    for seed in range(20):
        rng = random.Random(seed)
        got, counted = [], 0
        with open_text(str(path)) as f:
            while True:
                how = rng.choice(["readline", "next_text", "read"])
                if how == "readline":
                    part = [f.readline()] if len(got) < len(expected) else []
                elif how == "next_text":
                    chunk, n = f.next_text(rng.randrange(1, 9))
                    part = chunk.splitlines(keepends=True)
                    assert len(part) == n
                else:
                    part = f.read(rng.randrange(1, 20)).splitlines(keepends=True)
                counted += len(part)
                assert f.lineno == counted
                if not part:
                    break
                got += part
        assert got == expected, (seed, how)


def test_next_text_at_the_end(tmp_path):
    path = tmp_path / "t.txt"
    path.write_text("a\nb\nc", encoding="utf-8")
    with open_text(str(path)) as f:
        assert f.next_text(2) == ("a\nb\n", 2)
        assert f.next_text(5) == ("c", 1)
        assert f.next_text(1) == ("", 0)


def test_next_text_drops_the_bom_and_crlf_and_names_a_bad_bytes_line(tmp_path, monkeypatch):
    """next_text decodes whole lines from the bytes it read: a byte-order mark at the start and the CR of CRLF
    are dropped, and a byte that is not UTF-8 is named by the file's own line, blocks and reads before it
    aside."""
    from fairseq_syntax.errors import SyntaxDataError

    monkeypatch.setattr(text_reading, "BLOCK_BYTES", 16)
    lines = [f"文{i} x" for i in range(40)]
    path = tmp_path / "t.txt"
    path.write_bytes(b"\xef\xbb\xbf" + "".join(x + "\r\n" for x in lines).encode("utf-8"))
    with open_text(str(path)) as f:
        assert f.readline() == lines[0] + "\n"
        assert f.next_text(3) == ("".join(x + "\n" for x in lines[1:4]), 3)
        assert f.next_text(100) == ("".join(x + "\n" for x in lines[4:]), 36)
    bad = "".join(x + "\n" for x in lines).encode("utf-8").replace("文29".encode("utf-8"), b"\xff29")
    path.write_bytes(bad)
    with open_text(str(path)) as f:
        assert f.next_text(20)[1] == 20
        with pytest.raises(SyntaxDataError, match=r"t\.txt:30: not UTF-8 text \(byte 0xff at column 1\)"):
            f.next_text(20)
