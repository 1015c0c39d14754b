"""``attention_lstm``: the ANMT baseline and CKY-based convolutional attention.

Watanabe et al. (2017), "CKY-based Convolutional Attention for Neural Machine Translation" (IJCNLP):

* Encoder (Sec. 2, Eq. 1-5): two directions, each a stack of LSTMs over the word embeddings v_i; a layer l > 1
  adds its input (residual, Eq. 3-4); the state of word i is the sum of the two directions' top layers (Eq. 5).
  All sizes are d.
* Decoder (Eq. 6-11): fairseq's ``LSTMDecoder`` (input feeding, layer 2 reads layer 1) with its layers
  initialised from the reverse direction's final (h, c) of the same layer, and global **dot** attention on the
  top layer's state (:class:`~fairseq_syntax.modules.lstm_attention.DotAttention`).
* ``--cky`` (Sec. 3): the encoder also builds the CKY-CNN table over its states
  (:mod:`fairseq_syntax.modules.cky_table`, Eq. 12) and the decoder attends jointly over states and cells
  (:class:`~fairseq_syntax.modules.lstm_attention.CKYAttention`, Eq. 13-16). The table is part of the encoder
  output, so beam search reorders it and every decoding step reuses it.

No parse is needed: the CKY table considers every split of every span. The table over T source tokens (the
source's EOS included: it is one of the encoder states of Eq. 13) has T(T+1)/2 cells; its cost grows as T^3
(split candidates, O(d) each) plus T^2 (one DU per cell); timings: docs/benchmarks.md, "Speed and memory".

Presets (``--arch``, :mod:`fairseq_syntax.models.presets`): ``lstm_luong`` (the baseline), ``cky_lstm``
(d = 256 as in the paper) and ``*_tiny`` (d = 32) for tests.
"""
from dataclasses import dataclass, field

import torch
from fairseq import utils
from fairseq.dataclass import ChoiceEnum, FairseqDataclass
from fairseq.models import (
    FairseqEncoder,
    FairseqEncoderDecoderModel,
    register_model,
)
from fairseq.models.lstm import LSTM, Embedding, LSTMDecoder
from fairseq.modules import FairseqDropout
from torch import Tensor, nn
from torch.nn.utils.rnn import PackedSequence, pack_padded_sequence, pad_packed_sequence

from fairseq_syntax.errors import OptionError
from fairseq_syntax.modules.cky_table import NORMS, CKYTable
from fairseq_syntax.modules.lstm_attention import (
    CKYAttention,
    DotAttention,
    defer_memory_grad,
    memory_states,
)


@dataclass
class AttentionLSTMConfig(FairseqDataclass):
    embed_dim: int = field(default=256, metadata={"help": "d: word embeddings and every LSTM / CKY state"})
    encoder_layers: int = field(default=2, metadata={"help": "LSTM layers per encoder direction (Eq. 1-4)"})
    decoder_layers: int = field(default=2, metadata={"help": "decoder LSTM layers (Eq. 6-7); at most encoder-layers"})
    dropout: float = field(default=0.2, metadata={"help": "dropout on embeddings and LSTM outputs (paper: 0.2)"})
    cky: bool = field(default=False, metadata={"help": "CKY-based convolutional attention (Sec. 3) over the "
                                                       "encoder states"})
    cky_dropout: float = field(default=0.3, metadata={"help": "dropout on every Deduction Unit output (paper's "
                                                              "CNN dropout: 0.3)"})
    cky_norm: ChoiceEnum(NORMS) = field(default="layer", metadata={
        "help": "normalisation of every Deduction Unit output: layer (LayerNorm, as each convolution of He et al. "
                "2016's residual unit that the paper's DU follows is normalised; without it the cells' norms "
                "explode with the span length on real text) or none (the paper's text, literally)"})
    share_decoder_input_output_embed: bool = field(default=False, metadata={"help": "tie the decoder's input "
                                                                                    "embedding and output matrix"})
    max_source_positions: int = field(default=1024, metadata={"help": "longest source accepted"})
    max_target_positions: int = field(default=1024, metadata={"help": "longest target accepted"})


