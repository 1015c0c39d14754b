"""fairseq-generate's output as it writes it, read back into the hypotheses of the corpus, in its order.

fairseq-generate prints, for every sentence of every batch (batches sorted by length, so not in corpus order),
``S-ID`` (the source), ``T-ID`` (the target), ``H-ID<tab>SCORE<tab>TEXT`` (the hypothesis; ``--remove-bpe``
removes the BPE marks), ``D-ID<tab>SCORE<tab>TEXT`` (the same through fairseq's own ``--bpe`` / ``--tokenizer``
decoding, which the plugin's data-bins leave unset) and ``P-ID`` (the tokens' scores), ``ID`` being the
sentence's line in the split; when the split has targets, it ends with ``Generate SPLIT with beam=B: BLEU4 =
...``. The same lines go to stdout and to ``--results-path``'s ``generate-SPLIT.txt``; fairseq's log lines (its
stderr, when a user sends both to one file) are not hypotheses and are passed over.

:func:`read_generate_output` takes the D- lines (the text fairseq-generate itself scores), puts them in the
order of the sentence ids, and refuses what would score the wrong text: a D- line missing, twice, or beyond
the reference (``--skip-invalid-size-inputs-valid-test``, ``--nbest`` above 1, another split's reference), H-
lines without their D- lines, BPE marks left in (no ``--remove-bpe``), text detokenised by fairseq's own
``--tokenizer`` (unless the caller scores it as it is), and a file cut short before its closing line.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence

from fairseq_syntax.errors import SyntaxDataError

#: a line fairseq-generate writes for one sentence: its kind (S, T, H, D, P, A, I, E) and the sentence id
SENTENCE_LINE = re.compile(r"([A-Z])-(\d+)(?:_\d+)?\t")
#: the hypothesis lines that make a file fairseq-generate's output
HYPOTHESIS_LINE = re.compile(r"[HD]-\d+\t")
#: fairseq-generate's closing line, printed when the split has targets
CLOSING_LINE = re.compile(r"Generate (\S+) with beam=(\d+): ")
#: subword-nmt's continuation mark, which fairseq-generate's --remove-bpe removes
BPE_MARK = re.compile(r"@@( |$)")


def is_generate_output(lines: Sequence[str]) -> bool:
    """Whether ``lines`` are fairseq-generate's output (some line is an ``H-ID<tab>`` or ``D-ID<tab>`` line)
    rather than plain translations, one a line."""
    return any(HYPOTHESIS_LINE.match(line) for line in lines)


@dataclass
class GenerateOutput:
    """The sentences of one fairseq-generate output, in corpus order (index = sentence id)."""

    hypotheses: List[str]  # the D- lines' text
    sources: Optional[List[str]]  # the S- lines' text, None if the file has none for some sentence
    targets: Optional[List[str]]  # the T- lines' text, None likewise
    split: Optional[str]  # from the closing line
    beam: Optional[int]

    def describe(self) -> str:
        where = f"split {self.split}, beam {self.beam}, " if self.split else ""
        return f"fairseq-generate output ({where}{len(self.hypotheses)} sentences, put in corpus order)"


def _remove_bpe(text: str) -> str:
    """What ``--remove-bpe`` (subword_nmt) makes of a line."""
    return (text + " ").replace("@@ ", "").rstrip()


def _ids_text(ids: Sequence[int], limit: int = 8) -> str:
    shown = ", ".join(str(i) for i in ids[:limit])
    return shown + (", ..." if len(ids) > limit else "")


def read_generate_output(path: str, lines: Sequence[str], n_reference: int, reference: str,
                         decoded_by_fairseq_ok: bool = False) -> GenerateOutput:
    """The hypotheses of fairseq-generate's output ``lines`` (read from ``path``) in the order of their sentence
    ids, which must be 0 .. ``n_reference`` - 1, the lines of ``reference``. ``decoded_by_fairseq_ok``: D- lines
    that fairseq-generate's own ``--tokenizer`` changed are taken as they are (else refused: they would be
    detokenised twice)."""
    by_kind: Dict[str, Dict[int, str]] = {"S": {}, "T": {}, "H": {}, "D": {}}
    where: Dict[int, int] = {}  # sentence id -> line number of its D- line
    split = beam = None
    for lineno, line in enumerate(lines, 1):
        closing = CLOSING_LINE.match(line)
        if closing:
            split, beam = closing.group(1), int(closing.group(2))
            continue
        m = SENTENCE_LINE.match(line)
        if not m or m.group(1) not in by_kind:
            continue  # P-, A-, I-, E- lines; fairseq's log lines
        kind, sid = m.group(1), int(m.group(2))
        fields = line.split("\t", 2)
        if kind in "HD" and len(fields) != 3:
            raise SyntaxDataError(f"{path}:{lineno}", f"a {kind}- line that is not '{kind}-ID<tab>SCORE<tab>TEXT' "
                                  "(fairseq-generate's form): the file was cut or edited; give fairseq-generate's "
                                  "output as it wrote it")
        text = fields[2] if kind in "HD" else (fields[1] if len(fields) > 1 else "")
        if kind == "D" and sid in by_kind["D"]:
            raise SyntaxDataError(f"{path}:{lineno}", f"a second D- line for sentence {sid} (the first is line "
                                  f"{where[sid]}): fairseq-generate ran with --nbest above 1, or the file holds "
                                  "two outputs; score the output of one run with --nbest 1")
        if kind == "D":
            where[sid] = lineno
        by_kind[kind].setdefault(sid, text)
    hyps = by_kind["D"]
    if not hyps:
        raise SyntaxDataError(path, f"{len(by_kind['H'])} H- lines and no D- lines: fairseq-generate writes a D- "
                              "line (the hypothesis it scores) after every H- line; give its whole output as it "
                              "wrote it (stdout, or generate-SPLIT.txt of --results-path), not lines taken out of it")
    no_d = sorted(set(by_kind["H"]) - set(hyps))
    if no_d:
        raise SyntaxDataError(path, f"H- lines without their D- line (sentences {_ids_text(no_d)}): fairseq-generate "
                              "writes both for every sentence; give its whole output as it wrote it")
    beyond = sorted(i for i in hyps if i >= n_reference)
    if beyond:
        raise SyntaxDataError(path, f"sentence ids up to {beyond[-1]}, and {reference} has {n_reference} lines: "
                              "the ids are the lines of the split fairseq-generate translated; give that split's "
                              "reference (all of it)")
    missing = [i for i in range(n_reference) if i not in hyps]
    if missing:
        raise SyntaxDataError(path, f"no translation of {len(missing)} of the {n_reference} sentences of {reference} "
                              f"(ids {_ids_text(missing)}): fairseq-generate left them out "
                              "(--skip-invalid-size-inputs-valid-test drops sentences longer than the model reads), "
                              "or the file is cut short; translate the whole split")
    if by_kind["T"] and split is None:
        raise SyntaxDataError(path, "ends without fairseq-generate's closing line ('Generate SPLIT with beam=...'), "
                              "which it prints after the last sentence: the output of a killed or unfinished run; "
                              "translate the split again")
    ordered = [hyps[i] for i in range(n_reference)]
    for i, text in enumerate(ordered):
        if BPE_MARK.search(text):
            raise SyntaxDataError(f"{path}:{where[i]}", "the hypothesis holds BPE's '@@' marks: fairseq-generate ran "
                                  "without --remove-bpe; run it with --remove-bpe (as the recipes do), which writes "
                                  "the model's tokens")
        h = by_kind["H"].get(i)
        if not decoded_by_fairseq_ok and h is not None and text != h and text != _remove_bpe(h):
            raise SyntaxDataError(f"{path}:{where[i]}", "the D- line is not the H- line's tokens: fairseq-generate's "
                                  "own --tokenizer detokenised it; run fairseq-generate without --tokenizer / --bpe "
                                  "(the hypotheses are then detokenised as the data-bin's record says), or give "
                                  "--detokenize none to score its text as it is")

    def complete(kind):
        found = by_kind[kind]
        return [found[i] for i in range(n_reference)] if len(found) == n_reference and all(
            i in found for i in range(n_reference)) else None

    return GenerateOutput(ordered, complete("S"), complete("T"), split, beam)


def same_text_share(lines: Sequence[str], reference: Sequence[str]) -> float:
    """The share of ``lines`` equal to the reference line beside them, whitespace and case aside (a cheap check
    that a reference belongs to what was translated)."""

    def key(text):
        return "".join(text.split()).casefold()

    return sum(key(a) == key(b) for a, b in zip(lines, reference)) / max(1, len(reference))
