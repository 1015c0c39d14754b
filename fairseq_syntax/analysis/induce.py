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

The command is ``fairseq-syntax-induce-parses`` (:mod:`fairseq_syntax.cli.induce_parses`).
"""
import numpy as np
import torch

from fairseq_syntax.data.trees.conllu import Sentence
from fairseq_syntax.data.alignment.parent_strategies import word_spans
from fairseq_syntax.data.trees.decoding import induce_heads
from fairseq_syntax.data.trees.tree import unlabeled_attachment
from fairseq_syntax.errors import OptionError


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
        raise OptionError("--left-pad-target is not supported here")
    logp = extra["parse_logprobs"][0][b]
    tgt = batch["target"][b]
    n = int(tgt.ne(dictionary.pad()).sum()) - 1
    offset = 0 if target_coordinates == "target" else 1
    return logp, offset, tgt[:n]


def words_from_subwords(subwords, word_idx):
    """Word forms: the subwords of each word joined, subword-nmt markers removed."""
    forms = {}
    for s, w in zip(subwords, word_idx):
        forms.setdefault(int(w), []).append(s[:-2] if s.endswith("@@") else s)
    return ["".join(forms[w]) for w in sorted(forms)]


def bpe_word_index(subwords):
    """1-based word of each subword from the subword-nmt markers (``@@`` continues a word)."""
    return np.cumsum([0] + [not s.endswith("@@") for s in subwords[:-1]]) + 1


def gold_word_heads(syn, sid):
    """(word index of each subword, gold word heads) of sentence ``sid`` of a side's syntax data."""
    word_idx = syn.words[sid].numpy()
    gold_first = word_spans(word_idx)[0]
    return word_idx, syn.heads[sid].numpy()[gold_first].tolist()


def induce_parses(model, task, dataset, decode: str = "mst", max_tokens: int = 4000, device=None):
    """The trees a model's parse heads give on ``dataset`` (a split of ``task``, loaded with the model's
    request): {side: (predicted Sentences, gold word heads or None)} in sentence order, side "src" (encoder head)
    and/or "tgt" (decoder head, teacher forcing)."""
    from fairseq import utils

    use_cuda = device is not None and device.type == "cuda"
    strategy = task.syntax_request.strategy_of("source")  # the model's, resolved when it was built
    target_coordinates = task.syntax_request.target_coordinates
    has_enc = bool(getattr(model.encoder, "dbsa_layer", 0))
    has_dec = bool(getattr(model.decoder, "dbsa_layer", 0))
    if not (has_enc or has_dec):
        raise ValueError("the model has no parse head (the DBSA / SISA / SyncAttn presets have them)")
    itr = task.get_batch_iterator(dataset, max_tokens=max_tokens, max_positions=utils.resolve_max_positions(
        task.max_positions(), model.max_positions())).next_epoch_itr(shuffle=False)
    sides = {"src": ([], [], [], task.source_dictionary, dataset.src_syntax, has_enc),
             "tgt": ([], [], [], task.target_dictionary, dataset.tgt_syntax, has_dec)}
    with torch.no_grad():
        for batch in itr:
            batch = utils.move_to_cuda(batch) if use_cuda else batch
            _, extra = model(**batch["net_input"])
            for b, sid in enumerate(batch["id"].tolist()):
                for side, (ids, preds, golds, dictionary, syn, on) in sides.items():
                    if not on:
                        continue
                    logp, offset, token_ids = parse_rows(extra, batch, b, side, dictionary, target_coordinates,
                                                         task.cfg.left_pad_target)
                    subwords = [dictionary[int(t)] for t in token_ids]
                    if syn is not None:
                        word_idx, gold = gold_word_heads(syn, sid)
                        golds.append(gold)
                    else:  # no gold: word boundaries from the BPE markers
                        word_idx = bpe_word_index(subwords)
                    ids.append(sid)
                    forms = words_from_subwords(subwords, word_idx)
                    heads = induce_heads(logp, word_idx, strategy, offset, decode)
                    preds.append(Sentence(forms, heads, ["_"] * len(forms)))
    out = {}
    for side, (ids, preds, golds, _, _, on) in sides.items():
        if on:
            order = np.argsort(ids)
            out[side] = ([preds[i] for i in order], [golds[i] for i in order] if golds else None)
    return out


def attachment_report(side: str, preds, golds):
    """(UAS, the printed line) of one side's trees against gold word heads; the decoder's line adds the UAS on
    the words whose head precedes them (all a future-masked head can find)."""

    c, n = unlabeled_attachment(golds, [p.heads for p in preds])
    head = "encoder" if side == "src" else "decoder (teacher forcing)"
    line = f"{head} parse head: {100 * c / max(n, 1):.2f} ({c}/{n} words)"
    if side == "tgt":
        ca = na = 0
        for g, pr in zip(golds, preds):
            for w, (gh, ph) in enumerate(zip(g, pr.heads), 1):
                if gh < w:
                    na += 1
                    ca += gh == ph
        line += f"; on words whose head precedes them: {100 * ca / max(na, 1):.2f} ({ca}/{na})"
        return c / max(n, 1), ca / max(na, 1), line
    return c / max(n, 1), None, line
