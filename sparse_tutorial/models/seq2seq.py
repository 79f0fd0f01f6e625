"""The attentional encoder-decoder of Zhang et al. (2019) §II, at any size (chapters 9 and 10).

Encoder (eqs. 1-3): embeddings, a first **bidirectional** LSTM layer whose two directions are merged by a
feed-forward layer ``h_j = tanh(W_l h→_j + W_r h←_j + b)`` (not concatenated; footnote 3), then
``encoder_layers - 1`` stacked unidirectional LSTM layers. The top layer's states ``h^m_j`` are the keys and
values of attention.

Decoder (eqs. 4-10): ``decoder_layers`` stacked LSTM cells with **input feeding** -- the first layer reads
``[y_{i-1}; ẑ_{i-1}]`` (eq. 7) --, additive attention from the top state ``z^l_i`` over ``h^m`` (eqs. 8-10)
through :class:`sparse_tutorial.attention.Attention` with any projection (softmax, temperature, Gumbel,
sparsemax, ...), the attentional vector ``ẑ_i = tanh(W_c [z^l_i; c_i])`` (eq. 5) and
``p(y_i) = softmax(W ẑ_i)`` (eq. 4). Optional coverage (eqs. 21-22): Tu et al.'s neural coverage
(:class:`~sparse_tutorial.coverage.NeuralCoverage`) or See et al.'s accumulated attention, fed to the score
through :class:`~sparse_tutorial.scores.CoverageAdditiveScore`. Dropout on embeddings, between layers
and before the output layer.

The decoder's initial hidden states are ``tanh(W_init · mean_j h^m_j)`` (one per layer; cells start at
zero), a common choice when the first encoder layer is bidirectional.

:func:`seq2seq_loss` is the training objective of eq. 12: the NLL per real target token plus
``λ · R(α)`` with ``R`` one of :data:`sparse_tutorial.regularizers.PENALTIES` (``"entropy"``, or ``"linf"``
= −L∞), plus See et al.'s coverage loss when asked.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple, Sequence

import torch
from torch import Tensor, nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from sparse_tutorial.attention import Attention
from sparse_tutorial.coverage import NeuralCoverage, coverage_loss, update_coverage
from sparse_tutorial.decoding import Decoded, beam_search, greedy_decode
from sparse_tutorial.regularizers import PENALTIES, entropy_penalty
from sparse_tutorial.scores import AdditiveScore, CoverageAdditiveScore

COVERAGES = (None, "neural", "accumulated")
"""Coverage models: none, Tu et al.'s neural coverage (eq. 22), See et al.'s accumulated attention."""


@dataclass
class Seq2SeqConfig:
    """Sizes and switches of :class:`Seq2Seq` (the paper: 1000-dim embeddings and states, 2+2 layers,
    dropout 0.2).

    Attributes:
        src_vocab, tgt_vocab: vocabulary sizes (id ``pad_id`` is padding in both).
        embed_dim, hidden_dim, attention_dim: embedding size, LSTM state size, additive-score hidden size.
        encoder_layers, decoder_layers: LSTM layers (the first encoder layer is the merged BiLSTM).
        dropout: dropout rate.
        projection, projection_kwargs: the attention projection, e.g. ``"temperature", {"temperature": 0.4}``.
            With ``"gumbel"`` the noise is used in training only; evaluation uses the same temperature
            without noise.
        coverage: one of :data:`COVERAGES`.
        coverage_dim: size of the neural coverage vector.
        pad_id: padding id.
    """

    src_vocab: int
    tgt_vocab: int
    embed_dim: int = 64
    hidden_dim: int = 64
    attention_dim: int = 64
    encoder_layers: int = 2
    decoder_layers: int = 2
    dropout: float = 0.2
    projection: str = "softmax"
    projection_kwargs: dict[str, Any] = field(default_factory=dict)
    coverage: str | None = None
    coverage_dim: int = 8
    pad_id: int = 0

    def __post_init__(self) -> None:
        if self.coverage not in COVERAGES:
            raise ValueError(f"coverage must be one of {COVERAGES}, got {self.coverage!r}")
        if self.encoder_layers < 1 or self.decoder_layers < 1:
            raise ValueError(f"encoder_layers and decoder_layers must be >= 1, got {self.encoder_layers}, "
                             f"{self.decoder_layers}")


class TranslationBatch(NamedTuple):
    """A padded batch of sentence pairs; masks are True on real tokens.

    ``tgt_in`` is ``<s> y_1 … y_n`` and ``tgt_out`` is ``y_1 … y_n </s>`` (same length).
    """

    src: Tensor       # (batch, src_len)
    src_mask: Tensor  # (batch, src_len)
    tgt_in: Tensor    # (batch, tgt_len)
    tgt_out: Tensor   # (batch, tgt_len)
    tgt_mask: Tensor  # (batch, tgt_len)


def make_batch(pairs: Sequence[tuple[Sequence[int], Sequence[int]]], bos: int, eos: int,
               pad: int = 0) -> TranslationBatch:
    """Pad ``(source ids, target ids)`` pairs (targets without ``<s>``/``</s>``) into a :class:`TranslationBatch`."""
    if not pairs:
        raise ValueError("pairs must not be empty")
    src_len = max(max(len(s) for s, _ in pairs), 1)
    tgt_len = max(len(t) for _, t in pairs) + 1
    src = torch.full((len(pairs), src_len), pad, dtype=torch.long)
    tgt_in = torch.full((len(pairs), tgt_len), pad, dtype=torch.long)
    tgt_out = torch.full((len(pairs), tgt_len), pad, dtype=torch.long)
    tgt_mask = torch.zeros(len(pairs), tgt_len, dtype=torch.bool)
    src_mask = torch.zeros(len(pairs), src_len, dtype=torch.bool)
    for row, (s, t) in enumerate(pairs):
        src[row, :len(s)] = torch.as_tensor(list(s), dtype=torch.long)
        src_mask[row, :len(s)] = True
        tgt_in[row, :len(t) + 1] = torch.as_tensor([bos, *t], dtype=torch.long)
        tgt_out[row, :len(t) + 1] = torch.as_tensor([*t, eos], dtype=torch.long)
        tgt_mask[row, :len(t) + 1] = True
    return TranslationBatch(src, src_mask, tgt_in, tgt_out, tgt_mask)


class DecoderState(NamedTuple):
    """Everything one decoder step needs; every tensor has the rows (batch or batch·beam) first."""

    h: tuple[Tensor, ...]      # per layer (rows, hidden)
    c: tuple[Tensor, ...]      # per layer (rows, hidden)
    feed: Tensor               # ẑ_{i-1}: (rows, hidden)
    coverage: Tensor | None    # (rows, src_len) or (rows, src_len, coverage_dim)
    keys: Tensor               # h^m: (rows, src_len, hidden), zero on padding
    projected_keys: Tensor     # U_a h^m: (rows, src_len, attention_dim)
    mask: Tensor               # (rows, src_len)


class Seq2Seq(nn.Module):
    """Zhang et al.'s attentional encoder-decoder; see the module docstring.

    Example::

        model = Seq2Seq(Seq2SeqConfig(src_vocab=100, tgt_vocab=120, projection="sparsemax"))
        log_probs, attention = model(batch.src, batch.src_mask, batch.tgt_in)  # (B, T, V), (B, T, S)
    """

    def __init__(self, config: Seq2SeqConfig) -> None:
        super().__init__()
        self.config = cfg = config
        H = cfg.hidden_dim
        self.src_embed = nn.Embedding(cfg.src_vocab, cfg.embed_dim, padding_idx=cfg.pad_id)
        self.tgt_embed = nn.Embedding(cfg.tgt_vocab, cfg.embed_dim, padding_idx=cfg.pad_id)
        self.dropout = nn.Dropout(cfg.dropout)
        self.bilstm = nn.LSTM(cfg.embed_dim, H, batch_first=True, bidirectional=True)
        self.merge = nn.Linear(2 * H, H)  # tanh(W_l h→ + W_r h← + b)
        self.encoder = (nn.LSTM(H, H, num_layers=cfg.encoder_layers - 1, batch_first=True,
                                dropout=cfg.dropout if cfg.encoder_layers > 2 else 0.0)
                        if cfg.encoder_layers > 1 else None)
        self.init_proj = nn.Linear(H, H * cfg.decoder_layers)
        self.cells = nn.ModuleList(
            [nn.LSTMCell(cfg.embed_dim + H if k == 0 else H, H) for k in range(cfg.decoder_layers)])
        if cfg.coverage is None:
            score: nn.Module = AdditiveScore(H, H, cfg.attention_dim)
        else:
            dim = cfg.coverage_dim if cfg.coverage == "neural" else 1
            score = CoverageAdditiveScore(H, H, cfg.attention_dim, coverage_dim=dim)
        self.coverage_model = NeuralCoverage(H, H, cfg.coverage_dim) if cfg.coverage == "neural" else None
        self.attention = Attention(score, cfg.projection, **cfg.projection_kwargs)
        self.eval_attention = (Attention(score, "temperature",
                                         temperature=cfg.projection_kwargs.get("temperature", 1.0))
                               if cfg.projection == "gumbel" else None)
        self.combine = nn.Linear(2 * H, H)  # W_c
        self.output = nn.Linear(H, cfg.tgt_vocab)  # W

    # ------------------------------------------------------------------ encoder
    def encode(self, src: Tensor, src_mask: Tensor) -> Tensor:
        """``src, src_mask: (batch, src_len)`` -> annotations ``h^m: (batch, src_len, hidden)`` (0 on padding)."""
        if src.shape != src_mask.shape or src_mask.dtype != torch.bool:
            raise ValueError(f"src_mask must be a bool tensor shaped like src {tuple(src.shape)}, got "
                             f"{src_mask.dtype} {tuple(src_mask.shape)}")
        lengths = src_mask.sum(1).clamp(min=1).cpu()
        x = self.dropout(self.src_embed(src))
        packed = pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
        out, _ = pad_packed_sequence(self.bilstm(packed)[0], batch_first=True, total_length=src.shape[1])
        h = torch.tanh(self.merge(out))
        if self.encoder is not None:
            packed = pack_padded_sequence(self.dropout(h), lengths, batch_first=True, enforce_sorted=False)
            h, _ = pad_packed_sequence(self.encoder(packed)[0], batch_first=True, total_length=src.shape[1])
        return h * src_mask.unsqueeze(-1)

    def init_state(self, src: Tensor, src_mask: Tensor) -> DecoderState:
        """Encode the source and build the decoder state before the first target token."""
        keys = self.encode(src, src_mask)
        mean = keys.sum(1) / src_mask.sum(1, keepdim=True).clamp(min=1)
        h0 = torch.tanh(self.init_proj(mean)).chunk(self.config.decoder_layers, dim=-1)
        c0 = tuple(torch.zeros_like(h) for h in h0)
        batch, src_len, _ = keys.shape
        if self.config.coverage == "neural":
            coverage: Tensor | None = keys.new_zeros(batch, src_len, self.config.coverage_dim)
        elif self.config.coverage == "accumulated":
            coverage = keys.new_zeros(batch, src_len)
        else:
            coverage = None
        return DecoderState(tuple(h0), c0, keys.new_zeros(batch, self.config.hidden_dim), coverage, keys,
                            self.attention.score.project_keys(keys), src_mask)

    # ------------------------------------------------------------------ decoder
    def step(self, tokens: Tensor, state: DecoderState) -> tuple[Tensor, DecoderState, Tensor]:
        """One decoder step (the :data:`sparse_tutorial.decoding.StepFn` contract).

        Args:
            tokens: ``(rows,)`` previous target tokens ``y_{i-1}``.
            state: the :class:`DecoderState` before the step.

        Returns:
            ``log_probs: (rows, tgt_vocab)``, the new state and ``attention: (rows, src_len)``.
        """
        state, weights = self.attend(tokens, state)
        return self.predict(state.feed), state, weights

    def predict(self, feed: Tensor) -> Tensor:
        """``feed: (..., hidden)`` -> ``log_probs: (..., tgt_vocab)``, eq. 5: log softmax(W dropout(feed))."""
        return self.output(self.dropout(feed)).log_softmax(dim=-1)

    def attend(self, tokens: Tensor, state: DecoderState) -> tuple[DecoderState, Tensor]:
        """A decoder step up to the attentional hidden state ``feed`` (the new state's ``feed``) and the
        ``attention: (rows, src_len)``; :meth:`predict` turns ``feed`` into the next word's log-probabilities."""
        x = torch.cat([self.dropout(self.tgt_embed(tokens)), state.feed], dim=-1)
        hs, cs = [], []
        for k, cell in enumerate(self.cells):
            h, c = cell(x, (state.h[k], state.c[k]))
            hs.append(h)
            cs.append(c)
            # the input of the next layer; after the last layer it is not used, but its dropout mask is still
            # drawn: skipping it would shift the random stream, and so every stored run's numbers
            x = self.dropout(h)
        top = hs[-1]
        attention = self.eval_attention if self.eval_attention is not None and not self.training else self.attention
        extra = {} if state.coverage is None else {"coverage": state.coverage}
        context, weights = attention(top, state.keys, mask=state.mask, padding_is_zero=True,  # encode() zeroed it
                                     projected_keys=state.projected_keys, **extra)
        feed = torch.tanh(self.combine(torch.cat([top, context], dim=-1)))
        coverage = state.coverage
        if self.coverage_model is not None:
            coverage = self.coverage_model(coverage, weights, top, state.keys, state.mask)
        elif coverage is not None:
            coverage = update_coverage(coverage, weights)
        return DecoderState(tuple(hs), tuple(cs), feed, coverage, state.keys, state.projected_keys,
                            state.mask), weights

    def forward(self, src: Tensor, src_mask: Tensor, tgt_in: Tensor) -> tuple[Tensor, Tensor]:
        """Teacher forcing.

        Args:
            src, src_mask: ``(batch, src_len)``.
            tgt_in: ``(batch, tgt_len)``, ``<s> y_1 … y_{n}``.

        Returns:
            ``log_probs: (batch, tgt_len, tgt_vocab)`` and ``attention: (batch, tgt_len, src_len)``.
        """
        state = self.init_state(src, src_mask)
        feeds, weights = [], []
        for i in range(tgt_in.shape[1]):
            state, attention = self.attend(tgt_in[:, i], state)
            feeds.append(state.feed)
            weights.append(attention)
        return self.predict(torch.stack(feeds, 1)), torch.stack(weights, 1)  # one product for every step

    @torch.no_grad()
    def translate(self, src: Tensor, src_mask: Tensor, bos: int, eos: int, max_len: int | None = None,
                  beam_size: int = 1, alpha: float = 1.0) -> Decoded:
        """Greedy (``beam_size=1``) or beam-search translation; ``max_len`` defaults to ``2 · src_len + 10``."""
        was_training = self.training
        self.eval()
        max_len = max_len if max_len is not None else 2 * src.shape[1] + 10
        state = self.init_state(src, src_mask)
        if beam_size == 1:
            out = greedy_decode(self.step, state, src.shape[0], bos, eos, max_len, device=src.device)
        else:
            out = beam_search(self.step, state, src.shape[0], bos, eos, max_len, beam_size=beam_size,
                              alpha=alpha, device=src.device)
        self.train(was_training)
        return out


def seq2seq_loss(model: Seq2Seq, batch: TranslationBatch, penalty: str | None = None, lam: float = 0.0,
                 coverage_weight: float = 0.0) -> tuple[Tensor, dict[str, float]]:
    """Eq. 12 of Zhang et al.: NLL + ``lam · PENALTIES[penalty](α)`` (+ ``coverage_weight`` · See et al.'s
    coverage loss), each averaged over the real target tokens.

    Returns:
        ``(loss, stats)`` with stats ``nll``, ``penalty`` (0 without one), ``coverage_loss``, ``entropy``
        (mean attention entropy per token) and ``tokens`` (real target tokens) -- the
        :data:`sparse_tutorial.training.LossFn` contract.
    """
    if penalty is not None and penalty not in PENALTIES:
        raise ValueError(f"penalty must be None or one of {sorted(PENALTIES)}, got {penalty!r}")
    log_probs, attention = model(batch.src, batch.src_mask, batch.tgt_in)
    mask = batch.tgt_mask
    tokens = mask.sum()
    nll = -log_probs.gather(-1, batch.tgt_out.unsqueeze(-1)).squeeze(-1)
    nll = (nll * mask).sum() / tokens.clamp(min=1)
    loss = nll
    reg = torch.zeros((), device=nll.device)
    if penalty is not None:
        reg = PENALTIES[penalty](attention, mask)
        loss = loss + lam * reg
    cov = torch.zeros((), device=nll.device)
    if coverage_weight:
        cov = coverage_loss(attention, target_mask=mask)
        loss = loss + coverage_weight * cov
    with torch.no_grad():
        ent = entropy_penalty(attention.detach(), mask)
    return loss, {"nll": nll.item(), "penalty": reg.item(), "coverage_loss": cov.item(), "entropy": ent.item(),
                  "tokens": float(tokens.item())}
