"""Pictures of one sentence: parse-head attention, PASCAL's D^p, dependency arcs of a CoNLL-U file.

Each picture is one PNG (matplotlib, Agg backend) of one sentence, chosen by its 0-based index (the sentence id
of fairseq's datasets and the order of ``fairseq-syntax-induce-parses``' CoNLL-U files); its title shows the
split (or file), the index and the text. Examples: docs/evaluation.md, "Pictures of one sentence".

``heads``   a checkpoint's parse heads (DBSA / SISA / SyncAttn; encoder and/or decoder) as heatmaps over the
            sentence's subword tokens (row: the token, column: its predicted parent), the data's parent of each
            supervised row boxed in red (dashed where the future mask hides it), each row's argmax dotted; below,
            the data's word tree above the words and the induced one below (green where it agrees, red where
            not). The decoder runs under teacher forcing; its rows follow the checkpoint's
            ``--dbsa-decoder-rows`` (``predicting``: row i predicts target token i; ``input``: row i reads it).
``pascal``  PASCAL's D^p (Bugliarello & Okazaki 2020, Eq. 6): row t holds token t's parent-scaling weights over
            the positions j, a Gaussian around its ``middle`` parent p_t (marked x), the word tree below;
            variance and weight function from the checkpoint (``--path``) or ``--variance`` / ``--weights``.
``conllu``  the arcs of sentence i of a CoNLL-U file; with ``--gold``, the gold tree above the words and the
            file's below (green where it agrees, red where not), with the sentence's UAS.

What was drawn (tokens, arcs, trees) is also stored as JSON in the PNG's metadata (text chunk
``fairseq-syntax-plot``) and, with ``--json``, in a file (with the plotted matrices).

The command is ``fairseq-syntax-plot`` (:mod:`fairseq_syntax.cli.plot`); each picture is one function
here (:func:`plot_heads`, :func:`plot_pascal`, :func:`plot_conllu`).
"""
from fairseq_syntax.analysis.drawing import (
    draw_arcs,
    draw_heatmap,
    pyplot_agg,
    read_metadata,  # noqa: F401  (importable from here, as documented)
    save,
    tree_colours,
    wrapped_title,
)
from fairseq_syntax.data.trees.conllu import read_conllu
from fairseq_syntax.data.datasets.syntax_request import SyntaxNeeds
from fairseq_syntax.errors import OptionError, SyntaxDataError


def help_text() -> str:
    """This module's docstring without its last paragraph (which names the command): the command's help."""
    return __doc__.strip().rsplit("\n\n", 1)[0]


# --- heads ---------------------------------------------------------------------------------------
def _text(dictionary, ids):
    return dictionary.string(ids, bpe_symbol="subword_nmt")


def heads_side(side, extra, batch, dictionary, syn, sid, strategy, coords, decode, model_side):
    """What one parse head's panel shows: labels, probabilities, marks, gold and induced word trees."""
    from fairseq_syntax.analysis.induce import (
        bpe_word_index,
        gold_word_heads,
        induce_heads,
        parse_rows,
        words_from_subwords,
    )

    logp, offset, token_ids = parse_rows(extra, batch, 0, side, dictionary, coords)
    if side == "src":
        positions = batch["net_input"]["src_tokens"][0]
    elif coords == "target":
        positions = batch["target"][0]
    else:
        positions = batch["net_input"]["prev_output_tokens"][0]
    labels = [dictionary[int(t)] for t in positions]
    prob = logp.float().exp().cpu().numpy()
    argmax = logp.argmax(-1).cpu().tolist()
    syntax = batch.get("syntax", {})
    prefix = "src_" if side == "src" else "tgt_"
    gold_parents = [None] * len(labels)
    marks = [("argmax", r, c) for r, c in enumerate(argmax)]
    if prefix + "parents" in syntax:
        parents = syntax[prefix + "parents"][0].tolist()
        supervised = syntax[prefix + "supervised"][0].tolist()
        for r, (p, sup) in enumerate(zip(parents, supervised)):
            if sup and p >= 0:
                gold_parents[r] = int(p)
                hidden = model_side == "decoder" and p > r  # the future mask hides it from this row
                marks.append(("gold-hidden" if hidden else "gold", r, int(p)))
    subwords = [dictionary[int(t)] for t in token_ids]
    if syn is not None:
        word_idx, gold = gold_word_heads(syn, sid)
    else:
        word_idx, gold = bpe_word_index(subwords), None
    induced = induce_heads(logp, word_idx, strategy, offset, decode)
    return {
        "side": model_side,
        "rows": None if side == "src" else ("predicting" if coords == "target" else "input"),
        "tokens": labels,
        "subwords": subwords,
        "gold_parents": gold_parents,
        "argmax": argmax,
        "words": words_from_subwords(subwords, word_idx),
        "gold_heads": gold,
        "induced_heads": induced,
        "decode": decode,
        "uas": None if gold is None else sum(a == b for a, b in zip(gold, induced)) / max(len(gold), 1),
    }, prob, marks


