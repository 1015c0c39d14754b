#!/usr/bin/env python
"""How the SentencePiece variant's pieces met GiNZA's words: per split of the Japanese side, the pieces, parser
words and units per sentence, units per word (below 1: words share units), the share of sentences with a unit
of several words, and the share of sentences aligned one by one (their pieces or words do not spell the raw text as
it is: SentencePiece's NFKC normalisation, mostly), from the data-bin and its work folder.

    python examples/tanaka-ja-en/unit_statistics.py --work work/tanaka-ja-en \\
        --json examples/tanaka-ja-en/results/sentencepiece_units.json
"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def statistics(work: str, variant: str = "spm", lang: str = "ja", src: str = "ja", tgt: str = "en"):
    from fairseq.data.indexed_dataset import MMapIndexedDataset

    from fairseq_syntax.data.trees.conllu import read_conllu

    out = {}
    for split in ("train", "valid", "test"):
        units = MMapIndexedDataset(os.path.join(work, variant, "data-bin", f"{split}.{src}-{tgt}.{lang}.words"))
        folder = os.path.join(work, variant, "work")
        raw = open(os.path.join(folder, f"{split}.raw.{lang}"), encoding="utf-8").read().splitlines()
        pieces = open(os.path.join(folder, f"{split}.spm.{lang}"), encoding="utf-8").read().splitlines()
        conllu = os.path.join(work, "text", f"{split}.{lang}.conllu")
        n = n_pieces = n_words = n_units = merged = located = 0
        for k, sent in enumerate(read_conllu(conllu)):
            u = int(units[k].max())
            n += 1
            n_pieces += len(units[k])
            n_words += len(sent.tokens)
            n_units += u
            merged += u < len(sent.tokens)
            spelled = "".join(raw[k].split()) == "".join(sent.tokens) == pieces[k].replace(" ", "").replace(
                "\u2581", "")
            located += not spelled
        out[split] = {"sentences": n, "pieces_per_sentence": round(n_pieces / n, 3),
                      "words_per_sentence": round(n_words / n, 3), "units_per_sentence": round(n_units / n, 3),
                      "units_per_word": round(n_units / n_words, 4),
                      "sentences_with_a_shared_unit": round(merged / n, 4),
                      "sentences_located_one_by_one": round(located / n, 4)}
    return {"variant": variant, "language": lang, "parser": "GiNZA (ja_ginza), surface tokens", "splits": out}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--work", required=True, help="the recipe's WORK folder (its text/ and spm/)")
    p.add_argument("--json", default=None, help="write the figures to this file")
    args = p.parse_args(argv)
    result = statistics(args.work)
    text = json.dumps(result, indent=1, sort_keys=True)
    print(text)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    main()
