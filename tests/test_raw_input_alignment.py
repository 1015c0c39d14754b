"""Raw input reaches the model segmented and parsed as the training text was, each line with its own tree.

fairseq-interactive hands the model a batch's tokens alone; the task finds each raw line's parse again by its
token ids, taking lines of identical ids in line order. Lines that differ only outside the vocabulary have
identical ids and their own trees: the rows must come in line order (fairseq's length sort of a batch is not
stable, and its inference dataset shuffles lines of one length), or two lines swap trees and nothing says so.
A parser named at decoding parses the tokens the record's tokenizer makes, as they are; fairseq-interactive's
own --bpe must be the data-bin's."""
import types

import numpy as np
import pytest
import torch
from fairseq.data import Dictionary

from fairseq_syntax.data.datasets.syntax_dataset import stable_rows
from fairseq_syntax.data.datasets.syntax_request import SyntaxRequest
from fairseq_syntax.inference.raw_input import RawInput
from fairseq_syntax.preparation.databin_record import LanguageRecord, PreparationRecord

EVEN, ODD = [1, 0, 1], [0, 1, 1]  # the depths of "a X b" parsed as a<-X->b, and as a->X, a->b


def _raw_input(folder, n):
    """A RawInput over n lines "a Xi b" (Xi outside the vocabulary: every line has the same token ids), even
    lines parsed X-headed, odd lines a-headed, by the CoNLL-U lookup parser the record names."""
    lines, conllu = [], []
    for i in range(n):
        words, heads = ["a", f"X{i}", "b"], [2, 0, 2] if i % 2 == 0 else [0, 1, 1]
        lines.append(" ".join(words))
        conllu.append("".join(f"{k + 1}\t{w}\t_\t_\t_\t_\t{h}\tdep\t_\t_\n" for k, (w, h) in
                              enumerate(zip(words, heads))) + "\n")
    (folder / "lookup.conllu").write_text("".join(conllu))
    PreparationRecord(languages={
        "en": LanguageRecord(tokenizer="given", parser={"backend": "conllu",
                                                         "options": {"path": str(folder / "lookup.conllu")}}),
        "de": LanguageRecord(tokenizer="given")}).save(str(folder))
    d = Dictionary()
    d.add_symbol("a")
    d.add_symbol("b")
    return RawInput(_depths_task(folder, d)), lines, d


def _depths_task(folder, dictionary, parser="auto", parser_model=None):
    """A stand-in for the task RawInput serves: En->De on the data-bin ``folder``, a model reading source
    depths."""
    cfg = types.SimpleNamespace(data=str(folder), inference_parser=parser, inference_parser_lang=None,
                                inference_parser_model=parser_model, source_lang="en", target_lang="de",
                                max_source_positions=1024)
    return types.SimpleNamespace(cfg=cfg, src_dict=dictionary, src_label_dict=None, model_max_source_positions=[],
                                 syntax_request=SyntaxRequest(source=frozenset({"depths"}),
                                                              inputs=frozenset({"src_depths"})))


@pytest.mark.parametrize("batch_size", [200, 16])  # one batch; several, each line's ids in each
def test_lines_with_identical_ids_keep_their_own_trees(tmp_path, batch_size):
    from fairseq.data import LanguagePairDataset

    n = 200
    raw, lines, d = _raw_input(tmp_path, n)
    tokens, lengths = raw.interactive_lines(lines)  # fairseq-interactive's hook
    base = LanguagePairDataset(tokens, lengths, d, tgt_dict=d)  # fairseq's build_dataset_for_inference
    ds = raw.dataset_for_inference(base, tokens)
    order = ds.ordered_indices()
    seen = []
    for start in range(0, n, batch_size):
        batch = ds.collater([ds[int(i)] for i in order[start:start + batch_size]])
        # interactive's own batch: tokens and lengths alone
        sample = {"net_input": {k: batch["net_input"][k] for k in ("src_tokens", "src_lengths")}}
        raw.add_missing_source_inputs(sample)  # inference_step's hook
        depths = sample["net_input"]["src_depths"][:, :3].tolist()
        for row, line in enumerate(batch["id"].tolist()):
            assert depths[row] == (EVEN if line % 2 == 0 else ODD), (line, depths[row])
            seen.append(line)
    assert sorted(seen) == list(range(n))