def plot_heads(path, data, output, split="test", index=0, side="both", decode="mst", decoder_rows=None,
               cpu=False, user_dir=None, json_path=None, dpi=150):
    """The parse heads of checkpoint ``path`` on sentence ``index`` of ``split`` of data-bin ``data`` -> PNG
    ``output`` (and JSON ``json_path``); returns what was drawn."""
    import torch

    from fairseq_syntax.analysis.checkpoint import (
        load_checkpoint,
        load_split,
        one_sentence_batch,
    )

    overrides = {"dbsa_decoder_rows": decoder_rows} if decoder_rows else {}
    model, cfg, task, device = load_checkpoint(path, data, overrides, cpu=cpu, user_dir=user_dir)
    has = {"encoder": bool(getattr(model.encoder, "dbsa_layer", 0)),
           "decoder": bool(getattr(model.decoder, "dbsa_layer", 0))}
    sides = [s for s in ("encoder", "decoder") if has[s] and side in ("both", s)]
    if not sides:
        what = "no parse head" if not any(has.values()) else f"no {side} parse head"
        raise SyntaxDataError(path, f"the model has {what} (DBSA/SISA/SyncAttn presets have them)")
    request = task.syntax_request  # the model's needs, resolved when the checkpoint's model was built
    strategy = request.strategy_of("target")
    coords = request.target_coordinates
    ds = load_split(task, split, cfg.task)
    batch = one_sentence_batch(ds, index, split, device)
    with torch.no_grad():
        _, extra = model(**batch["net_input"])
    src_text = _text(task.source_dictionary, batch["net_input"]["src_tokens"][0])
    tgt_text = _text(task.target_dictionary, batch["target"][0])
    panels = []
    for s in sides:
        side = "src" if s == "encoder" else "tgt"
        dictionary = task.source_dictionary if side == "src" else task.target_dictionary
        syn = ds.src_syntax if side == "src" else ds.tgt_syntax
        side_strategy = request.strategy_of("source") if side == "src" else strategy
        panels.append(heads_side(side, extra, batch, dictionary, syn, index, side_strategy, coords,
                                 decode, s))
    title = wrapped_title(f"{split} sentence {index}", f"source: {src_text}\ntarget: {tgt_text}")
    plt = pyplot_agg()
    size = max(max(len(p[0]["tokens"]) for p in panels) * 0.28 + 2.0, 4.5)
    width = max(size * len(panels), max(len(p[0]["words"]) for p in panels) * 0.75 + 1)
    arc_height = 0.45 * size
    fig = plt.figure(figsize=(width, size + arc_height * len(panels) + 1.0))
    grid = fig.add_gridspec(1 + len(panels), len(panels), height_ratios=[size] + [arc_height] * len(panels))
    for k, (rec, prob, marks) in enumerate(panels):
        ax = fig.add_subplot(grid[0, k])
        draw_heatmap(ax, prob, rec["tokens"], rec["tokens"], marks, vmax=1.0)
        rows = f", {rec['rows']} rows" if rec["rows"] else ""
        ax.set_title(f"{rec['side']} parse head{rows}\n(red box: data's parent; dot: argmax)", fontsize=8)
        ax.set_ylabel("token (row)", fontsize=8)
        ax.set_xlabel("parent (column)", fontsize=8)
        arcs = fig.add_subplot(grid[1 + k, :])
        trees = []
        if rec["gold_heads"] is not None:
            trees.append((rec["gold_heads"], 1, ["black"] * len(rec["gold_heads"])))
        trees.append((rec["induced_heads"], -1, tree_colours(rec["induced_heads"], rec["gold_heads"], "tab:blue")))
        draw_arcs(arcs, rec["words"], trees)
        uas = "" if rec["uas"] is None else f" (UAS {100 * rec['uas']:.1f})"
        arcs.set_title(f"{rec['side']} words: " + ("data's tree above, " if rec["gold_heads"] is not None else "")
                       + f"induced ({rec['decode']}) below{uas}", fontsize=8)
    fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    record = {"mode": "heads", "split": split, "index": index, "title": title,
              "source": src_text, "target": tgt_text, "checkpoint": path,
              "panels": [p[0] for p in panels], "matrices": [p[1].round(5).tolist() for p in panels]}
    save(fig, output, record, json_path, dpi)
    return record


