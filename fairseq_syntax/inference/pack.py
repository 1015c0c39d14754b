"""A model folder a user can hand on: everything ``from_pretrained`` needs to translate raw text elsewhere.

:func:`pack_model` writes into one folder:

* ``model.pt``: the checkpoint without its optimizer state (unless asked to keep it), its data path set to
  the folder itself and the training machine's ``--user-dir`` path dropped;
* the dictionaries (``dict.*.txt``, label dictionaries ``dict.*.labels.txt``);
* ``preparation.json`` and the BPE codes or SentencePiece models it names
  (:mod:`fairseq_syntax.preparation.databin_record`);
* the parser model files the record names (UDPipe ``.udpipe`` files, a CoNLL-U lookup file), when they are
  files no larger than ``max_parser_mb`` that load as the recorded parser's model, under ``parsers/``, the
  record pointing there (a record names files inside its own folder or absolute paths; any other file, or a
  file that is not such a model, is refused with one line before anything is written); a spaCy package
  (GiNZA) or a stanza model folder stays a name the other machine installs;
* ``README.md``: what is inside, where each part came from, and the licence note of the parser models copied.

Copying a parser model hands it on: only do so where its licence allows (``--licence`` states it in the
README; without it the README says the licence was not stated). ``--no-parser-models`` leaves them out: the
record then keeps their paths on this machine, which the other machine overrides with ``from_pretrained(...,
inference_parser="udpipe", inference_parser_model=PATH)`` (fairseq-interactive: ``--inference-parser udpipe
--inference-parser-model PATH``) or by editing ``preparation.json``; so does a local spaCy pipeline folder or a
stanza ``model_dir``, which are never copied.
"""
from __future__ import annotations

import glob
import os
import shutil
from typing import Dict, Optional

from fairseq_syntax.errors import SyntaxDataError
from fairseq_syntax.parsing.base import load_parser
from fairseq_syntax.preparation.databin_record import RECORD_FILE, PreparationRecord, inside
from fairseq_syntax.preparation.trained_on import SAVED_BPE_CODES

MODEL_FILES = ("model_path", "path")  # parser options that name a model file


def _load_checkpoint(checkpoint: str) -> dict:
    import pickle

    import torch

    import fairseq_syntax.plugin  # noqa: F401  (the allow-list of the globals fairseq checkpoints pickle)
    from fairseq_syntax.patches.checkpoint_reading import (
        refused_checkpoint,
        unreadable_checkpoint,
    )

    try:
        return torch.load(checkpoint, map_location="cpu")
    except pickle.UnpicklingError as e:
        raise refused_checkpoint(checkpoint, e) from None
    except Exception as e:
        raise unreadable_checkpoint(checkpoint, e) from None


def _checkpoint_for_folder(state: dict, data_dir: str, out: str, keep_optimizer: bool) -> Dict[str, object]:
    import torch
    from fairseq.data import data_utils

    dropped = 0
    if not keep_optimizer:
        dropped = sum(1 for k in ("last_optimizer_state",) if state.pop(k, None) is not None)
    cfg = state.get("cfg")
    if cfg is not None:  # fairseq saves its config as plain containers
        from omegaconf import OmegaConf

        cfg = OmegaConf.to_container(cfg) if OmegaConf.is_config(cfg) else cfg
        task = cfg["task"]
        task["data"] = "."
        cfg["common"]["user_dir"] = None
        if not task.get("source_lang") or not task.get("target_lang"):  # inferred from the data-bin's files
            task["source_lang"], task["target_lang"] = data_utils.infer_language_pair(data_dir)
        state["cfg"] = cfg
        languages = (task["source_lang"], task["target_lang"])
    else:
        languages = data_utils.infer_language_pair(data_dir)
    torch.save(state, os.path.join(out, "model.pt"))
    return {"optimizer_state_dropped": bool(dropped), "languages": languages}