def test_stable_rows_orders_by_length_then_index_and_permutes_every_row_tensor():
    batch = {"id": torch.tensor([5, 2, 9, 1]), "nsentences": 4, "ntokens": 11, "target": None,
             "net_input": {"src_tokens": torch.tensor([[7, 2], [8, 2], [9, 2], [6, 2]]),
                           "src_lengths": torch.tensor([3, 3, 3, 2])}}
    out = stable_rows(batch)
    assert out["id"].tolist() == [2, 5, 9, 1] and out["ntokens"] == 11 and out["target"] is None
    assert out["net_input"]["src_tokens"][:, 0].tolist() == [8, 7, 9, 6]
    assert out["net_input"]["src_lengths"].tolist() == [3, 3, 3, 2]
    assert stable_rows(out) is out  # already in order: the batch itself
    assert np.array_equal(batch["id"].numpy(), [5, 2, 9, 1])  # the input is not changed


@pytest.mark.parametrize("tokenizer", ["given", "moses"])
def test_a_parser_named_at_decoding_parses_the_recorded_tokens_as_they_are(tmp_path, tokenizer):
    """A data-bin whose source tokens came before any parser (given as CoNLL-U: no parser recorded) is decoded
    with --inference-parser udpipe: UDPipe parses the tokens the record's tokenizer makes, as they are. It
    re-tokenised them (``and/or $5`` became ``and / or $ 5``; Moses' ``&apos;`` became ``&apos ;``): tokens
    and trees the model never saw, and nothing said so."""
    from conftest import require_shared

    model = require_shared("models", "en_ewt_udpipe_small.udpipe")
    PreparationRecord(languages={"en": LanguageRecord(tokenizer=tokenizer),
                                 "de": LanguageRecord(tokenizer="given")}).save(str(tmp_path))
    task = _depths_task(tmp_path, Dictionary(), parser="udpipe", parser_model=model)
    line = "it costs 5km/h and/or $5 ." if tokenizer == "given" else "I don't know & care ."
    (src,) = RawInput(task).encode([line]).sources
    expected = line.split() if tokenizer == "given" else ["I", "don", "&apos;t", "know", "&amp;", "care", "."]
    assert src.tokens == expected
    assert [w for w in src.tree.forms("surface")] == expected and len(src.heads) == len(expected)


def test_fairseq_interactives_own_bpe_must_be_the_data_bins(tmp_path, caplog):
    """fairseq-interactive with --bpe / --tokenizer bypasses the record: other codes (4 merges instead of 500
    segmented every word otherwise) or another kind of BPE are refused naming the data-bin's codes; the same
    codes under another name pass; --tokenizer alone on a BPE'd data-bin is said once."""
    from fairseq_syntax.errors import SyntaxDataError

    (tmp_path / "bpe.codes").write_text("#version: 0.2\nt h\nth e</w>\n")
    (tmp_path / "copy.codes").write_text("#version: 0.2\nt h\nth e</w>\n")
    (tmp_path / "other.codes").write_text("#version: 0.2\nt h\n")
    PreparationRecord(languages={"en": LanguageRecord(tokenizer="moses"), "de": LanguageRecord(tokenizer="moses")},
                      bpe={"en": "bpe.codes", "de": "bpe.codes"}).save(str(tmp_path))
    cfg = types.SimpleNamespace(data=str(tmp_path), source_lang="en", target_lang="de")
    raw = RawInput(types.SimpleNamespace(cfg=cfg))
    bpe = lambda name, codes=None: types.SimpleNamespace(_name=name, bpe_codes=codes)  # noqa: E731
    raw.check_given_segmentation(bpe("subword_nmt", str(tmp_path / "copy.codes")))
    with pytest.raises(SyntaxDataError, match=r"other\.codes.*not the codes this data-bin was made with"):
        raw.check_given_segmentation(bpe("subword_nmt", str(tmp_path / "other.codes")))
    with pytest.raises(SyntaxDataError, match=r"--bpe sentencepiece: .*--bpe-codes .*bpe\.codes"):
        raw.check_given_segmentation(bpe("sentencepiece"))
    raw.tokenizer_given = True
    with caplog.at_level("WARNING"):
        raw.check_given_segmentation(None)
    assert "--tokenizer without --bpe: the input is not BPE'd here" in caplog.text
    PreparationRecord(languages={"en": LanguageRecord(tokenizer="moses"),
                                 "de": LanguageRecord(tokenizer="moses")}).save(str(tmp_path))
    raw = RawInput(types.SimpleNamespace(cfg=cfg))
    with pytest.raises(SyntaxDataError, match="has no BPE"):
        raw.check_given_segmentation(bpe("subword_nmt", str(tmp_path / "copy.codes")))


