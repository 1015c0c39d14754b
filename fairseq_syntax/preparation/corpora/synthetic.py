"""A seeded synthetic parallel corpus whose translation follows the source tree.

The source language is head-initial and English-like (SVO, prepositions,
post-nominal relative clauses); the target language is its head-final
mirror (SOV, postpositions, pre-nominal relative clauses), with a bijective
word mapping and case particles that depend on the grammatical relation of
the noun (``ga`` after subjects, ``o`` after objects). Getting the order and
the particles right needs the source tree: a model that uses it should find
the task easier than one that has to infer it. Target words are long and
rarer, so BPE splits some of them.

Both sides come with gold dependency trees (UD-style relations), written as
whitespace-tokenised text and CoNLL-U. Everything is a deterministic function
of the seed.
"""
from __future__ import annotations

import os
import random
from dataclasses import dataclass
from typing import Dict, List, Tuple

from fairseq_syntax.data.trees.conllu import Sentence, write_conllu

_SRC_SYL = ["ba", "ke", "li", "mo", "nu", "ra", "si", "to", "ve", "za", "pe", "du", "go", "fi", "ha", "ju"]
_TGT_SYL = ["ka", "shi", "tsu", "ne", "ho", "mi", "yu", "re", "wa", "do", "gi", "po", "zen", "ryo", "kyu", "sa"]


@dataclass
class Node:
    form: str
    rel: str
    children: List["Node"]
    pos: str


class SyntheticLanguagePair:
    """Lexicon and grammar of the synthetic language pair (seeded)."""

    def __init__(self, seed: int = 1, n_nouns: int = 200, n_verbs: int = 60, n_adjs: int = 50, n_advs: int = 15):
        rng = random.Random(seed)
        used_s, used_t = set(), set()

        def word(syl, lo, hi, used):
            while True:
                w = "".join(rng.choice(syl) for _ in range(rng.randint(lo, hi)))
                if w not in used:
                    used.add(w)
                    return w

        self.lex: Dict[str, Dict[str, str]] = {}
        for pos, n, (slo, shi), (tlo, thi) in (
            ("NOUN", n_nouns, (2, 3), (2, 5)),
            ("VERB", n_verbs, (2, 3), (3, 5)),
            ("ADJ", n_adjs, (2, 3), (2, 4)),
            ("ADV", n_advs, (3, 3), (3, 4)),
        ):
            self.lex[pos] = {word(_SRC_SYL, slo, shi, used_s): word(_TGT_SYL, tlo, thi, used_t) for _ in range(n)}
        self.lex["DET"] = {"the": "sono", "a": "aru", "this": "kono", "every": "subete"}
        self.lex["ADP"] = {"in": "de", "on": "ue", "with": "to", "from": "kara", "for": "tame", "near": "chikaku"}
        self.lex["PRON"] = {"that": "sore"}  # relativiser, dropped in the target
        self.particles = {"nsubj": "ga", "obj": "o"}
        self._lists = {pos: sorted(d) for pos, d in self.lex.items()}

    # --- tree generation (source side) ------------------------------------
    def _pick(self, rng, pos):
        return rng.choice(self._lists[pos])

    def _np(self, rng, rel, depth) -> Node:
        n = Node(self._pick(rng, "NOUN"), rel, [], "NOUN")
        if rng.random() < 0.8:
            n.children.append(Node(self._pick(rng, "DET"), "det", [], "DET"))
        for _ in range(rng.choice([0, 0, 1, 1, 2])):
            n.children.append(Node(self._pick(rng, "ADJ"), "amod", [], "ADJ"))
        if depth > 0 and rng.random() < 0.25:
            n.children.append(self._pp(rng, "nmod", depth - 1))
        if depth > 0 and rng.random() < 0.15:
            n.children.append(self._clause(rng, "acl:relcl", depth - 1, relative=True))
        return n

    def _pp(self, rng, rel, depth) -> Node:
        n = self._np(rng, rel, depth)
        n.children.insert(0, Node(self._pick(rng, "ADP"), "case", [], "ADP"))
        return n

    def _clause(self, rng, rel, depth, relative=False) -> Node:
        v = Node(self._pick(rng, "VERB"), rel, [], "VERB")
        if relative:
            v.children.append(Node("that", "nsubj", [], "PRON"))
        else:
            v.children.append(self._np(rng, "nsubj", depth))
        if rng.random() < 0.7:
            v.children.append(self._np(rng, "obj", depth))
        for _ in range(rng.choice([0, 0, 1, 1, 2])):
            v.children.append(self._pp(rng, "obl", max(depth - 1, 0)))
        if rng.random() < 0.3:
            v.children.append(Node(self._pick(rng, "ADV"), "advmod", [], "ADV"))
        return v

    # --- linearisation ----------------------------------------------------
    @staticmethod
    def _source_order(node: Node):
        """Head-initial English-like order: pre-modifiers, head, post-modifiers."""
        pre = [c for c in node.children if c.rel in ("det", "amod", "case", "nsubj")]
        post = [c for c in node.children if c not in pre]
        return pre, post

    def _target_children(self, node: Node):
        """Head-final: every dependent before its head, case markers after it."""
        kids = []
        for c in node.children:
            if c.pos == "PRON":
                continue  # relative pronoun dropped
            kids.append(c)
        # relation order: subject, object, obliques, adverbs / determiners, adjectives, nominal modifiers
        order = {"nsubj": 0, "obj": 1, "obl": 2, "advmod": 3, "acl:relcl": 4, "nmod": 5, "det": 6, "amod": 7}
        pre = sorted([c for c in kids if c.rel != "case"], key=lambda c: order.get(c.rel, 9))
        post = [c for c in kids if c.rel == "case"]
        return pre, post

    def _linearise(self, root: Node, target: bool) -> Sentence:
        forms: List[str] = []
        heads: List[int] = []
        labels: List[str] = []

        def visit(node: Node, head_idx: int):
            if target:
                pre, post = self._target_children(node)
            else:
                pre, post = self._source_order(node)
            slots = []
            for c in pre:
                slots.append(("child", c))
            slots.append(("self", node))
            if target and node.rel in self.particles and node.pos == "NOUN":
                slots.append(("particle", self.particles[node.rel]))
            for c in post:
                slots.append(("child", c))
            # first allocate the head's own index so children can point at it
            my_idx = None
            pending = []
            for kind, x in slots:
                if kind == "self":
                    forms.append(self.lex[node.pos][node.form] if target else node.form)
                    heads.append(head_idx)
                    labels.append("root" if head_idx == 0 else node.rel)
                    my_idx = len(forms)
                    for idx in pending:
                        heads[idx] = my_idx
                    pending = []
                elif kind == "particle":
                    forms.append(x)
                    heads.append(my_idx)
                    labels.append("case")
                else:
                    child_head_slot = visit(x, -1)
                    if my_idx is None:
                        pending.append(child_head_slot)
                    else:
                        heads[child_head_slot] = my_idx
            return my_idx - 1

        visit(root, 0)
        return Sentence(forms, heads, labels)

    def sample(self, rng: random.Random, max_depth: int = 2) -> Tuple[Sentence, Sentence]:
        root = self._clause(rng, "root", rng.randint(0, max_depth))
        return self._linearise(root, target=False), self._linearise(root, target=True)