def pack_model(data_dir: str, checkpoint: str, out: str, parser_models: bool = True, max_parser_mb: float = 50.0,
               keep_optimizer: bool = False, licence_note: Optional[str] = None) -> Dict[str, object]:
    """Write the model folder ``out`` (see the module docstring); returns what went in."""
    record = PreparationRecord.load(data_dir)
    if record is None:
        raise SyntaxDataError(os.path.join(data_dir, RECORD_FILE), "missing: this data-bin was prepared without a "
                              "preparation record (prepare it again with this version of the plugin)")
    if not os.path.isfile(checkpoint):
        raise SyntaxDataError(checkpoint, "no such checkpoint file")
    state = _load_checkpoint(checkpoint)

    trained = (state.get("task_state") or {}).get(SAVED_BPE_CODES)
    if isinstance(trained, dict) and trained:  # codes other than the training's are refused, not packed
        record.expect_trained_codes(trained)
    codes = {name: record.bpe_codes(next(k for k, v in record.bpe.items() if v == name), data_dir)
             for name in sorted(set((record.bpe or {}).values()))}  # named inside the data-bin, and BPE codes
    for lang, spm in sorted((record.spm or {}).items()):  # SentencePiece models, the trained ones
        codes[spm["file"]] = record.spm_model(lang, data_dir)
    plan = []  # (language, option, the model file, MiB, copy?): checked before anything is written
    for lang, spec in sorted(record.languages.items()):
        if spec.parser is None:
            continue
        options = spec.parser.setdefault("options", {})
        for key in MODEL_FILES:
            path = options.get(key)
            if not isinstance(path, str) or not path:
                continue
            src = path if os.path.isabs(path) else inside(data_dir, path, f"the {lang} parser's {key}")
            if not os.path.isfile(src):
                continue
            size_mb = os.path.getsize(src) / 2 ** 20
            copy = parser_models and size_mb <= max_parser_mb
            if copy:  # only a file that loads as the recorded parser's model goes into a folder to hand on
                load_parser(spec.parser["backend"], {**options, key: src},
                            f"{src} (the {lang} parser model that {os.path.join(data_dir, RECORD_FILE)} names: "
                            "not packed)")
            plan.append((lang, key, src, size_mb, copy))
    os.makedirs(out, exist_ok=True)
    copied = []
    for path in sorted(glob.glob(os.path.join(data_dir, "dict.*.txt"))):
        shutil.copyfile(path, os.path.join(out, os.path.basename(path)))
        copied.append(os.path.basename(path))
    for name, path in codes.items():
        shutil.copyfile(path, os.path.join(out, name))
        copied.append(name)
    parsers = []
    packed = {}  # file name in parsers/ -> the file it holds (two languages' models of one name: lang-name)
    for lang, key, src, size_mb, copy in plan:
        spec = record.languages[lang]
        options = spec.parser["options"]
        if copy:
            os.makedirs(os.path.join(out, "parsers"), exist_ok=True)
            name = os.path.basename(src)
            if packed.get(name, os.path.realpath(src)) != os.path.realpath(src):
                name = f"{lang}-{name}"
            packed[name] = os.path.realpath(src)
            rel = os.path.join("parsers", name)
            shutil.copyfile(src, os.path.join(out, rel))
            options[key] = rel
            parsers.append((lang, spec.parser["backend"], rel, f"{size_mb:.1f} MB", "copied"))
        else:
            options[key] = os.path.abspath(src)
            parsers.append((lang, spec.parser["backend"], os.path.abspath(src), f"{size_mb:.1f} MB",
                            "not copied" + ("" if parser_models else " (--no-parser-models)")))
    record.save(out)
    summary = _checkpoint_for_folder(state, data_dir, out, keep_optimizer)
    src, tgt = summary.pop("languages")
    lines = ["# A fairseq-syntax model folder", "",
             "Made by `fairseq-syntax-pack` from", f"- checkpoint `{os.path.abspath(checkpoint)}`",
             f"- data-bin `{os.path.abspath(data_dir)}`", "",
             "Load it with", "```python", "from fairseq_syntax.inference.hub import from_pretrained",
             "model = from_pretrained(\"THIS_FOLDER\")", "print(model.translate(\"A raw sentence.\"))", "```",
             "or, on raw text, one sentence per line:", "```bash",
             f"fairseq-interactive THIS_FOLDER --task syntax_translation -s {src} -t {tgt} --path THIS_FOLDER/model.pt \\",
             "  --user-dir \"$(python -c 'import fairseq_syntax, os; print(os.path.dirname(fairseq_syntax.__file__))')\" \\",
             "  --buffer-size 64 --batch-size 64 < raw.txt", "```", "",
             "Files: model.pt, preparation.json, " + ", ".join(copied), "", "Parser models:"]
    for lang, backend, where, size, what in parsers:
        lines.append(f"- {lang}: {backend} `{where}` ({size}, {what})")
    for lang, spec in sorted(record.languages.items()):
        if spec.parser is not None and not any(p[0] == lang for p in parsers):
            lines.append(f"- {lang}: {spec.parser['backend']} {spec.parser.get('options')} (install it where the "
                         "folder is used; a path here is this machine's)")
    if any(p[4] == "copied" for p in parsers):
        lines += ["", "Licence of the parser models copied: " + (licence_note or "not stated: check each model's "
                                                                  "licence before handing this folder on")]
    with open(os.path.join(out, "README.md"), "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    return {"out": out, "files": ["model.pt", RECORD_FILE, *copied], "parsers": parsers, **summary}
