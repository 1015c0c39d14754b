"""Which Japanese tokenisation to parse with: GiNZA's parses of the same sentences from two segmentations.

    python examples/tanaka-ja-en/compare_tokenisations.py A.conllu B.conllu --names kytea ginza [--json out.json]

A and B parse the same lines (e.g. the corpus's KyTea tokens given to the parser with --pretokenized, and
the same text with its spaces removed, tokenised by the parser itself). Printed per file: words per sentence,
the share of words with the catch-all label ``dep`` (a parser's "no idea"), the share of sentences whose
root is a single kana character (a fragment cut off a verb stem: と っ た, くださ い), the most frequent roots;
and between the two: how often the root covers the same characters of the sentence (spaces ignored).
"""
import argparse
import collections
import json
import sys
import unicodedata

from fairseq_syntax.data.trees.conllu import read_conllu


def is_kana_fragment(form: str) -> bool:
    return len(form) == 1 and unicodedata.name(form, "").startswith(("HIRAGANA", "KATAKANA"))


def root_span(sentence):
    """(start, end) character offsets of the root word in the sentence's text without spaces."""
    pos = 0
    for form, head in zip(sentence.words, sentence.heads):
        if head == 0:
            return pos, pos + len(form)
        pos += len(form)
    raise ValueError("no root")


def stats(sentences):
    words = sum(len(s.words) for s in sentences)
    dep = sum(lab == "dep" for s in sentences for lab in s.labels)
    roots = collections.Counter(s.words[s.heads.index(0)] for s in sentences)
    kana = sum(n for form, n in roots.items() if is_kana_fragment(form))
    return {"sentences": len(sentences), "words_per_sentence": words / len(sentences),
            "dep_label_percent": 100 * dep / words, "kana_fragment_root_percent": 100 * kana / len(sentences),
            "kana_fragment_roots": {f: n for f, n in roots.most_common() if is_kana_fragment(f)},
            "top_roots": dict(roots.most_common(10))}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("a")
    p.add_argument("b")
    p.add_argument("--names", nargs=2, default=["a", "b"])
    p.add_argument("--json", default=None)
    args = p.parse_args(argv)
    a, b = (list(read_conllu(path)) for path in (args.a, args.b))
    if len(a) != len(b):
        sys.exit(f"error: {args.a} has {len(a)} sentences, {args.b} {len(b)}")
    for k, (x, y) in enumerate(zip(a, b), 1):
        if "".join(x.words) != "".join(y.words):
            sys.exit(f"error: sentence {k} differs beyond spaces: {' '.join(x.words)} | {' '.join(y.words)}")
    spans = [(root_span(x), root_span(y)) for x, y in zip(a, b)]
    same = sum(sa == sb for sa, sb in spans)
    overlap = sum(sa[0] < sb[1] and sb[0] < sa[1] for sa, sb in spans)
    out = {"files": {args.names[0]: args.a, args.names[1]: args.b},
           args.names[0]: stats(a), args.names[1]: stats(b),
           "root_same_characters_percent": 100 * same / len(a),
           "root_overlapping_characters_percent": 100 * overlap / len(a)}
    for name in args.names:
        s = out[name]
        print(f"{name}: {s['sentences']} sentences, {s['words_per_sentence']:.2f} words each; label dep "
              f"{s['dep_label_percent']:.2f}% of words; root on a single kana {s['kana_fragment_root_percent']:.2f}% "
              f"of sentences {dict(list(s['kana_fragment_roots'].items())[:5])}")
    print(f"root on the same characters: {out['root_same_characters_percent']:.2f}%; overlapping: "
          f"{out['root_overlapping_characters_percent']:.2f}%")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(out, f, indent=1, ensure_ascii=False)
    return out


if __name__ == "__main__":
    main()
