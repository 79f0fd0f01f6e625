"""Greedy decoding and batched beam search over any step function (chapter 9 explains them).

A decoder is seen through one function that advances every hypothesis by one token::

    step(tokens, state) -> (log_probs, new_state, attention)

    tokens:    (rows,)             the previous output token of each hypothesis
    state:     anything            tensors whose dim 0 is ``rows`` (nested tuples/lists/dicts allowed)
    log_probs: (rows, vocab)       log p(next token); ``vocab`` may be an extended vocabulary (pointer copy)
    attention: (rows, src_len)     the attention weights of this step, or ``None``

``rows`` is the batch size for greedy decoding and ``batch * beam`` for beam search, where row
``b * beam + k`` is hypothesis ``k`` of sentence ``b``. Beam search re-orders the state with
``reorder_state(state, indices)`` (default: :func:`index_state`, which index-selects dim 0 of every tensor),
so the same code decodes the seq2seq model and the pointer-generator.

Length normalisation: hypotheses are ranked by ``sum log p / length ** alpha`` where ``length`` counts the
generated tokens including ``</s>`` (``alpha = 0``: raw log-probability, ``alpha = 1``: mean per token).
Finished hypotheses stay in the beam with their score frozen; decoding stops when every hypothesis of
every sentence has produced ``</s>`` or after ``max_len`` tokens.

A NaN log-probability counts as −∞ in both searches: a token whose probability is not a number is never
chosen while any other token is possible.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import torch
from torch import Tensor

from sparse_tutorial.training import map_tensors

StepFn = Callable[[Tensor, Any], "tuple[Tensor, Any, Tensor | None]"]
"""``step(tokens, state) -> (log_probs, new_state, attention)``, as described at the top of this module."""
ReorderFn = Callable[[Any, Tensor], Any]


@dataclass
class Decoded:
    """The output of :func:`greedy_decode` / :func:`beam_search`, one entry per sentence.

    Attributes:
        tokens: the generated ids, without ``</s>``.
        scores: ``(batch,)`` total log-probability of each output (including ``</s>`` when produced).
        attention: per sentence a ``(len(tokens) + 1, src_len)`` tensor -- one row per generated token,
            the last row that of ``</s>`` (absent, so ``len(tokens)`` rows, when ``max_len`` was hit) --
            or ``None`` if the step returns no attention.
    """

    tokens: list[list[int]]
    scores: Tensor
    attention: list[Tensor] | None


def index_state(state: Any, indices: Tensor) -> Any:
    """Select rows ``indices`` (dim 0) of every tensor in a nested tuple/list/dict/dataclass state, through
    :func:`~sparse_tutorial.training.map_tensors`."""
    return map_tensors(state, lambda tensor: tensor.index_select(0, indices))


def _check(batch_size: int, max_len: int) -> None:
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    if max_len < 1:
        raise ValueError(f"max_len must be >= 1, got {max_len}")


def _trim(ids: list[int], rows: Tensor | None, eos: int) -> tuple[list[int], Tensor | None]:
    """Cut a token list after the first ``</s>`` (dropped) and its attention after the same step."""
    length = ids.index(eos) + 1 if eos in ids else len(ids)
    return ids[:length - 1] if eos in ids else ids, None if rows is None else rows[:length]


@torch.no_grad()
def greedy_decode(step: StepFn, state: Any, batch_size: int, bos: int, eos: int, max_len: int,
                  device: torch.device | str = "cpu") -> Decoded:
    """Pick the most probable token at every step.

    Args:
        step: the step function (see the module docstring) with ``rows = batch_size``.
        state: the initial decoder state for the batch.
        batch_size: number of sentences.
        bos, eos: ids of the start and end symbols.
        max_len: maximum number of generated tokens (``</s>`` included).
        device: where the token tensors live.
    """
    _check(batch_size, max_len)
    tokens = torch.full((batch_size,), bos, dtype=torch.long, device=device)
    finished = torch.zeros(batch_size, dtype=torch.bool, device=device)
    scores = torch.zeros(batch_size, device=device)
    out, attn = [], []
    for _ in range(max_len):
        log_probs, state, attention = step(tokens, state)
        best, tokens = log_probs.masked_fill(log_probs.isnan(), float("-inf")).max(dim=-1)
        scores += torch.where(finished, torch.zeros_like(best), best)
        out.append(tokens)
        if attention is not None:
            attn.append(attention)
        finished |= tokens == eos
        if bool(finished.all()):
            break
    ids = torch.stack(out, 1).tolist()
    rows = torch.stack(attn, 1) if attn else None
    trimmed = [_trim(ids[b], None if rows is None else rows[b], eos) for b in range(batch_size)]
    return Decoded([t for t, _ in trimmed], scores,
                   None if rows is None else [a for _, a in trimmed])


@torch.no_grad()
def beam_search(step: StepFn, state: Any, batch_size: int, bos: int, eos: int, max_len: int,
                beam_size: int = 12, alpha: float = 1.0, reorder_state: ReorderFn = index_state,
                device: torch.device | str = "cpu") -> Decoded:
    """Batched beam search: all ``batch_size * beam_size`` hypotheses advance in one ``step`` call.

    Args:
        step: the step function with ``rows = batch_size * beam_size``.
        state: the initial decoder state for the batch (``rows = batch_size``); it is expanded to the beams
            with ``reorder_state``.
        batch_size: number of sentences.
        bos, eos: ids of the start and end symbols.
        max_len: maximum number of generated tokens (``</s>`` included).
        beam_size: hypotheses kept per sentence (the paper uses 12 for NMT).
        alpha: length-normalisation exponent (see the module docstring).
        reorder_state: ``reorder_state(state, indices) -> state`` selecting rows ``indices``.
        device: where the token tensors live.

    Returns:
        The best hypothesis of every sentence by length-normalised score; ``scores`` are its raw sums.
    """
    _check(batch_size, max_len)
    if beam_size < 1:
        raise ValueError(f"beam_size must be >= 1, got {beam_size}")
    B, K = batch_size, beam_size
    rows = torch.arange(B, device=device).repeat_interleave(K)
    state = reorder_state(state, rows)
    tokens = torch.full((B * K,), bos, dtype=torch.long, device=device)
    scores = torch.full((B, K), float("-inf"), device=device)
    scores[:, 0] = 0.0  # all beams start identical: expand only the first
    lengths = torch.zeros(B, K, device=device)
    finished = torch.zeros(B, K, dtype=torch.bool, device=device)
    history = torch.empty(B * K, 0, dtype=torch.long, device=device)
    attn_history: Tensor | None = None
    offsets = (torch.arange(B, device=device) * K).unsqueeze(1)

    for _ in range(max_len):
        log_probs, state, attention = step(tokens, state)
        V = log_probs.size(-1)
        log_probs = log_probs.view(B, K, V).float()
        # A finished hypothesis can only "emit" eos again, at no cost and without growing.
        frozen = torch.full_like(log_probs, float("-inf"))
        frozen[..., eos] = 0.0
        log_probs = torch.where(finished.unsqueeze(-1), frozen, log_probs)
        candidate = (scores.unsqueeze(-1) + log_probs).view(B, K * V)
        cand_len = (lengths + (~finished).float()).unsqueeze(-1).expand(B, K, V).reshape(B, K * V)
        ranked = candidate / cand_len.clamp(min=1.0) ** alpha
        ranked = torch.where(torch.isfinite(candidate), ranked, torch.full_like(ranked, float("-inf")))
        top = ranked.topk(K, dim=-1).indices  # (B, K)
        beam, token = top // V, top % V
        parents = (offsets + beam).view(-1)
        scores = candidate.gather(1, top)
        lengths = cand_len.gather(1, top)
        was_finished = finished.gather(1, beam)
        finished = was_finished | (token == eos)
        tokens = token.view(-1)
        state = reorder_state(state, parents)
        history = torch.cat([history.index_select(0, parents), tokens.unsqueeze(1)], 1)
        if attention is not None:
            new = attention.index_select(0, parents).unsqueeze(1).float()
            attn_history = new if attn_history is None else torch.cat(
                [attn_history.index_select(0, parents), new], 1)
        if bool(finished.all()):
            break

    final = scores / lengths.clamp(min=1.0) ** alpha
    best = final.argmax(dim=-1)  # (B,)
    pick = (torch.arange(B, device=device) * K + best)
    ids = history.index_select(0, pick).tolist()
    attn = attn_history.index_select(0, pick) if attn_history is not None else None
    trimmed = [_trim(ids[b], None if attn is None else attn[b], eos) for b in range(B)]
    return Decoded([t for t, _ in trimmed], scores.gather(1, best.unsqueeze(1)).squeeze(1),
                   None if attn is None else [a for _, a in trimmed])
