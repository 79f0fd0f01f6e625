"""Interpreting attention classifiers: the quantities of chapters 12-14.

Sun & Lu (2020), chapter 12
    :func:`token_scores` -- the instance-independent *polarity score* ``s_e = h_eᵀW`` (eq. 7) and *attention
    score* ``a_e = h_eᵀV/λ`` (eq. 1) of every vocabulary token; :func:`gamma` (eq. 28) and
    :func:`token_classes` (positive / negative / neutral with the paper's thresholds, and the multi-class
    rule of their footnote 9).
Meister et al. (2021), chapter 13
    :func:`gradient_importance` (eq. 4, inputs → ŷ), :func:`intermediate_importance` (eq. 5, inputs → ‖h_p‖),
    :func:`leave_one_out_importance` (eq. 6, from :func:`leave_one_out_logits`), :func:`normalized_entropy`
    and :func:`kendall_tau_b`.
Attention as explanation, chapter 14
    :func:`jensen_shannon` and :func:`adversarial_attention` (Jain & Wallace 2019, §4).

Everything runs the model in ``eval()`` mode (dropout off) and works on whole padded batches
``token_ids, mask: (batch, seq_len)`` (mask True = real token); padded positions get importance 0.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np
import torch
from scipy.stats import kendalltau
from torch import Tensor

from sparse_tutorial.models.classifier import AttentionClassifier
from sparse_tutorial.regularizers import entropy

POSITIVE, NEGATIVE, NEUTRAL, UNCLASSIFIED = 1, -1, 0, 2


class TokenScores(NamedTuple):
    polarity: Tensor   # (vocab,) binary s_e = h_eᵀW, or (vocab, num_classes) rows h_eᵀW_c
    attention: Tensor  # (vocab,) a_e = score of the token on its own (eq. 1 for dot-product models)


@torch.no_grad()
def token_scores(model: AttentionClassifier, token_ids: Tensor | None = None) -> TokenScores:
    """Polarity and attention scores of tokens taken out of context (Sun & Lu eqs. 1 and 7).

    ``token_ids: (n,)`` (default: the whole vocabulary). ``h_e`` is the token's representation before the
    attention layer when the token is the whole input: its embedding for DP and AD, the affine map of it
    for DP-A, and the LSTM state after reading it alone for DP-L.
    """
    model.eval()
    if token_ids is None:
        token_ids = torch.arange(model.config.vocab_size, device=model.query.device)
    ids = token_ids.reshape(-1, 1)
    mask = torch.ones_like(ids, dtype=torch.bool)
    hidden = model.encode(model.embed(ids), mask)            # (n, 1, m)
    attention = model.score(hidden)[:, 0]
    weight = model.head.weight                               # (out, m)
    polarity = hidden[:, 0] @ weight.T
    return TokenScores(polarity.squeeze(-1) if model.config.num_classes == 2 else polarity, attention)


def gamma(positive_counts: Tensor, negative_counts: Tensor) -> Tensor:
    """Sun & Lu eq. 28, ``γ_e = (f⁺ − f⁻)/(f⁺ + f⁻)``; 0 for a token seen in neither class."""
    pos, neg = positive_counts.double(), negative_counts.double()
    total = pos + neg
    return torch.where(total > 0, (pos - neg) / total.clamp(min=1), torch.zeros_like(total))


def token_classes(positive_counts: Tensor, negative_counts: Tensor, polar_gamma: float = 0.5,
                  min_count: float = 5, neutral_gamma: float = 0.1, neutral_gap: float = 5) -> Tensor:
    """Sun & Lu §5: POSITIVE if γ ∈ (0.5, 1] and f⁺ > 5, NEGATIVE if γ ∈ [−1, −0.5) and f⁻ > 5,
    NEUTRAL if γ ∈ (−0.1, 0.1) and ``|f⁺ − f⁻| < 5``; every other token is UNCLASSIFIED.
    Returns ``(vocab,)`` int codes.

    The paper writes the polar intervals as open, (0.5, 1); we close them at ±1 because a token seen in one
    class only is the purest case of the "positive token" their analysis describes.
    """
    g = gamma(positive_counts, negative_counts)
    pos, neg = positive_counts.double(), negative_counts.double()
    classes = torch.full(g.shape, UNCLASSIFIED, dtype=torch.long, device=g.device)
    classes[(g > polar_gamma) & (pos > min_count)] = POSITIVE
    classes[(g < -polar_gamma) & (neg > min_count)] = NEGATIVE
    classes[(g.abs() < neutral_gamma) & ((pos - neg).abs() < neutral_gap) & (pos + neg > 0)] = NEUTRAL
    return classes


def label_classes(counts: Tensor, threshold: float = 0.8, min_count: float = 5) -> Tensor:
    """Multi-class rule (Sun & Lu footnote 9): ``counts: (vocab, num_classes)`` → ``(vocab,)``.

    A token whose largest share of occurrences in one label exceeds ``threshold`` (and which is seen more
    than ``min_count`` times) is a polarity token of that label (its index); a token spread evenly (largest
    share below ``1/num_classes + 0.1``) is NEUTRAL-like and coded ``-1``; others are ``-2``.
    """
    counts = counts.double()
    total = counts.sum(-1)
    share = counts / total.clamp(min=1).unsqueeze(-1)
    top_share, top_label = share.max(-1)
    classes = torch.full(total.shape, -2, dtype=torch.long, device=total.device)
    even = (top_share < 1 / counts.shape[-1] + 0.1) & (total > min_count)
    classes[even] = -1
    polar = (top_share > threshold) & (total > min_count)
    classes[polar] = top_label[polar]
    return classes


def class_probability(logits: Tensor, labels: Tensor) -> Tensor:
    """Probability of class ``labels`` under ``logits`` (binary ``(..., )`` or ``(..., num_classes)``)."""
    if logits.dim() == labels.dim():
        p = torch.sigmoid(logits)
        return torch.where(labels.bool(), p, 1 - p)
    return logits.softmax(-1).gather(-1, labels.unsqueeze(-1)).squeeze(-1)


def _normalize(values: Tensor, mask: Tensor) -> Tensor:
    values = values.masked_fill(~mask, 0.0)
    return values / values.sum(-1, keepdim=True).clamp(min=torch.finfo(values.dtype).tiny)


def _predicted_labels(logits: Tensor) -> Tensor:
    return (logits > 0).long() if logits.dim() == 1 else logits.argmax(-1)


def gradient_importance(model: AttentionClassifier, token_ids: Tensor, mask: Tensor) -> Tensor:
    """Meister et al. eq. 4: ``g_ŷ(x_i) = ‖∂ŷ/∂X_i‖₂ / Σ_k ‖∂ŷ/∂X_k‖₂``, ``(batch, seq_len)``.

    ``ŷ`` is the probability of the predicted class. Examples do not interact in ``eval()`` mode, so the
    gradient of the batch sum gives every example's own gradient in one backward pass.
    """
    model.eval()
    with torch.backends.cudnn.flags(enabled=False):   # cuDNN's LSTM has no backward in eval mode
        embedded = model.embed(token_ids).detach().requires_grad_(True)
        logits = model.forward_embedded(embedded, mask).logits
        y_hat = class_probability(logits, _predicted_labels(logits.detach()))
        (grad,) = torch.autograd.grad(y_hat.sum(), embedded)
    return _normalize(grad.norm(dim=-1), mask).detach()


def intermediate_importance(model: AttentionClassifier, token_ids: Tensor, mask: Tensor) -> Tensor:
    """Meister et al. eq. 5: ``g_{h_p}(x_i) = ‖∂‖h_p‖/∂X_i‖ / Σ_k ‖∂‖h_p‖/∂X_k‖``.

    Returns ``(batch, seq_len_p, seq_len_i)``: row ``p`` is the distribution of input influence on the
    intermediate representation ``h_p`` (all zeros for a padded ``p``). One backward pass per position
    ``p``, batched over examples.
    """
    model.eval()
    rows = []
    with torch.backends.cudnn.flags(enabled=False):   # cuDNN's LSTM has no backward in eval mode
        embedded = model.embed(token_ids).detach().requires_grad_(True)
        norms = model.encode(embedded, mask).norm(dim=-1).masked_fill(~mask, 0.0)   # (batch, seq_len)
        for p in range(norms.shape[1]):
            (grad,) = torch.autograd.grad(norms[:, p].sum(), embedded, retain_graph=True, allow_unused=True)
            grad = torch.zeros_like(embedded) if grad is None else grad
            rows.append(_normalize(grad.norm(dim=-1), mask) * mask[:, p:p + 1])
    return torch.stack(rows, dim=1).detach()


def _leave_one_out_batch(token_ids: Tensor, mask: Tensor) -> tuple[Tensor, Tensor]:
    """All copies with one position deleted: ``(batch, seq_len, seq_len - 1)`` ids and masks."""
    n = token_ids.shape[1]
    keep = ~torch.eye(n, dtype=torch.bool, device=token_ids.device)
    index = torch.arange(n, device=token_ids.device).expand(n, n)[keep].reshape(n, n - 1)   # (n, n-1)
    return token_ids[:, index], mask[:, index]


@torch.no_grad()
def leave_one_out_logits(model: AttentionClassifier, token_ids: Tensor, mask: Tensor,
                         chunk_size: int = 4096) -> Tensor:
    """Logits of every copy of the input with one token deleted (the sequence closes the gap).

    Returns ``(batch, seq_len)`` for binary models, ``(batch, seq_len, num_classes)`` otherwise; entry
    ``[b, i]`` is the model's output on example ``b`` without token ``i``. All ``batch × seq_len`` copies are
    scored as one batch, in chunks of ``chunk_size`` rows to bound memory.
    """
    model.eval()
    batch, n = token_ids.shape
    ids, keep = _leave_one_out_batch(token_ids, mask)
    ids, keep = ids.reshape(batch * n, n - 1), keep.reshape(batch * n, n - 1)
    logits = torch.cat([model(ids[s:s + chunk_size], keep[s:s + chunk_size]).logits
                        for s in range(0, batch * n, chunk_size)])
    return logits.reshape(batch, n, *logits.shape[1:])


@torch.no_grad()
def leave_one_out_importance(model: AttentionClassifier, token_ids: Tensor, mask: Tensor,
                             chunk_size: int = 4096) -> Tensor:
    """Meister et al. eq. 6: ``D_ŷ(x_i) = |ŷ − ŷ₋ᵢ| / Σ_k |ŷ − ŷ₋ₖ|``, ``(batch, seq_len)``.

    ``ŷ₋ᵢ`` is the probability of the *original* predicted class with token i deleted from the input.
    """
    model.eval()
    logits = model(token_ids, mask).logits
    labels = _predicted_labels(logits)
    y_hat = class_probability(logits, labels)
    deleted = leave_one_out_logits(model, token_ids, mask, chunk_size)
    expanded = labels.unsqueeze(1).expand(token_ids.shape)
    y_minus = class_probability(deleted, expanded)
    return _normalize((y_hat.unsqueeze(-1) - y_minus).abs(), mask)


def normalized_entropy(distribution: Tensor, mask: Tensor | None = None) -> Tensor:
    """``H̃(p) = H(p) / log n``: the :func:`~sparse_tutorial.regularizers.entropy` of the last dim divided by
    its largest value, ``log n`` over the ``n`` kept positions, so it lies in [0, 1].

    ``distribution: (..., seq_len)``; ``mask`` (same shape, True = kept) sets ``n`` and zeroes the rest. A row
    with ``n ≤ 1`` has no uncertainty to measure and gets 0. Returns ``(...)``.
    """
    if mask is None:
        mask = torch.ones_like(distribution, dtype=torch.bool)
    n = mask.sum(-1).to(distribution.dtype)
    plain = entropy(distribution.masked_fill(~mask, 0.0), dim=-1)
    return torch.where(n > 1, plain / n.clamp(min=2).log(), torch.zeros_like(n))


def kendall_tau_b(x: Tensor | np.ndarray, y: Tensor | np.ndarray) -> float:
    """Kendall's τ-b (ties counted as in Knight 1966) between two 1-D score vectors, via SciPy."""
    x = x.detach().cpu().numpy() if isinstance(x, Tensor) else np.asarray(x)
    y = y.detach().cpu().numpy() if isinstance(y, Tensor) else np.asarray(y)
    return float(kendalltau(x, y, variant="b").statistic)