def reverse_padded(x: Tensor, lengths: Tensor) -> Tensor:
    """Reverse each right-padded sequence of x (B, T, ...) within its length; padding stays in place."""
    t = torch.arange(x.size(1), device=x.device).unsqueeze(0)
    idx = torch.where(t < lengths.unsqueeze(1), lengths.unsqueeze(1) - 1 - t, t)
    return x.gather(1, idx.view(*idx.shape, *([1] * (x.dim() - 2))).expand_as(x))


class ResidualLSTMStack(nn.Module):
    """One encoder direction: LSTM layers over a packed batch, layer l > 1 with a residual (Eq. 1, 3)."""

    def __init__(self, dim: int, layers: int, dropout: float):
        super().__init__()
        self.layers = nn.ModuleList(LSTM(dim, dim) for _ in range(layers))  # fairseq's LSTM (uniform init)
        self.dropout = FairseqDropout(dropout, module_name=self.__class__.__name__)

    def forward(self, packed: PackedSequence):
        """-> (top-layer outputs, packed), final h (L, B, d), final c (L, B, d)."""
        hs, cs = [], []
        x = packed
        for i, lstm in enumerate(self.layers):
            inp = x if i == 0 else x._replace(data=self.dropout(x.data))
            out, (h, c) = lstm(inp)
            x = out if i == 0 else out._replace(data=out.data + x.data)
            hs.append(h[0])
            cs.append(c[0])
        return x, torch.stack(hs), torch.stack(cs)


class AttentionLSTMEncoder(FairseqEncoder):
    """Eq. 1-5 (and the CKY table of Eq. 12 with ``--cky``); returns fairseq's LSTM encoder-output tuple.

    ``(memory (M, B, d), h (L, B, d), c (L, B, d), padding (M, B))`` in right-padded coordinates: memory =
    the encoder states (M = T), or ``[states; CKY cells]`` (M = T + T(T+1)/2); h and c are the reverse
    direction's final states, one per layer (the decoder's initial states).
    """

    def __init__(self, dictionary, cfg):
        super().__init__(dictionary)
        dim = cfg.embed_dim
        self.padding_idx = dictionary.pad()
        self.max_source_positions = cfg.max_source_positions
        self.embed_tokens = Embedding(len(dictionary), dim, self.padding_idx)
        self.dropout_in = FairseqDropout(cfg.dropout, module_name=self.__class__.__name__)
        self.forward_lstm = ResidualLSTMStack(dim, cfg.encoder_layers, cfg.dropout)
        self.backward_lstm = ResidualLSTMStack(dim, cfg.encoder_layers, cfg.dropout)
        self.cky = CKYTable(dim, cfg.cky_dropout, cfg.cky_norm) if cfg.cky else None

    def forward(self, src_tokens: Tensor, src_lengths: Tensor, **unused):
        tokens = utils.convert_padding_direction(src_tokens, self.padding_idx, left_to_right=True)  # no-op if right
        width = tokens.size(1)
        x = self.dropout_in(self.embed_tokens(tokens))
        cpu_lengths = src_lengths.cpu()  # packing needs host lengths (as fairseq's LSTMEncoder)

        def run(stack, inp):
            packed = pack_padded_sequence(inp, cpu_lengths, batch_first=True, enforce_sorted=False)
            out, h, c = stack(packed)
            return pad_packed_sequence(out, batch_first=True, total_length=width)[0], h, c

        fwd, _, _ = run(self.forward_lstm, x)
        bwd, h, c = run(self.backward_lstm, reverse_padded(x, src_lengths))
        states = fwd + reverse_padded(bwd, src_lengths)  # Eq. 5, (B, T, d)
        padding = tokens.eq(self.padding_idx)
        if self.cky is not None:
            cells, cell_padding, _ = self.cky(states, src_lengths)
            states = torch.cat([states, cells], dim=1)
            padding = torch.cat([padding, cell_padding], dim=1)
        return states.transpose(0, 1), h, c, padding.t()

    def reorder_encoder_out(self, encoder_out, new_order):
        """Reorder for beam search. Selection is batch-major, so the (M, B, d) memory stays a view of a
        contiguous (B, M, d) tensor that the attention's batched products read without a copy.

        With CKY attention the memory (T + T(T+1)/2 rows) is not copied per hypothesis: when the new
        rows come in equal consecutive groups per sentence (fairseq's beam search: beam_size rows per
        sentence, finished sentences dropped), it keeps one row per sentence and the attention reads it
        once per group; any other order falls back to one memory row per hypothesis.
        """
        def select(t, order):
            return t.transpose(0, 1).index_select(0, order).transpose(0, 1)

        memory, h, c, padding = encoder_out
        h, c = select(h, new_order), select(c, new_order)
        if self.cky is None:
            return select(memory, new_order), h, c, select(padding, new_order)
        per_sentence = encoder_out[1].size(1) // memory.size(1)
        sentence = torch.div(new_order, per_sentence, rounding_mode="floor")  # memory row of each new row
        kept = torch.unique_consecutive(sentence)
        group = new_order.numel() // kept.numel()
        if group * kept.numel() != new_order.numel() or not torch.equal(sentence, kept.repeat_interleave(group)):
            kept = sentence
        if not torch.equal(kept, torch.arange(memory.size(1), device=kept.device)):
            memory, padding = select(memory, kept), select(padding, kept)
        return memory, h, c, padding

    def max_positions(self):
        return self.max_source_positions


