"""The README is a front door (short, links into docs/), and every link in README and docs/ resolves."""
import os
import re

import pytest

from helpers import ROOT

DOCS = os.path.join(ROOT, "docs")
PAGES = [os.path.join(ROOT, "README.md")] + sorted(
    os.path.join(DOCS, f) for f in os.listdir(DOCS) if f.endswith(".md"))
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")

# the sections of the one-page README this documentation replaced: each is a heading of some page
OLD_SECTIONS = [
    "Installation", "Data pipeline", "`prepare`: corpus to data-bin in one command", "`parse`",
    "Aligned syntax files", "Subword parent strategies (`--parent-strategy`)", "The `syntax_translation` task",
    "Models", "`syntax_transformer`: one model, mechanisms as switches",
    "DBSA: dependency-based self-attention (Deguchi et al. 2019)",
    "Relative positions: Shaw et al. 2018 and dependency depths (Omote et al. 2019)",
    "SyncAttn: synchronous syntactic attention (Deguchi et al. 2021)",
    "PASCAL: parent-scaled self-attention (Bugliarello & Okazaki 2020)",
    "S&H label embeddings and the C&H multi-task baseline", "CKY-based convolutional attention (Watanabe et al. 2017)",
    "Parses at inference time (`fairseq-interactive`)", "Fidelity (synthetic corpus)", "Speed and memory",
    "Distributed training", "Recipes: one folder per dataset", "Evaluation", "The synthetic corpus",
    "Preprocessing throughput", "Tests", "Layout",
]


def headings(path):
    out, fence = [], False
    for line in open(path, encoding="utf-8"):
        if line.startswith("```"):
            fence = not fence
        elif not fence and line.startswith("#"):
            out.append(line.lstrip("#").strip())
    return out


def anchor(title):
    """GitHub's anchor of a heading."""
    a = re.sub(r"[^\w\- ]", "", title.lower()).replace(" ", "-")
    return a


def test_readme_is_short_and_links_every_docs_page():
    """A first contact that reads in five minutes: at most 120 lines and 1,200 words, linking every page of docs/
    and naming no commit, date or per-CPU cell (those are docs/results.md's)."""
    readme = open(PAGES[0], encoding="utf-8").read()
    assert len(readme.splitlines()) <= 120 and len(readme.split()) <= 1200
    assert not re.search(r"\b20\d\d-\d\d-\d\d\b|\b[0-9a-f]{7,40}\b| [XE] \|", readme)
    linked = {os.path.normpath(os.path.join(ROOT, t)) for t in LINK.findall(readme)}
    for page in PAGES[1:]:
        assert page in linked, f"README does not link {os.path.relpath(page, ROOT)}"
    assert "PLACEHOLDER" not in readme


def test_every_link_resolves():
    for page in PAGES:
        text = open(page, encoding="utf-8").read()
        for target in LINK.findall(text):
            if re.match(r"^[a-z]+://", target):
                continue
            path, _, frag = target.partition("#")
            full = os.path.normpath(os.path.join(os.path.dirname(page), path)) if path else page
            assert os.path.exists(full), f"{os.path.relpath(page, ROOT)}: broken link {target}"
            if frag and full.endswith(".md"):
                assert frag in {anchor(h) for h in headings(full)}, f"{os.path.relpath(page, ROOT)}: no #{frag}"


def test_every_old_readme_section_has_a_page():
    found = {h for page in PAGES[1:] for h in headings(page)}
    missing = [s for s in OLD_SECTIONS if s not in found]
    assert not missing, missing


@pytest.mark.parametrize("script", ["readme_table.py", "results_markdown.py"])
def test_results_tables_are_the_committed_json(script):
    """The README's key rows and docs/results.md's table (readme_table.py) and docs/recipes.md's Tanaka tables, one folder per CPU
    (results_markdown.py), are what those scripts make of the committed JSON (rewrite them with --write)."""
    import subprocess
    import sys
    r = subprocess.run([sys.executable, os.path.join(ROOT, "examples", "recipes", script), "--check"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def test_models_page_names_every_architecture():
    """docs/models.md's table of named architectures is written by hand: it names exactly the preset table's."""
    from fairseq_syntax.models.presets import architectures

    text = open(os.path.join(DOCS, "models.md"), encoding="utf-8").read()
    table = text.split("| `--arch` | paper | what |", 1)[1].split("\n\n", 1)[0]
    named = set(re.findall(r"`((?:syntax_|transformer_|lstm_|cky_)\w+)`", table))
    assert named == {arch for arch, _, _ in architectures()}


#: the docs as a reference: docs/*.md and examples/*/README.md together, and any one paragraph
DOCS_WORDS, PARAGRAPH_WORDS = 25000, 150


def _paragraphs(text):
    """The prose paragraphs of a Markdown page: blocks between blank lines without fenced code, tables, HTML
    comments and headings; each list item a paragraph of its own."""
    body = re.sub(r"```.*?```", "", text, flags=re.S)
    for block in re.split(r"\n\s*\n", body):
        item = []
        for line in block.splitlines():
            if not line.strip() or line.startswith(("|", "<!--", "#")):
                continue
            if re.match(r"\s*([-*]|\d+\.) ", line) and item:
                yield " ".join(item)
                item = []
            item.append(line)
        if item:
            yield " ".join(item)


def test_the_docs_are_a_reference_in_size():
    """At most 25,000 words in docs/*.md and examples/*/README.md together, no paragraph over 150 words: the
    pages say what a feature is, how to use it, its options and errors; measurement history lives in the commit
    messages and JSON records, per-run tables beside their JSON (examples/*/results/runs.md)."""
    import glob

    pages = sorted(glob.glob(os.path.join(ROOT, "docs", "*.md")) + glob.glob(os.path.join(ROOT, "examples", "*",
                                                                                          "README.md")))
    texts = {os.path.relpath(p, ROOT): open(p, encoding="utf-8").read() for p in pages}
    total = sum(len(t.split()) for t in texts.values())
    assert total <= DOCS_WORDS, f"{total} words: " + ", ".join(f"{p} {len(t.split())}" for p, t in
                                                               sorted(texts.items(), key=lambda kv: -len(kv[1])))
    long = [(p, len(par.split()), par[:60]) for p, t in texts.items() for par in _paragraphs(t)
            if len(par.split()) > PARAGRAPH_WORDS]
    assert not long, long
