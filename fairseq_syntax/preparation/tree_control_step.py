"""``prepare --tree-control KIND``: the parser's trees of every split replaced by a control
(:mod:`fairseq_syntax.data.trees.tree_controls`) after parsing and pair selection, before alignment; the UAS of the
controlled trees against the trees they replace, per split and language, logged and recorded in the data-bin."""
from __future__ import annotations

import logging
import os
from typing import Dict, Optional

from tqdm import tqdm

from fairseq_syntax.data.trees.conllu import read_conllu, write_conllu
from fairseq_syntax.data.trees.tree_controls import TreeControl
from fairseq_syntax.durable_files import replace_file, temporary_name

logger = logging.getLogger(__name__)


def control_of(args) -> Optional[TreeControl]:
    """The run's control (None without ``--tree-control``); an OptionError for a kind it does not know."""
    return TreeControl.parse(args.tree_control, args.tree_control_seed) if args.tree_control else None


def apply_tree_control(control: TreeControl, conllus: Dict[tuple, Optional[str]], work: str,
                       progress: bool = True) -> Dict[str, dict]:
    """Each (split, lang) CoNLL-U of ``conllus`` (None: a side without syntax) written controlled to
    ``WORK/SPLIT.LANG.control.conllu``, which replaces it in ``conllus``; returns split -> lang -> the UAS (%) of
    the controlled trees against the input's."""
    uas: Dict[str, dict] = {}
    for (split, lang), path in sorted(conllus.items()):
        if path is None:
            continue
        out = os.path.join(work, f"{split}.{lang}.control.conllu")
        kept = total = 0
        with open(temporary_name(out), "w", encoding="utf-8") as f:
            def controlled():
                nonlocal kept, total
                for k, sent in enumerate(tqdm(read_conllu(path), desc=f"{control.name} trees {path}", unit="sent",
                                              disable=not progress, mininterval=1.0)):
                    heads, labels = control.apply(sent.heads, sent.labels, f"{split}:{lang}:{k}")
                    kept += sum(a == b for a, b in zip(heads, sent.heads))
                    total += len(heads)
                    sent.heads, sent.labels = heads, labels
                    yield sent
            write_conllu(controlled(), f)
        replace_file(temporary_name(out), out)
        conllus[(split, lang)] = out
        uas.setdefault(split, {})[lang] = round(100.0 * kept / max(total, 1), 2)
        logger.info("%s %s: trees replaced by --tree-control %s (seed %d): UAS %.2f against the parser's (%d words)",
                    split, lang, control.name, control.seed, uas[split][lang], total)
    return uas


def record_entry(control: TreeControl, uas: Dict[str, dict]) -> dict:
    """What the preparation record keeps of the control: enough to make the same trees of new text."""
    return {"kind": control.name, "seed": control.seed, "uas": uas}


def from_record(entry: Optional[dict]) -> Optional[TreeControl]:
    return TreeControl.parse(entry["kind"], int(entry["seed"])) if entry else None