# --- pascal --------------------------------------------------------------------------------------
def _data_task(data, source_lang, target_lang):
    """The syntax_translation task of a data-bin, without a model, collating source parents (middle)."""
    from fairseq.dataclass.configs import DatasetConfig

    from fairseq_syntax.tasks.syntax_translation import (
        SyntaxTranslationConfig,
        SyntaxTranslationTask,
    )

    dataset = DatasetConfig()  # the values fairseq's command line would interpolate
    cfg = SyntaxTranslationConfig(data=data, source_lang=source_lang, target_lang=target_lang,
                                  train_subset=dataset.train_subset, dataset_impl=dataset.dataset_impl,
                                  required_seq_len_multiple=dataset.required_seq_len_multiple)
    task = SyntaxTranslationTask.setup_task(cfg)
    task.add_model_needs(SyntaxNeeds(source=frozenset({"parents"}), strategy="middle"))
    return task


def plot_pascal(data, output, split="test", index=0, path=None, variance=1.0, weights="gaussian",
                source_lang=None, target_lang=None, cpu=False, json_path=None, dpi=150):
    """PASCAL's D^p of sentence ``index`` (the variance and weight function of checkpoint ``path``, else the
    given ones) -> PNG ``output``; returns what was drawn."""
    from fairseq_syntax.analysis.checkpoint import (
        load_checkpoint,
        load_split,
        one_sentence_batch,
    )
    from fairseq_syntax.modules.parent_scaled_attention import (
        ParentScaledHeads,
        parent_gaussian,
        parent_only,
    )

    variance, weights, task_cfg = variance, weights, None
    if path:
        model, cfg, task, _ = load_checkpoint(path, data, cpu=cpu)
        scaling = [m for m in model.modules() if isinstance(m, ParentScaledHeads)]
        if not scaling:
            raise SyntaxDataError(path, "the model has no PASCAL heads (--pascal-layer); leave --path out to draw "
                                  "D^p with --variance")
        variance, weights, task_cfg = scaling[0].variance, scaling[0].weight_function, cfg.task
    else:
        task = _data_task(data, source_lang, target_lang)
    if variance <= 0:
        raise OptionError(f"--variance must be > 0, not {variance}")
    ds = load_split(task, split, task_cfg)
    if ds.src_syntax is None:
        raise SyntaxDataError(data, f"split {split!r} has no source syntax data (PASCAL's parents)")
    batch = one_sentence_batch(ds, index, split)
    tokens = batch["net_input"]["src_tokens"]
    parents = batch["syntax"]["src_parents"].float()
    length = tokens.size(1)
    dp = parent_gaussian(parents, length, variance) if weights == "gaussian" else parent_only(parents, length)
    dp = dp[0].numpy()
    d = task.source_dictionary
    labels = [d[int(t)] for t in tokens[0]]
    src_text = _text(d, tokens[0])
    from fairseq_syntax.analysis.induce import gold_word_heads, words_from_subwords

    word_idx, gold = gold_word_heads(ds.src_syntax, index)
    words = words_from_subwords(labels[:-1], word_idx)
    par = parents[0].tolist()
    title = wrapped_title(f"{split} sentence {index}", f"source: {src_text}")
    plt = pyplot_agg()
    size = max(length * 0.28 + 2.0, 4.5)
    fig = plt.figure(figsize=(size, size * 1.45 + 0.6))
    grid = fig.add_gridspec(2, 1, height_ratios=[3, 1.3])
    ax = fig.add_subplot(grid[0])
    draw_heatmap(ax, dp, labels, labels, [("parent", t, p) for t, p in enumerate(par)], cmap="Purples")
    what = f"Gaussian, sigma^2 = {variance:g}" if weights == "gaussian" else "parent-only"
    ax.set_title(f"PASCAL D^p ({what}); x: middle parent p_t", fontsize=8)
    ax.set_ylabel("token t", fontsize=8)
    ax.set_xlabel("position j", fontsize=8)
    arcs = fig.add_subplot(grid[1])
    draw_arcs(arcs, words, [(gold, 1, ["black"] * len(gold))])
    arcs.set_title("the data's tree", fontsize=8)
    fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    record = {"mode": "pascal", "split": split, "index": index, "title": title, "source": src_text,
              "tokens": labels, "parents": par, "variance": variance, "weights": weights, "words": words,
              "gold_heads": gold, "checkpoint": path, "matrices": [dp.round(6).tolist()]}
    save(fig, output, record, json_path, dpi)
    return record


