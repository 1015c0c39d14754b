"""stanza backend (the default parser).

Runs ``stanza.Pipeline(lang, processors='tokenize,mwt,pos,lemma,depparse')``
with ``tokenize_no_ssplit`` (one tree per input line) or
``tokenize_pretokenized``. Multiword tokens (``zum`` -> ``zu dem``) come out
as stanza Tokens with several Words and are kept as such.
"""
from __future__ import annotations

from typing import List, Optional, Sequence

from fairseq_syntax.data.trees.conllu import Sentence, normalize_form
from fairseq_syntax.parsing.base import Parser


def document_to_sentences(doc) -> List[Sentence]:
    """Convert a stanza Document (pipeline output or CoNLL.conll2doc) to Sentences."""
    out = []
    for sent in doc.sentences:
        tokens, token_of_word, words, heads, labels = [], [], [], [], []
        for tok in sent.tokens:
            tokens.append(normalize_form(tok.text))
            for w in tok.words:
                words.append(normalize_form(w.text))
                heads.append(int(w.head))
                labels.append(w.deprel or "_")
                token_of_word.append(len(tokens) - 1)
        out.append(Sentence(words, heads, labels, tokens, token_of_word))
    return out


class StanzaParser(Parser):
    def __init__(
        self,
        lang: str = "en",
        model_dir: Optional[str] = None,
        gpu: bool = False,
        pretokenized: bool = False,
        pipeline=None,
        **kwargs,
    ):
        self.pretokenized = pretokenized
        if pipeline is None:
            import stanza

            opts = dict(
                lang=lang,
                processors="tokenize,mwt,pos,lemma,depparse",
                use_gpu=gpu,
                download_method=None,
                logging_level="WARN",
            )
            if model_dir:
                opts["dir"] = model_dir
            if pretokenized:
                opts["tokenize_pretokenized"] = True
            else:
                opts["tokenize_no_ssplit"] = True
            opts.update(kwargs)
            try:
                pipeline = stanza.Pipeline(**opts)
            except Exception as e:  # stanza raises several kinds when models are missing
                raise RuntimeError(
                    f"could not load stanza models for {lang!r} (model dir {model_dir or 'stanza default'}): {e}. "
                    "Download them once with stanza.download(lang, model_dir=...) on a machine with access, "
                    "or parse with another backend / your own CoNLL-U."
                ) from e
        self.pipeline = pipeline

    def parse(self, lines: Sequence[str]) -> List[Sentence]:
        if self.pretokenized:
            doc = self.pipeline([ln.split() for ln in lines])
        else:
            doc = self.pipeline("\n\n".join(ln.strip() for ln in lines))
        return document_to_sentences(doc)
