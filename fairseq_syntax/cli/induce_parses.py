"""Induced parses: run a trained model's parse heads on a data split.

For a model with DBSA / SISA parse heads (Deguchi et al. 2019; the PASCAL
paper's SISA), every token's predicted parent is the argmax of its parse
head's attention row. Subword parents are mapped back to words with the
strategy the model was trained for (the parent of a word's final subword for
``chain``, of its first subword for ``first``). By default the trees are
decoded as the best single-rooted spanning tree of the word-level scores
(Chu-Liu-Edmonds); ``--decode argmax`` takes each word's most attended head
instead (the word itself, EOS or the decoder's start symbol meaning root),
which need not form a tree. The decoder head runs under teacher forcing on the
reference. Writes the predicted trees as CoNLL-U (word level, unlabelled) and,
when the split has gold syntax data, reports UAS per side.

    python -m fairseq_syntax.cli.induce_parses DATA --path ckpt.pt --split test --output-prefix out/test
"""
import argparse
import math
import os
import sys

import numpy as np
import torch

from fairseq_syntax.cli import run
from fairseq_syntax.cli.checkpoint import add_parse_head_args
from fairseq_syntax.data.conllu import Sentence, write_conllu
from fairseq_syntax.data.parent_strategies import word_spans


def get_parser():
    p = argparse.ArgumentParser(
        prog="fairseq-syntax-induce-parses",
        description="Predict dependency trees with a trained model's parse heads (encoder: source side; decoder: "
        "target side under teacher forcing), write them as CoNLL-U and report UAS against the split's gold "
        "syntax data.",
    )
    p.add_argument("data", help="fairseq data-bin directory (with the syntax datasets for gold UAS)")
    p.add_argument("--path", required=True, help="model checkpoint")
    p.add_argument("--user-dir", default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                   help="plugin directory (default: this fairseq_syntax package)")
    p.add_argument("--split", default="test", help="data split (default test)")
    p.add_argument("--output-prefix", default=None,
                   help="write PREFIX.{src,tgt}.conllu with the predicted trees (default: do not write)")
    p.add_argument("--max-tokens", type=int, default=4000, help="batch size in tokens (default 4000)")
    add_parse_head_args(p)
    return p


def words_from_subwords(subwords, word_idx):
    """Word forms: the subwords of each word joined, subword-nmt markers removed."""
    forms = {}
    for s, w in zip(subwords, word_idx):
        forms.setdefault(int(w), []).append(s[:-2] if s.endswith("@@") else s)
    return ["".join(forms[w]) for w in sorted(forms)]


def bpe_word_index(subwords):
    """1-based word of each subword from the subword-nmt markers (``@@`` continues a word)."""
    return np.cumsum([0] + [not s.endswith("@@") for s in subwords[:-1]]) + 1


def word_heads(pred_pos, word_idx, strategy, offset):
    """Word-level heads (1-based, 0 = root) from per-subword predicted positions.

    ``pred_pos[i]`` is the predicted parent position of subword i in model
    coordinates; ``offset`` turns subword i into its model position.
    """
    word_idx = np.asarray(word_idx)
    first, last = word_spans(word_idx)
    rep = last if strategy == "chain" else first
    n = len(word_idx)
    heads = []
    for w, i in enumerate(rep, 1):
        k = int(pred_pos[i]) - offset  # predicted parent as a subword index
        if k < 0 or k >= n:  # EOS, the decoder's start symbol, padding: root
            heads.append(0)
            continue
        h = int(word_idx[k])
        heads.append(0 if h == w else h)
    return heads


def word_scores(logp, word_idx, strategy, offset):
    """Word-level arc scores (W+1 x W+1, index 0 = root) from a parse head's log-attention.

    Word w's representative subword (final for chain, first otherwise) scores
    head word h by its log-attention to h's first subword (where both
    strategies put the gold parent) and the root by its attention to its own
    root position (itself for chain, its word's first subword for first).
    """
    word_idx = np.asarray(word_idx)
    first, last = word_spans(word_idx)
    rep = (last if strategy == "chain" else first) + offset
    s = np.full((len(first) + 1, len(first) + 1), -np.inf)
    s[1:, 1:] = logp[np.ix_(rep, first + offset)]
    s[1:, 0] = logp[rep, rep if strategy == "chain" else first + offset]
    return s


def induce_heads(logp, word_idx, strategy, offset, decode="mst"):
    """Word-level heads (1-based, 0 = root) of one sentence from its parse head's log-attention ``logp``.

    ``logp`` (positions x positions, model coordinates of this sentence's
    row), ``word_idx`` the 1-based word of each subword, ``offset`` the model
    position of subword 0; ``decode``: ``mst`` or ``argmax`` (see --decode).
    """
    from fairseq_syntax.data.tree import max_spanning_tree

    if decode == "mst":
        scores = logp.float().clamp_min(math.log(1e-30)).cpu().numpy()
        return max_spanning_tree(word_scores(scores, word_idx, strategy, offset))
    n = len(word_idx)
    pred_pos = logp.argmax(-1)[offset : offset + n].cpu().numpy()
    return word_heads(pred_pos, word_idx, strategy, offset)