# --- conllu --------------------------------------------------------------------------------------
def _conllu_sentence(path, index):

    count = 0
    for count, sent in enumerate(read_conllu(path), 1):
        if count - 1 == index:
            return sent
    raise SyntaxDataError(path, f"--index {index}: the file has {count} sentences (0..{count - 1})")


def plot_conllu(conllu, output, index=0, gold_path=None, no_labels=False, json_path=None, dpi=150):
    """The arcs of sentence ``index`` of a CoNLL-U file (against ``gold_path``'s) -> PNG ``output``."""
    if index < 0:
        raise OptionError(f"--index must be >= 0, not {index}")
    sent = _conllu_sentence(conllu, index)
    gold = None
    if gold_path:
        g = _conllu_sentence(gold_path, index)
        if g.words != sent.words:
            raise SyntaxDataError(f"sentence {index}", f"{conllu} and {gold_path} have different words "
                             f"({len(sent.words)} vs {len(g.words)}: {' '.join(sent.words)!r} vs "
                             f"{' '.join(g.words)!r})")
        gold = g.heads
    labels = None if no_labels else (g.labels if gold is not None else sent.labels)  # on the upper tree
    text = " ".join(sent.tokens)
    title = wrapped_title(f"{conllu} sentence {index}", text)
    plt = pyplot_agg()
    n = len(sent.words)
    fig, ax = plt.subplots(figsize=(max(0.6 * n + 1.0, 4.0), 3.2 if gold is None else 5.0))
    trees = []
    if gold is not None:
        trees.append((gold, 1, ["black"] * n))
        trees.append((sent.heads, -1, tree_colours(sent.heads, gold, "tab:blue")))
        uas = sum(a == b for a, b in zip(sent.heads, gold)) / max(n, 1)
        ax.set_title(f"gold ({gold_path}) above, this file below: UAS {100 * uas:.1f}",
                     fontsize=8)
    else:
        trees.append((sent.heads, 1, ["tab:blue"] * n))
        uas = None
    draw_arcs(ax, sent.words, trees, labels)
    fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    record = {"mode": "conllu", "file": conllu, "gold_file": gold_path, "index": index, "title": title,
              "text": text, "words": sent.words, "heads": sent.heads, "labels": sent.labels, "gold_heads": gold,
              "uas": uas}
    save(fig, output, record, json_path, dpi)
    return record