def batched_kendall_tau_b(x: Tensor, y: Tensor, mask: Tensor) -> Tensor:
    """τ-b per example over its kept positions, ``(batch,)`` on ``x``'s device; NaN where a row is constant or
    too short."""
    return torch.tensor([kendall_tau_b(xi[m], yi[m]) if int(m.sum()) > 1 else float("nan")
                         for xi, yi, m in zip(x.detach().cpu(), y.detach().cpu(), mask.cpu())], device=x.device)


def jensen_shannon(p: Tensor, q: Tensor) -> Tensor:
    """Jensen-Shannon divergence (natural log, ≤ log 2) between distributions on the last dim, ``(...)``."""
    mid = (p + q) / 2

    def kl(a: Tensor, b: Tensor) -> Tensor:
        return torch.where(a > 0, a * (a.clamp(min=1e-30) / b.clamp(min=1e-30)).log(), torch.zeros_like(a)).sum(-1)

    return (kl(p, mid) + kl(q, mid)) / 2


def adversarial_attention(model: AttentionClassifier, token_ids: Tensor, mask: Tensor, epsilon: float = 0.01,
                          steps: int = 200, lr: float = 0.1, penalty: float = 100.0) -> Tensor:
    """Jain & Wallace (2019, §4): per example, an attention distribution far from the model's (maximal JS
    divergence) that keeps the output within ``epsilon`` of the original prediction.

    The model's parameters are frozen and only the distribution changes, so the same intermediate
    representations are re-weighted. Optimises free scores through a masked softmax with Adam on
    ``−JS(α̃, α) + penalty · relu(|ŷ(α̃) − ŷ(α)| − ε)`` for the whole batch at once. Returns
    ``(batch, seq_len)``.
    """
    model.eval()
    with torch.no_grad():
        hidden = model.encode(model.embed(token_ids), mask)
        weights = model.attend(hidden, mask)
        logits = model.head_logits((weights.unsqueeze(-1) * hidden).sum(1))
        labels = _predicted_labels(logits)
        y_hat = class_probability(logits, labels)
    free = (-4.0 * weights).clone().requires_grad_(True)        # start away from the original peak
    optimizer = torch.optim.Adam([free], lr=lr)
    for _ in range(steps):
        candidate = free.masked_fill(~mask, float("-inf")).softmax(-1)
        y_new = class_probability(model.head_logits((candidate.unsqueeze(-1) * hidden).sum(1)), labels)
        loss = (-jensen_shannon(candidate, weights)
                + penalty * torch.relu((y_new - y_hat).abs() - epsilon)).sum()
        (free.grad,) = torch.autograd.grad(loss, free)   # the model's own parameters get no gradient
        optimizer.step()
    return free.detach().masked_fill(~mask, float("-inf")).softmax(-1)