def parse_rows(extra, batch, b, side, dictionary, target_coordinates="target", left_pad_target=False):
    """(log-attention, offset, subword token ids) of batch row ``b``'s parse head on ``side`` (src or tgt).

    ``offset`` is the model position of the sentence's first subword: the
    left padding on the source; on the target 0 for ``predicting`` decoder
    rows (``target_coordinates`` "target": position j is target token j) and
    1 for ``input`` rows (position j holds y_j = target token j - 1).
    """
    if side == "src":
        logp = extra["encoder_parse_logprobs"][0][b]
        toks = batch["net_input"]["src_tokens"][b]
        real = toks.ne(dictionary.pad()).nonzero().flatten()
        offset = int(real[0])  # left padding
        n = len(real) - 1  # without EOS
        return logp, offset, toks[offset : offset + n]
    if left_pad_target:
        raise SystemExit("error: --left-pad-target is not supported here")
    logp = extra["parse_logprobs"][0][b]
    tgt = batch["target"][b]
    n = int(tgt.ne(dictionary.pad()).sum()) - 1
    offset = 0 if target_coordinates == "target" else 1
    return logp, offset, tgt[:n]


def gold_word_heads(syn, sid):
    """(word index of each subword, gold word heads) of sentence ``sid`` of a side's syntax data."""
    word_idx = syn.words[sid].numpy()
    gold_first = word_spans(word_idx)[0]
    return word_idx, syn.heads[sid].numpy()[gold_first].tolist()


def main(argv=None):
    from fairseq import utils

    from fairseq_syntax.cli.checkpoint import load_checkpoint, load_split
    from fairseq_syntax.data.tree import unlabeled_attachment

    args = get_parser().parse_args(argv)
    overrides = {"dbsa_decoder_rows": args.decoder_rows} if args.decoder_rows else {}
    model, cfg, task, device = load_checkpoint(args.path, args.data, overrides, cpu=args.cpu, user_dir=args.user_dir)
    use_cuda = device.type == "cuda"
    strategy = task.syntax_request.strategy_of("source")  # the model's, resolved when it was built
    target_coordinates = task.syntax_request.target_coordinates
    has_enc = bool(getattr(model.encoder, "dbsa_layer", 0))
    has_dec = bool(getattr(model.decoder, "dbsa_layer", 0))
    if not (has_enc or has_dec):
        print("error: the model has no parse head", file=sys.stderr)
        sys.exit(1)
    ds = load_split(task, args.split, cfg.task)
    itr = task.get_batch_iterator(ds, max_tokens=args.max_tokens, max_positions=utils.resolve_max_positions(
        task.max_positions(), model.max_positions())).next_epoch_itr(shuffle=False)
    sides = {"src": ([], [], [], task.source_dictionary, ds.src_syntax, has_enc),
             "tgt": ([], [], [], task.target_dictionary, ds.tgt_syntax, has_dec)}
    with torch.no_grad():
        for batch in itr:
            batch = utils.move_to_cuda(batch) if use_cuda else batch
            _, extra = model(**batch["net_input"])
            for b, sid in enumerate(batch["id"].tolist()):
                for side, (ids, preds, golds, dictionary, syn, on) in sides.items():
                    if not on:
                        continue
                    logp, offset, token_ids = parse_rows(extra, batch, b, side, dictionary,
                                                         target_coordinates,
                                                         task.cfg.left_pad_target)
                    subwords = [dictionary[int(t)] for t in token_ids]
                    if syn is not None:
                        word_idx, gold = gold_word_heads(syn, sid)
                        golds.append(gold)
                    else:  # no gold: word boundaries from the BPE markers
                        word_idx = bpe_word_index(subwords)
                    ids.append(sid)
                    forms = words_from_subwords(subwords, word_idx)
                    heads = induce_heads(logp, word_idx, strategy, offset, args.decode)
                    preds.append(Sentence(forms, heads, ["_"] * len(forms)))
    report = {}
    for side, (ids, preds, golds, _, _, on) in sides.items():
        if not on:
            continue
        order = np.argsort(ids)
        preds = [preds[i] for i in order]
        if args.output_prefix:
            lang = task.cfg.source_lang if side == "src" else task.cfg.target_lang
            path = f"{args.output_prefix}.{lang}.conllu"
            os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
            with open(path, "w", encoding="utf-8") as f:
                write_conllu(preds, f)
            print(f"wrote {len(preds)} predicted {side} trees -> {path}")
        if golds:
            golds = [golds[i] for i in order]
            c, n = unlabeled_attachment(golds, [p.heads for p in preds])
            report[side] = c / max(n, 1)
            head = "encoder" if side == "src" else "decoder (teacher forcing)"
            line = f"UAS {head} parse head, split {args.split}: {100 * c / max(n, 1):.2f} ({c}/{n} words)"
            if side == "tgt":  # a future-masked head can only find heads that precede their dependent
                ca = na = 0
                for g, pr in zip(golds, preds):
                    for w, (gh, ph) in enumerate(zip(g, pr.heads), 1):
                        if gh < w:
                            na += 1
                            ca += gh == ph
                report["tgt_attainable"] = ca / max(na, 1)
                line += f"; on words whose head precedes them: {100 * ca / max(na, 1):.2f} ({ca}/{na})"
            print(line)
    return report


def cli_main(argv=None):
    run(main, argv)


if __name__ == "__main__":
    cli_main()
