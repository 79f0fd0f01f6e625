"""Attention-based text classifiers for Part III (chapters 12-14).

One model, :class:`AttentionClassifier`, covers the two papers of Part III; it is a pipeline of four small
pieces that the interpretation code (:mod:`sparse_tutorial.interpret`) can call one at a time::

    token_ids --embed--> X^(e) --encode--> h_1..h_n --score--> a_1..a_n --projection--> alpha
              context = sum_j alpha_j h_j --head--> logits

* Sun & Lu (2020), chapter 12: no encoder (``DP``), an LSTM (``DP-L``), an affine layer (``DP-A``), or
  additive scoring (``AD``); the attention score of token j is ``a_j = h_jᵀV / λ`` (their eq. 1) with a
  learned *context vector* ``V`` and scaling factor ``λ``, the head is a bias-free ``W`` so that the
  instance-level polarity score is ``s = hᵀW = Σ_j α_j s_j`` (eqs. 4 and 6). :func:`sun_lu_config` builds
  the four variants; :meth:`AttentionClassifier.vtw` is the ``VᵀW`` quantity that their analysis and the
  optional regularizer are about.
* Meister et al. (2021), chapter 13: a BiLSTM or Transformer encoder, additive
  (``vᵀ tanh(W_1 h_i + W_2 q)``) or scaled-dot (``h_iᵀq / √m``) alignment with a learned query ``q`` and a
  pluggable projection (softmax, sparsemax, sparsegen-lin with its ``λ``). :func:`meister_config` builds them.

Binary models return one logit per example (``s``, ``P(y=1) = σ(s)``); ``num_classes > 2`` returns one
logit per class (softmax head). Every forward takes a boolean ``mask`` (True = real token) and can be handed
fixed ``attention_weights`` instead of computing them, which chapter 14 uses for the uniform, permuted and
adversarial attention experiments.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from sparse_tutorial.projections import get_projection

ENCODERS = ("none", "affine", "lstm", "bilstm", "transformer")
SCORES = ("dot", "additive")
SUN_LU_VARIANTS = ("DP", "DP-L", "DP-A", "AD")


@dataclass
class ClassifierConfig:
    vocab_size: int
    num_classes: int = 2              # 2 -> one logit s with P(y=1) = sigmoid(s); >2 -> softmax over classes
    embed_dim: int = 100              # d; Sun & Lu use 100 with U(-0.1, 0.1) initialisation
    hidden_dim: int | None = None     # m, encoder output size (None -> embed_dim; a BiLSTM has m/2 per direction)
    encoder: str = "none"             # one of ENCODERS
    score: str = "dot"                # "dot": hᵀV/λ ; "additive": vᵀtanh(W_1 h + W_2 q)/λ
    scale: float | None = None        # λ dividing the scores; None -> sqrt(m) for "dot", 1 for "additive"
    projection: str = "softmax"       # a name known to sparse_tutorial.projections.get_projection
    projection_kwargs: dict[str, Any] = field(default_factory=dict)  # e.g. {"lam": 0.5} for "sparsegen"
    head_bias: bool = False           # Sun & Lu's W has no bias (s = hᵀW); Meister's decoder has one
    dropout: float = 0.0              # on the embeddings and on the context vector
    num_layers: int = 1               # LSTM / Transformer layers
    num_heads: int = 2                # Transformer self-attention heads
    max_len: int = 512                # longest input the Transformer's position embeddings cover


class ClassifierOutput(NamedTuple):
    logits: Tensor   # (batch,) for binary models, (batch, num_classes) otherwise
    weights: Tensor  # (batch, seq_len) attention distribution, exactly 0 on padding


def sun_lu_config(variant: str, vocab_size: int, scale: float = 10.0, num_classes: int = 2,
                  embed_dim: int = 100, dropout: float = 0.0) -> ClassifierConfig:
    """The four models of Sun & Lu (2020), Table 2: ``"DP"``, ``"DP-L"``, ``"DP-A"`` and ``"AD"``."""
    if variant not in SUN_LU_VARIANTS:
        raise ValueError(f"variant must be one of {SUN_LU_VARIANTS}, got {variant!r}")
    encoder = {"DP": "none", "DP-L": "lstm", "DP-A": "affine", "AD": "none"}[variant]
    return ClassifierConfig(vocab_size=vocab_size, num_classes=num_classes, embed_dim=embed_dim,
                            encoder=encoder, score="additive" if variant == "AD" else "dot", scale=scale,
                            dropout=dropout)


def meister_config(encoder: str, vocab_size: int, projection: str = "softmax", score: str | None = None,
                   num_classes: int = 2, embed_dim: int = 64, hidden_dim: int = 64, dropout: float = 0.1,
                   **projection_kwargs: Any) -> ClassifierConfig:
    """Meister et al. (2021): ``encoder`` "bilstm" (additive alignment by default) or "transformer" (dot)."""
    if encoder not in ("bilstm", "transformer"):
        raise ValueError(f"encoder must be 'bilstm' or 'transformer', got {encoder!r}")
    score = score or ("additive" if encoder == "bilstm" else "dot")
    return ClassifierConfig(vocab_size=vocab_size, num_classes=num_classes, embed_dim=embed_dim,
                            hidden_dim=hidden_dim, encoder=encoder, score=score, projection=projection,
                            projection_kwargs=dict(projection_kwargs), head_bias=True, dropout=dropout)


class AttentionClassifier(nn.Module):
    """Embeddings → encoder → attention with a learned query → linear head (see the module docstring)."""

    def __init__(self, config: ClassifierConfig) -> None:
        super().__init__()
        if config.encoder not in ENCODERS:
            raise ValueError(f"config.encoder must be one of {ENCODERS}, got {config.encoder!r}")
        if config.score not in SCORES:
            raise ValueError(f"config.score must be one of {SCORES}, got {config.score!r}")
        if config.num_classes < 2:
            raise ValueError(f"config.num_classes must be >= 2, got {config.num_classes}")
        self.config = config
        d = config.embed_dim
        m = config.hidden_dim or d
        if config.encoder in ("none",) and m != d:
            raise ValueError(f"config.hidden_dim must equal embed_dim without an encoder, got {m} != {d}")
        self.hidden_dim = m
        self.scale = config.scale if config.scale is not None else (
            math.sqrt(m) if config.score == "dot" else 1.0)
        if self.scale <= 0:
            raise ValueError(f"config.scale must be positive, got {self.scale}")

        self.embedding = nn.Embedding(config.vocab_size, d, padding_idx=0)
        nn.init.uniform_(self.embedding.weight, -0.1, 0.1)
        self.dropout = nn.Dropout(config.dropout)
        if config.encoder == "affine":
            self.encoder = nn.Linear(d, m)
        elif config.encoder in ("lstm", "bilstm"):
            bidirectional = config.encoder == "bilstm"
            if bidirectional and m % 2:
                raise ValueError(f"config.hidden_dim must be even for a BiLSTM, got {m}")
            self.encoder = nn.LSTM(d, m // 2 if bidirectional else m, num_layers=config.num_layers,
                                   batch_first=True, bidirectional=bidirectional)
        elif config.encoder == "transformer":
            self.input_proj = nn.Linear(d, m) if m != d else nn.Identity()
            self.positions = nn.Embedding(config.max_len, m)
            layer = nn.TransformerEncoderLayer(m, config.num_heads, dim_feedforward=2 * m,
                                               dropout=config.dropout, batch_first=True)
            self.encoder = nn.TransformerEncoder(layer, config.num_layers, enable_nested_tensor=False)

        # The learned query: Sun & Lu's context vector V (dot) or Bahdanau's q, W_1, W_2, v (additive).
        self.query = nn.Parameter(torch.empty(m).uniform_(-0.1, 0.1))
        if config.score == "additive":
            self.key_proj = nn.Linear(m, m, bias=False)
            self.query_proj = nn.Linear(m, m)
            self.v = nn.Parameter(torch.empty(m).uniform_(-0.1, 0.1))
        self.projection = get_projection(config.projection, **config.projection_kwargs)
        out = 1 if config.num_classes == 2 else config.num_classes
        self.head = nn.Linear(m, out, bias=config.head_bias)

    # -- the four pieces -------------------------------------------------------------------------------
    def embed(self, token_ids: Tensor) -> Tensor:
        """``token_ids: (batch, seq_len)`` → ``X^(e): (batch, seq_len, embed_dim)`` (no dropout here)."""
        return self.embedding(token_ids)

    def encode(self, embedded: Tensor, mask: Tensor) -> Tensor:
        """``embedded: (batch, seq_len, embed_dim)`` → intermediate representations ``(batch, seq_len, m)``.

        Padding never influences a real position (packed LSTMs, key padding mask in the Transformer).
        """
        x = self.dropout(embedded)
        kind = self.config.encoder
        if kind == "none":
            return x
        if kind == "affine":
            return self.encoder(x)
        if kind in ("lstm", "bilstm"):
            lengths = mask.sum(-1).clamp(min=1).cpu()
            packed = nn.utils.rnn.pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
            out, _ = self.encoder(packed)
            out, _ = nn.utils.rnn.pad_packed_sequence(out, batch_first=True, total_length=x.shape[1])
            return out
        positions = torch.arange(x.shape[1], device=x.device)
        h = self.input_proj(x) + self.positions(positions)
        # A row with no kept token would make self-attention NaN; keep its first slot (it is masked later).
        key_keep = mask.clone()
        key_keep[:, 0] |= ~mask.any(-1)
        return self.encoder(h, src_key_padding_mask=~key_keep)

    def score(self, hidden: Tensor) -> Tensor:
        """Unnormalised attention scores ``a: (batch, seq_len)`` from ``hidden: (batch, seq_len, m)``.

        For ``score="dot"`` this is Sun & Lu's eq. 1, ``a_j = h_jᵀV / λ``.
        """
        if self.config.score == "dot":
            return hidden @ self.query / self.scale
        energy = torch.tanh(self.key_proj(hidden) + self.query_proj(self.query))
        return energy @ self.v / self.scale

    def attend(self, hidden: Tensor, mask: Tensor) -> Tensor:
        """Attention distribution ``alpha: (batch, seq_len)`` via the configured projection; 0 on padding."""
        scores = self.score(hidden).masked_fill(~mask, float("-inf"))
        return self.projection(scores, dim=-1)

    def head_logits(self, context: Tensor) -> Tensor:
        """``context: (..., m)`` → logits ``(...)`` (binary) or ``(..., num_classes)``."""
        logits = self.head(context)
        return logits.squeeze(-1) if self.config.num_classes == 2 else logits

    # -- composed ----------------------------------------------------------------------------------------
    def forward_embedded(self, embedded: Tensor, mask: Tensor,
                         attention_weights: Tensor | None = None) -> ClassifierOutput:
        """Forward from embeddings (what gradient feature importance differentiates)."""
        hidden = self.encode(embedded, mask)
        weights = self.attend(hidden, mask) if attention_weights is None else attention_weights
        context = self.dropout((weights.unsqueeze(-1) * hidden).sum(1))
        return ClassifierOutput(self.head_logits(context), weights)

    def forward(self, token_ids: Tensor, mask: Tensor,
                attention_weights: Tensor | None = None) -> ClassifierOutput:
        """``token_ids, mask: (batch, seq_len)``; optional fixed ``attention_weights: (batch, seq_len)``."""
        if token_ids.shape != mask.shape:
            raise ValueError(f"mask must have the shape of token_ids {tuple(token_ids.shape)}, "
                             f"got {tuple(mask.shape)}")
        return self.forward_embedded(self.embed(token_ids), mask, attention_weights)

    def vtw(self) -> Tensor:
        """Sun & Lu's ``VᵀW`` (binary dot-product models): the sign of their terms A and D (eqs. 19, 27)."""
        if self.config.score != "dot" or self.config.num_classes != 2:
            raise ValueError("vtw() needs a binary model with score='dot'")
        return self.query @ self.head.weight[0]


def classification_loss(logits: Tensor, labels: Tensor) -> Tensor:
    """Mean negative log-likelihood; for binary logits this is Sun & Lu's eq. 5, ``-log σ(y s)``.

    ``logits: (batch,)`` with ``labels`` in {0, 1}, or ``(batch, num_classes)`` with class indices.
    """
    if logits.dim() == 1:
        return F.binary_cross_entropy_with_logits(logits, labels.to(logits.dtype))
    return F.cross_entropy(logits, labels)


def predicted_probability(logits: Tensor) -> Tensor:
    """``ŷ``: the probability the model gives to its own predicted class, ``(batch,)``."""
    if logits.dim() == 1:
        p = torch.sigmoid(logits)
        return torch.maximum(p, 1 - p)
    return logits.softmax(-1).max(-1).values


def predictions(logits: Tensor) -> Tensor:
    """Predicted labels ``(batch,)`` (0/1 for binary models)."""
    return (logits > 0).long() if logits.dim() == 1 else logits.argmax(-1)
