"""The synthetic corpus: deterministic, valid trees, translation follows the source tree."""
import filecmp

from fairseq_syntax.data.trees.conllu import read_conllu
from fairseq_syntax.preparation.corpora.synthetic import SyntheticLanguagePair, generate_corpus


def test_deterministic_and_seeded(tmp_path):
    sizes = {"train": 50, "valid": 5, "test": 5}
    generate_corpus(str(tmp_path / "a"), sizes, seed=3)
    generate_corpus(str(tmp_path / "b"), sizes, seed=3)
    generate_corpus(str(tmp_path / "c"), sizes, seed=4)
    for f in ("train.src", "train.tgt.conllu", "test.tgt"):
        assert filecmp.cmp(tmp_path / "a" / f, tmp_path / "b" / f, shallow=False)
    assert not filecmp.cmp(tmp_path / "a" / "train.src", tmp_path / "c" / "train.src", shallow=False)


def test_trees_valid_and_text_matches_conllu(tmp_path):
    generate_corpus(str(tmp_path), {"train": 300}, seed=1)
    for lang in ("src", "tgt"):
        sents = list(read_conllu(str(tmp_path / f"train.{lang}.conllu")))  # checks every tree
        lines = open(tmp_path / f"train.{lang}").read().splitlines()
        assert [" ".join(s.words) for s in sents] == lines


def test_target_is_the_head_final_image_of_the_source_tree(tmp_path):
    import random

    pair = SyntheticLanguagePair(seed=1)
    rng = random.Random(0)
    inverse = {t: s for pos in pair.lex.values() for s, t in pos.items()}
    for _ in range(200):
        src, tgt = pair.sample(rng)
        for i, (h, lab) in enumerate(zip(tgt.heads, tgt.labels)):
            if h == 0:
                continue
            if lab == "case":  # postpositions and particles follow their head
                assert h - 1 < i
            else:  # every other dependent precedes its head
                assert h - 1 > i
        # lexical mapping: the target content words are the images of the source words
        content = [inverse[w] for w in tgt.words if w not in pair.particles.values()]
        assert sorted(content) == sorted(w for w in src.words if w != "that")
        # particles mark the grammatical relation of the noun they follow
        for i, w in enumerate(tgt.words):
            if w in ("ga", "o"):
                noun = tgt.heads[i] - 1
                assert tgt.labels[noun] == {"ga": "nsubj", "o": "obj"}[w]


def test_source_surface_does_not_reveal_attachment():
    # prepositional phrases after an object are attached to the verb or the noun by the
    # tree alone: both occur, so the target order needs the tree
    import random

    pair = SyntheticLanguagePair(seed=1)
    rng = random.Random(1)
    seen = set()
    for _ in range(500):
        src, _ = pair.sample(rng)
        seen.update(lab for lab in src.labels if lab in ("obl", "nmod"))
    assert seen == {"obl", "nmod"}


def _pp_after_noun_phrase(s):
    """A prepositional phrase (obl or nmod) right after a noun phrase: the surface
    allows both attachments and the head-final target orders them differently."""
    first_case = {}
    for i, (h, lab) in enumerate(zip(s.heads, s.labels)):
        if lab == "case":
            first_case[h - 1] = min(first_case.get(h - 1, i), i)
    for noun, start in first_case.items():
        if s.labels[noun] in ("obl", "nmod") and start > 0:
            prev = start - 1
            if prev != noun and s.labels[prev] in ("obj", "obl", "nmod", "nsubj") and s.words[prev] != "that":
                return True
    return False


def test_most_sentences_hold_an_attachment_only_the_tree_resolves(tmp_path):
    generate_corpus(str(tmp_path), {"test": 500}, seed=1)
    sents = list(read_conllu(str(tmp_path / "test.src.conllu")))
    share = sum(_pp_after_noun_phrase(s) for s in sents) / len(sents)
    assert share > 0.5