class AttentionLSTMDecoder(LSTMDecoder):
    """fairseq's LSTM decoder (Eq. 6-7, 10-11) with dot (Eq. 8-9) or CKY (Eq. 13-16) attention."""

    def __init__(self, dictionary, cfg):
        super().__init__(
            dictionary, embed_dim=cfg.embed_dim, hidden_size=cfg.embed_dim, out_embed_dim=cfg.embed_dim,
            num_layers=cfg.decoder_layers, dropout_in=cfg.dropout, dropout_out=cfg.dropout, attention=True,
            encoder_output_units=cfg.embed_dim, share_input_output_embed=cfg.share_decoder_input_output_embed,
            max_target_positions=cfg.max_target_positions,
        )
        self.attention = CKYAttention(cfg.embed_dim) if cfg.cky else DotAttention(cfg.embed_dim)

    def extract_features(self, prev_output_tokens, encoder_out=None, incremental_state=None):
        if encoder_out is None or not isinstance(self.attention, CKYAttention):
            return super().extract_features(prev_output_tokens, encoder_out, incremental_state)
        x, attn = super().extract_features(prev_output_tokens, (defer_memory_grad(encoder_out[0]), *encoder_out[1:]),
                                           incremental_state)
        if attn is not None and not self.attention.return_joint:  # Eq. 8's weights over the source tokens
            attn = attn[:, :, :memory_states(encoder_out[0].size(0))]
        return x, attn


@register_model("attention_lstm", dataclass=AttentionLSTMConfig)
class AttentionLSTMModel(FairseqEncoderDecoderModel):
    """LSTM ANMT with Luong dot attention or CKY-based convolutional attention (see module docstring)."""

    @classmethod
    def from_pretrained(cls, model_name_or_path, checkpoint_file="model.pt", data_name_or_path=".", **kwargs):
        """A hub interface that translates raw text (:mod:`fairseq_syntax.inference.hub`)."""
        from fairseq_syntax.inference.hub_interface import load_hub

        return load_hub(model_name_or_path, checkpoint_file, data_name_or_path, **kwargs)

    @classmethod
    def build_model(cls, cfg, task):
        if cfg.decoder_layers > cfg.encoder_layers:
            raise OptionError(f"--decoder-layers {cfg.decoder_layers} > --encoder-layers {cfg.encoder_layers}: each "
                             "decoder layer starts from the encoder layer of the same depth (Sec. 2)")
        return cls(AttentionLSTMEncoder(task.source_dictionary, cfg),
                   AttentionLSTMDecoder(task.target_dictionary, cfg))

    def max_positions(self):
        return (self.encoder.max_source_positions, self.decoder.max_target_positions)

    def load_state_dict(self, state_dict, strict=True, model_cfg=None, args=None):
        norm = "encoder.cky.du.norm.weight"
        if strict and self.encoder.cky is not None and norm in self.state_dict() and norm not in state_dict:
            raise RuntimeError("this CKY checkpoint has no Deduction Unit normalisation (it was trained with "
                               "--cky-norm none, or before the option existed): load it with --model-overrides "
                               "\"{'cky_norm': 'none'}\"")
        return super().load_state_dict(state_dict, strict=strict, model_cfg=model_cfg, args=args)