def generate_corpus(
    out_dir: str,
    sizes: Dict[str, int] = None,
    seed: int = 1,
    src: str = "src",
    tgt: str = "tgt",
    max_depth: int = 2,
) -> Dict[str, int]:
    """Write ``{split}.{lang}`` (tokenised text) and ``{split}.{lang}.conllu``.

    Splits are disjoint in content by construction of the seed stream (no
    sentence of valid/test is filtered against train; duplicates of short
    sentences are possible, as in real data). Returns the sizes written.
    """
    sizes = sizes or {"train": 20000, "valid": 500, "test": 500}
    pair = SyntheticLanguagePair(seed)
    os.makedirs(out_dir, exist_ok=True)
    for k, (split, n) in enumerate(sizes.items()):
        rng = random.Random(seed * 1000 + k)
        pairs = [pair.sample(rng, max_depth) for _ in range(n)]
        for lang, side in ((src, 0), (tgt, 1)):
            sents = [p[side] for p in pairs]
            with open(os.path.join(out_dir, f"{split}.{lang}"), "w", encoding="utf-8") as f:
                for s in sents:
                    f.write(" ".join(s.words) + "\n")
            for sent in sents:  # its text, as treebanks give it (what SentencePiece cuts)
                sent.comments = [f"# text = {' '.join(sent.words)}"]
            with open(os.path.join(out_dir, f"{split}.{lang}.conllu"), "w", encoding="utf-8") as f:
                write_conllu(sents, f)
    return dict(sizes)
