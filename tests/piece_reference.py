"""An alignment of SentencePiece pieces to a tree written from the rule alone, character by character (docs/
design.md, "SentencePiece units"), for the tests to hold the package's array version to. Slow and plain on
purpose: every character of the raw sentence knows its token, every piece its characters.
"""
import unicodedata


def _depths(heads):
    out = []
    for i in range(len(heads)):
        d, h = 0, heads[i]
        while h:
            d, h = d + 1, heads[h - 1]
        out.append(d)
    return out


def locate(raw, tokens):
    """Each token's characters, found one after the other (forms here are the raw text's, or its NFKC form)."""
    spans, pos = [], 0
    for t in tokens:
        while raw[pos].isspace():
            pos += 1
        end = pos
        while unicodedata.normalize("NFKC", raw[pos:end]) != unicodedata.normalize("NFKC", t):
            end += 1
            assert end <= len(raw), (raw, t)
        spans.append((pos, end))
        pos = end
    return spans


def reference_alignment(sent, raw, piece_spans):
    """(unit, head, label, first word) per piece. ``piece_spans``: each piece's raw characters ``[begin, end)``
    (its surface, whitespace included)."""
    tokens = sent.tokens
    owner = [None] * len(raw)
    for k, (a, b) in enumerate(locate(raw, tokens)):
        for c in range(a, b):
            owner[c] = k
    # tokens that share a piece are one unit (union over each piece's characters)
    group = list(range(len(tokens)))

    def find(x):
        while group[x] != x:
            x = group[x]
        return x

    firsts = []  # each piece's first non-space character (None: whitespace only)
    for a, b in piece_spans:
        chars = [c for c in range(a, b) if not raw[c].isspace()]
        firsts.append(chars[0] if chars else None)
        owned = sorted({owner[c] for c in chars if owner[c] is not None})
        for x in owned[1:]:
            group[find(x)] = find(owned[0])
    # a piece belongs to the token holding its first character; a whitespace-only piece to the next piece's
    token_of_piece = [None] * len(piece_spans)
    nxt = len(tokens) - 1
    for j in range(len(piece_spans) - 1, -1, -1):
        c = firsts[j]
        if c is not None:
            while owner[c] is None and c < len(raw) - 1:
                c += 1
            nxt = owner[c] if owner[c] is not None else len(tokens) - 1
        token_of_piece[j] = nxt
    # units in order; a unit no piece belongs to joins the one before it (the first: the one after it)
    roots = [find(t) for t in range(len(tokens))]
    units, unit_of_token = [], []
    for t, r in enumerate(roots):
        if not units or units[-1] != r:
            units.append(r)
        unit_of_token.append(len(units) - 1)
    for _ in range(len(tokens)):
        has = {unit_of_token[t] for t in token_of_piece}
        empty = [u for u in range(max(unit_of_token) + 1) if u not in has]
        if not empty:
            break
        u = empty[0]
        target = u - 1 if u > 0 else u + 1
        unit_of_token = [target if x == u else x for x in unit_of_token]
        order = sorted(set(unit_of_token))
        unit_of_token = [order.index(x) for x in unit_of_token]
    unit_of_word = [unit_of_token[t] for t in sent.token_of_word]
    depth = _depths(sent.heads)
    out = []
    for t in token_of_piece:
        u = unit_of_token[t]
        members = [w for w, x in enumerate(unit_of_word) if x == u]
        rep = min(members, key=lambda w: (depth[w], w))
        h = sent.heads[rep]
        out.append((u + 1, 0 if h == 0 else unit_of_word[h - 1] + 1, sent.labels[rep], members[0]))
    return out


def plain_spans(raw, pieces):
    """The raw characters of pieces that spell it (whitespace aside): each piece with the whitespace before it."""
    spans, pos = [], 0
    for p in pieces:
        text = p.replace("\u2581", "")
        begin = pos
        if not text:  # only the mark: the whitespace up to the next character
            while pos < len(raw) and raw[pos].isspace():
                pos += 1
            spans.append((begin, pos))
            continue
        while raw[pos].isspace():
            pos += 1
        assert raw.startswith(text, pos), (raw, pieces, p)
        pos += len(text)
        spans.append((begin, pos))
    return spans
