"""spaCy backend (any pipeline with a dependency parser; GiNZA for Japanese).

``model`` is a spaCy package name or path, e.g. ``ja_ginza``. Each input
line is one Doc; sentence boundaries are fixed beforehand (first token
starts the only sentence) so that the parser returns one tree per line. In
pre-tokenized mode the Doc is built from the given tokens and the
pipeline's components run on it unchanged.
"""
from __future__ import annotations

from typing import List, Sequence

from fairseq_syntax.data.trees.conllu import Sentence, normalize_form
from fairseq_syntax.parsing.base import Parser


def doc_to_sentence(doc) -> Sentence:
    """One Sentence per Doc. spaCy keeps runs of whitespace (a double space,
    the ideographic space of Japanese text) as tokens; they are not words of
    the text we translate, so they are dropped and their dependents attached
    to the nearest non-space ancestor."""
    kept = [t for t in doc if not t.is_space]
    new_index = {t.i: k + 1 for k, t in enumerate(kept)}
    words, heads, labels = [], [], []
    for t in kept:
        h = t.head
        while h.is_space and h.head.i != h.i:
            h = h.head
        words.append(normalize_form(t.text))
        heads.append(0 if h.i == t.i or h.is_space else new_index[h.i])
        labels.append(t.dep_.lower() if t.dep_ != "ROOT" else "root")
    return Sentence(words, heads, labels)


#: components whose output no tree reads, not loaded: the entity recognizer sets only ``doc.ents`` (GiNZA 5: the
#: same words, heads and labels without it, parsed in about 60% of the time)
UNUSED = ("ner",)


class SpacyParser(Parser):
    def __init__(self, model: str = "ja_ginza", pretokenized: bool = False, gpu: bool = False, nlp=None, **kwargs):
        self.pretokenized = pretokenized
        if nlp is None:
            import spacy

            if gpu:
                spacy.require_gpu()
            nlp = spacy.load(model, exclude=[c for c in _components(model) if c in UNUSED])
        self.nlp = nlp

    def _one_sentence(self, doc):
        for i, t in enumerate(doc):
            t.is_sent_start = i == 0
        return doc

    def parse(self, lines: Sequence[str]) -> List[Sentence]:
        from spacy.tokens import Doc

        nlp = self.nlp
        if self.pretokenized:
            docs = [Doc(nlp.vocab, words=ln.split()) for ln in lines]
        else:
            docs = [nlp.make_doc(ln.strip()) for ln in lines]
        docs = [self._one_sentence(d) for d in docs]
        out = []
        for doc in nlp.pipe(docs):
            out.append(doc_to_sentence(doc))
        return out


def _components(model: str):
    """The names of a pipeline's components, read from its meta.json (without loading the pipeline)."""
    import json
    import os

    import spacy

    path = str(spacy.util.get_package_path(model)) if spacy.util.is_package(model) else model
    metas = [os.path.join(path, "meta.json")]
    for sub in sorted(os.listdir(path)) if os.path.isdir(path) else []:  # a package holds its pipeline folder
        metas.append(os.path.join(path, sub, "meta.json"))
    for meta in metas:
        if os.path.exists(meta):
            with open(meta, encoding="utf-8") as f:
                m = json.load(f)
            return list(m.get("components") or m.get("pipeline") or [])
    return []


def load_tokenizer_only(model: str = "ja_ginza"):
    """A function from lines to their tokens as the pipeline ``model`` makes them, with its tokenizer alone:
    every component (tagger, parser, ...) is excluded from loading. For GiNZA (ja_ginza 5) these are the full
    pipeline's tokens: the same on all 51,000 Tanaka sentences (docs/inference.md)."""
    import spacy

    nlp = spacy.load(model, exclude=_components(model))

    def tokenize(lines):
        return [[normalize_form(t.text) for t in nlp.make_doc(line.strip()) if not t.is_space] for line in lines]

    return tokenize