def test_the_codes_a_checkpoint_was_trained_with_hold_without_a_record_and_with_a_record_of_none(tmp_path, caplog):
    """The SHA-256 of the codes a loaded checkpoint was trained with (task state): fairseq-interactive's own
    --bpe-codes are held to it even on a folder without preparation.json; a record that names no BPE, where the
    model was trained on BPE'd text, is refused (raw input would go in unsegmented); --tokenizer alone (the codes
    unused) still only warns; a record that names codes for the other language only is one line, not a
    KeyError."""
    from fairseq_syntax.durable_files import file_sha256
    from fairseq_syntax.errors import SyntaxDataError

    (tmp_path / "bpe.codes").write_text("#version: 0.2\nt h\nth e</w>\n")
    (tmp_path / "other.codes").write_text("#version: 0.2\nt h\n")
    trained = {"en": file_sha256(str(tmp_path / "bpe.codes"))}
    cfg = types.SimpleNamespace(data=str(tmp_path), source_lang="en", target_lang="de")
    bpe = lambda codes: types.SimpleNamespace(_name="subword_nmt", bpe_codes=codes)  # noqa: E731
    raw = RawInput(types.SimpleNamespace(cfg=cfg))  # no preparation.json here
    raw.expect_trained_codes(trained)
    raw.check_given_segmentation(bpe(str(tmp_path / "bpe.codes")))
    with pytest.raises(SyntaxDataError, match=r"other\.codes: --bpe-codes: not the codes the model was trained with"):
        raw.check_given_segmentation(bpe(str(tmp_path / "other.codes")))
    record = PreparationRecord(languages={"en": LanguageRecord(tokenizer="moses"),
                                          "de": LanguageRecord(tokenizer="moses")})
    record.expect_trained_codes(trained)
    with pytest.raises(SyntaxDataError, match="names no BPE codes for 'en', and the model was trained on BPE'd"):
        record.bpe_codes("en", str(tmp_path))
    assert record.bpe_codes("en", str(tmp_path), check_trained=False) is None
    record.bpe = {"de": "bpe.codes"}
    with pytest.raises(SyntaxDataError, match=r"names no BPE codes for 'fr' \(it names \['de'\]\)"):
        record.bpe_codes("fr", str(tmp_path))
    record.bpe = {"en": "other.codes", "de": "other.codes"}
    record.save(str(tmp_path))
    raw = RawInput(types.SimpleNamespace(cfg=cfg))
    raw.record.expect_trained_codes(trained)
    raw.tokenizer_given = True
    with caplog.at_level("WARNING"):
        raw.check_given_segmentation(None)  # --tokenizer alone: the data-bin's codes are not used
    assert "--tokenizer without --bpe" in caplog.text
    with pytest.raises(SyntaxDataError, match="not the BPE codes of 'en' the model was trained with"):
        raw.record.bpe_codes("en", str(tmp_path))
