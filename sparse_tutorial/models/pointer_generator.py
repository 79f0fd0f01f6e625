"""The pointer-generator network of See et al. (2017), with optional coverage, for abstractive summarization.

Chapter 11 (*Summarization with pointer, coverage and entropy*) trains it; Zhang et al. (2019, §VI-B) use it
as the base of their ABS+Pointer(+Cov)(+Ent) systems.

The model, in See et al.'s notation (``t`` = decoder step, ``i`` = source position):

    encoder        h_i = BiLSTM(emb(w_i))                                   (batch, src_len, 2·hidden)
    decoder input  x_t = W_x [emb(y_{t−1}); h*_{t−1}] + b_x                 (input feeding of the context)
    decoder        s_t = LSTM(x_t, s_{t−1})
    attention      e_i^t = vᵀ tanh(W_h h_i + W_s s_t + w_c c_i^t),  a^t = softmax(e^t)    (eq. 1–2, 11)
    context        h*_t = Σ_i a_i^t h_i                                                   (eq. 3)
    vocabulary     P_vocab = softmax(V'(V [s_t; h*_t] + b) + b')                          (eq. 4)
    generation     p_gen = σ(w_h*ᵀ h*_t + w_sᵀ s_t + w_xᵀ x_t + b_ptr)                    (eq. 8)
    final          P(w) = p_gen P_vocab(w) + (1 − p_gen) Σ_{i: w_i = w} a_i^t             (eq. 9)
    coverage       c^t = Σ_{t' < t} a^{t'}                                                (eq. 10)

``PointerGeneratorConfig.projection`` swaps the softmax of the attention for sparsemax, 1.5-entmax or any
projection of the registry; a word with zero attention then has zero copy probability.

**Extended vocabulary.** ``P(w)`` is a distribution over the fixed vocabulary *plus* the words of this
source that are out of it: the k-th distinct OOV of example b gets id ``vocab_size + k``
(:func:`extend_source`). The copy term is a ``scatter_add`` of the attention into that extended
distribution, so a word that occurs several times in the source collects all its attention. The decoder
never *embeds* an extended id: it is fed ``<unk>`` instead (:meth:`PointerGenerator.step`).

With ``pointer=False`` the model is the plain attentional baseline (Zhang et al.'s "ABS"): ``P = P_vocab``
over the fixed vocabulary, and target OOVs must be given as ``<unk>``. With ``coverage=True`` the attention
score gets the coverage feature (:class:`~sparse_tutorial.scores.CoverageAdditiveScore`); the coverage
*loss* lives in :mod:`sparse_tutorial.coverage`.

**Training objective** (:func:`pointer_generator_loss`), per target token and composable as in Zhang et al.'s
Table V systems: ``NLL + coverage_weight · covloss (See et al. eq. 12–13) + entropy_weight · H(a)`` (Zhang et
al. eq. 12 with the minimum-entropy regularizer).

Shapes: ``source: (batch, src_len)`` ids in the fixed vocabulary (OOV = ``unk_id``), ``source_extended``
the same words in the extended vocabulary, ``source_mask: (batch, src_len)`` bool True = real token.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple, Sequence

import torch
from torch import Tensor, nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from sparse_tutorial._validation import check_mask
from sparse_tutorial.attention import Attention
from sparse_tutorial.coverage import coverage_loss, update_coverage
from sparse_tutorial.decoding import Decoded, StepFn, beam_search
from sparse_tutorial.regularizers import entropy_penalty
from sparse_tutorial.scores import AdditiveScore, CoverageAdditiveScore

_LOG_FLOOR = 1e-12
"""Probabilities are floored here before the log: extended ids absent from a source have P = 0 exactly."""


@dataclass
class PointerGeneratorConfig:
    """Sizes and switches of :class:`PointerGenerator` (See et al. use 128 / 256 and a 50k vocabulary)."""

    vocab_size: int  # fixed vocabulary, specials included
    embedding_dim: int = 128  # word embeddings, shared by encoder and decoder
    hidden_dim: int = 256  # each LSTM direction; the encoder states h_i have 2·hidden_dim
    attention_dim: int = 256  # size of the hidden layer of the additive score
    pointer: bool = True  # False: attention-only baseline ("ABS"), no copying, no p_gen
    coverage: bool = False  # add the coverage feature w_c c_i to the attention score
    projection: str = "softmax"  # scores to weights: "softmax" (See et al.), "sparsemax", "entmax15", ...
    pad_id: int = 0
    unk_id: int = 1
    dropout: float = 0.0  # on embeddings and on the vocabulary layer's input


def extend_source(tokens: Sequence[str], token_to_id: dict[str, int], unk_id: int) -> tuple[list[int], list[int], list[str]]:
    """Map one source to fixed-vocabulary ids, extended ids and its list of OOV words.

    Returns:
        ``(ids, extended_ids, oovs)``: ``ids`` has ``unk_id`` for every OOV; in ``extended_ids`` the k-th
        distinct OOV (in order of first occurrence) is ``len(token_to_id) + k``.
    """
    vocab_size = len(token_to_id)
    ids, extended, oovs = [], [], []
    for token in tokens:
        index = token_to_id.get(token)
        if index is None:
            if token not in oovs:
                oovs.append(token)
            ids.append(unk_id)
            extended.append(vocab_size + oovs.index(token))
        else:
            ids.append(index)
            extended.append(index)
    return ids, extended, oovs


def extend_target(tokens: Sequence[str], token_to_id: dict[str, int], unk_id: int, oovs: Sequence[str]) -> list[int]:
    """Target ids in the extended vocabulary of its source: an OOV that the source contains gets the source's
    extended id (it can be copied); any other OOV is ``unk_id`` (See et al.'s convention)."""
    vocab_size = len(token_to_id)
    result = []
    for token in tokens:
        index = token_to_id.get(token)
        if index is None:
            index = vocab_size + oovs.index(token) if token in oovs else unk_id
        result.append(index)
    return result


class EncoderOutput(NamedTuple):
    """What :meth:`PointerGenerator.encode` returns; every tensor is batch-first so beams can reorder it."""

    annotations: Tensor
    """``(batch, src_len, 2·hidden_dim)``: the encoder states ``h_i``, zero on padding."""
    projected_keys: Tensor
    """``(batch, src_len, attention_dim)``: ``W_h h_i``, computed once per source, reused at every step."""
    mask: Tensor
    """``(batch, src_len)`` bool, True = real source token."""
    source_extended: Tensor
    """``(batch, src_len)`` source ids in the extended vocabulary (where the copy mass goes)."""
    n_extended: int
    """Size of the extended vocabulary, ``vocab_size + max #OOVs`` in the batch."""


class DecoderState(NamedTuple):
    """The recurrent state carried from step ``t`` to ``t + 1`` (all batch-first)."""

    hidden: Tensor
    """``(batch, hidden_dim)``: ``s_t``."""
    cell: Tensor
    """``(batch, hidden_dim)``: the LSTM memory."""
    context: Tensor
    """``(batch, 2·hidden_dim)``: ``h*_t``, fed to the next step (input feeding)."""
    coverage: Tensor
    """``(batch, src_len)``: ``c^{t+1} = Σ_{t' ≤ t} a^{t'}``, the coverage the next step will see."""


class StepOutput(NamedTuple):
    """One decoder step: the final distribution and what produced it."""

    log_probs: Tensor
    """``(batch, n_extended)``: ``log P(w)`` (eq. 9); the fixed vocabulary only when ``pointer=False``."""
    attention: Tensor
    """``(batch, src_len)``: ``a^t``."""
    p_gen: Tensor
    """``(batch,)``: the generation probability (all ones when ``pointer=False``)."""
    coverage: Tensor
    """``(batch, src_len)``: ``c^t``, the coverage *before* this step (what the coverage loss compares to)."""
    state: DecoderState


class PointerGeneratorOutput(NamedTuple):
    """Teacher-forced pass over a whole target (:meth:`PointerGenerator.forward`)."""

    log_probs: Tensor
    """``(batch, tgt_len, n_extended)``."""
    attention: Tensor
    """``(batch, tgt_len, src_len)``."""
    p_gen: Tensor
    """``(batch, tgt_len)``."""
    coverage: Tensor
    """``(batch, tgt_len, src_len)``: coverage before every step."""


class PointerGenerator(nn.Module):
    """See et al. (2017) pointer-generator: BiLSTM encoder, LSTM decoder, additive attention, copy switch.

    Example::

        model = PointerGenerator(PointerGeneratorConfig(vocab_size=len(vocab), coverage=True))
        output = model(source, source_mask, target_input, source_extended, n_extended)
        nll = -output.log_probs.gather(-1, target_extended.unsqueeze(-1)).squeeze(-1)
    """

    def __init__(self, config: PointerGeneratorConfig) -> None:
        super().__init__()
        self.config = config
        emb, hid = config.embedding_dim, config.hidden_dim
        self.embedding = nn.Embedding(config.vocab_size, emb, padding_idx=config.pad_id)
        self.encoder = nn.LSTM(emb, hid, batch_first=True, bidirectional=True)
        # See et al. reduce the two final encoder states (forward, backward) to the decoder's initial state.
        self.reduce_hidden = nn.Linear(2 * hid, hid)
        self.reduce_cell = nn.Linear(2 * hid, hid)
        self.decoder_input = nn.Linear(emb + 2 * hid, emb)
        self.decoder = nn.LSTMCell(emb, hid)
        if config.coverage:
            score: nn.Module = CoverageAdditiveScore(hid, 2 * hid, config.attention_dim)
        else:
            score = AdditiveScore(hid, 2 * hid, config.attention_dim)
        self.attention = Attention(score, projection=config.projection)
        self.vocab_hidden = nn.Linear(3 * hid, hid)
        self.vocab_out = nn.Linear(hid, config.vocab_size)
        self.generation_switch = nn.Linear(2 * hid + hid + emb, 1) if config.pointer else None
        self.dropout = nn.Dropout(config.dropout)

    # ------------------------------------------------------------------------------------------ encoder

    def encode(self, source: Tensor, source_mask: Tensor, source_extended: Tensor | None = None,
               n_extended: int | None = None) -> tuple[EncoderOutput, DecoderState]:
        """Run the BiLSTM over the source and build the decoder's initial state.

        Args:
            source: ``(batch, src_len)`` fixed-vocabulary ids.
            source_mask: ``(batch, src_len)`` bool, True = real token; padding must come last.
            source_extended: ``(batch, src_len)`` extended ids (defaults to ``source``: nothing to copy
                beyond the vocabulary).
            n_extended: extended vocabulary size, ``≥ vocab_size`` (defaults to ``vocab_size`` + the
                largest extended id − vocab_size + 1, or ``vocab_size``).
        """
        check_mask(source_mask, "source_mask", *source.shape)
        lengths = source_mask.sum(dim=1)
        if bool((lengths == 0).any()):
            raise ValueError("source_mask has an empty row: every source needs at least one token")
        if source_extended is None:
            source_extended = source
        elif source_extended.shape != source.shape:
            raise ValueError(f"source_extended must have the shape of source {tuple(source.shape)}, "
                             f"got {tuple(source_extended.shape)}")
        vocab_size = self.config.vocab_size
        needed = max(vocab_size, int(source_extended.max()) + 1)
        if n_extended is None:
            n_extended = needed
        elif n_extended < needed:
            raise ValueError(f"n_extended must be at least {needed} (vocab_size and every id in "
                             f"source_extended), got {n_extended}")

        embedded = self.dropout(self.embedding(source))
        packed = pack_padded_sequence(embedded, lengths.cpu(), batch_first=True, enforce_sorted=False)
        outputs, (hidden, cell) = self.encoder(packed)
        annotations, _ = pad_packed_sequence(outputs, batch_first=True, total_length=source.shape[1])
        # hidden, cell: (2 directions, batch, hidden_dim) -> (batch, 2·hidden_dim) -> (batch, hidden_dim)
        hidden = torch.relu(self.reduce_hidden(torch.cat([hidden[0], hidden[1]], dim=-1)))
        cell = torch.relu(self.reduce_cell(torch.cat([cell[0], cell[1]], dim=-1)))
        batch, src_len = source.shape
        state = DecoderState(hidden, cell, annotations.new_zeros(batch, annotations.shape[-1]),
                             annotations.new_zeros(batch, src_len))
        projected_keys = self.attention.score.project_keys(annotations)
        return EncoderOutput(annotations, projected_keys, source_mask, source_extended, n_extended), state

    # ------------------------------------------------------------------------------------------ decoder

    def step(self, previous: Tensor, state: DecoderState, encoded: EncoderOutput) -> StepOutput:
        """One decoder step (eq. 1–4, 8–9 of See et al.).

        Args:
            previous: ``(batch,)`` the previous output token, in the *extended* vocabulary; ids beyond the
                fixed vocabulary (copied OOVs) are fed to the embedding as ``unk_id``.
            state: the :class:`DecoderState` after the previous step (or from :meth:`encode`).
            encoded: the :class:`EncoderOutput` (rows in the same order as ``state``).
        """
        config = self.config
        previous = previous.masked_fill(previous >= config.vocab_size, config.unk_id)
        embedded = self.dropout(self.embedding(previous))
        decoder_input = self.decoder_input(torch.cat([embedded, state.context], dim=-1))
        hidden, cell = self.decoder(decoder_input, (state.hidden, state.cell))
        score_state = {"coverage": state.coverage} if config.coverage else {}
        context, attention = self.attention(hidden, encoded.annotations, mask=encoded.mask,
                                            padding_is_zero=True,  # pad_packed_sequence pads with zeros
                                            projected_keys=encoded.projected_keys, **score_state)
        features = self.dropout(torch.cat([hidden, context], dim=-1))
        vocab_logits = self.vocab_out(self.vocab_hidden(features))
        if self.generation_switch is None:
            log_probs = torch.log_softmax(vocab_logits, dim=-1)
            p_gen = hidden.new_ones(hidden.shape[0])
        else:
            p_gen = torch.sigmoid(self.generation_switch(torch.cat([context, hidden, decoder_input], dim=-1)))
            probs = mix_copy_distribution(torch.softmax(vocab_logits, dim=-1), attention, p_gen.squeeze(-1),
                                          encoded.source_extended, encoded.n_extended)
            log_probs = torch.log(probs.clamp_min(_LOG_FLOOR))
            p_gen = p_gen.squeeze(-1)
        new_state = DecoderState(hidden, cell, context, update_coverage(state.coverage, attention))
        return StepOutput(log_probs, attention, p_gen, state.coverage, new_state)

    def output_ids(self, target_extended: Tensor) -> Tensor:
        """Targets in the ids this model predicts: unchanged with a pointer; without one (ABS) every id beyond
        the fixed vocabulary becomes ``unk_id``, since the baseline cannot produce copied OOVs."""
        if self.config.pointer:
            return target_extended
        return target_extended.masked_fill(target_extended >= self.config.vocab_size, self.config.unk_id)

    def forward(self, source: Tensor, source_mask: Tensor, target_input: Tensor,
                source_extended: Tensor | None = None, n_extended: int | None = None) -> PointerGeneratorOutput:
        """Teacher-forced pass: ``target_input: (batch, tgt_len)`` = ``<s>`` followed by the target without
        its last token (extended ids allowed). Returns log-probabilities of the next tokens, see
        :class:`PointerGeneratorOutput`."""
        encoded, state = self.encode(source, source_mask, source_extended, n_extended)
        steps = []
        for t in range(target_input.shape[1]):
            output = self.step(target_input[:, t], state, encoded)
            steps.append(output)
            state = output.state
        return PointerGeneratorOutput(
            torch.stack([s.log_probs for s in steps], dim=1),
            torch.stack([s.attention for s in steps], dim=1),
            torch.stack([s.p_gen for s in steps], dim=1),
            torch.stack([s.coverage for s in steps], dim=1),
        )


    @torch.no_grad()
    def generate(self, source: Tensor, source_mask: Tensor, bos_id: int, eos_id: int, max_len: int,
                 source_extended: Tensor | None = None, n_extended: int | None = None, beam_size: int = 4,
                 alpha: float = 1.0, block_repeated_trigrams: bool = False) -> Decoded:
        """Beam search (:func:`sparse_tutorial.decoding.beam_search`, beam 4 as in See et al.) over the
        extended vocabulary: a hypothesis may end in a copied OOV id, which the next step embeds as
        ``<unk>``. With ``block_repeated_trigrams`` no hypothesis may repeat a trigram (Paulus et al. 2018).

        Returns:
            :class:`~sparse_tutorial.decoding.Decoded` with extended ids (map them back with the batch's
            OOV lists) and the attention of every generated token.
        """
        encoded, state = self.encode(source, source_mask, source_extended, n_extended)

        def step(tokens: Tensor, carried: tuple[DecoderState, EncoderOutput]) -> tuple[Tensor, tuple, Tensor]:
            output = self.step(tokens, carried[0], carried[1])
            return output.log_probs, (output.state, carried[1]), output.attention

        decoder_step: StepFn = step
        initial: tuple = (state, encoded)
        if block_repeated_trigrams:
            decoder_step = block_repeated_ngrams(step, n=3)
            initial = (initial, source.new_empty(source.shape[0], 0))
        return beam_search(decoder_step, initial, batch_size=source.shape[0], bos=bos_id, eos=eos_id,
                           max_len=max_len, beam_size=beam_size, alpha=alpha, device=source.device)


def block_repeated_ngrams(step: StepFn, n: int = 3) -> StepFn:
    """Wrap a step function so that no hypothesis generates an n-gram it already contains.

    The wrapped state is ``(inner_state, history)`` with ``history: (rows, t)`` the tokens fed so far (the
    first is ``<s>``); beam search reorders it with the rest of the state. Before returning, every token
    that would complete an n-gram already in the hypothesis gets log-probability −∞.
    """
    if n < 2:
        raise ValueError(f"n must be >= 2, got {n}")

    def blocked(tokens: Tensor, state: tuple[object, Tensor]) -> tuple[Tensor, tuple[object, Tensor], Tensor]:
        inner, history = state
        history = torch.cat([history, tokens.unsqueeze(1)], dim=1)
        log_probs, inner, attention = step(tokens, inner)
        generated = history[:, 1:]
        length = generated.shape[1]
        if length >= n - 1:
            prefix = generated[:, length - n + 1:]  # the last n − 1 tokens
            # windows[:, i] = generated[:, i : i + n − 1]; a match at i bans generated[:, i + n − 1]
            windows = generated.unfold(1, n - 1, 1)[:, : length - n + 1]
            matches = (windows == prefix.unsqueeze(1)).all(dim=-1)
            rows, starts = matches.nonzero(as_tuple=True)
            log_probs = log_probs.index_put((rows, generated[rows, starts + n - 1]),
                                            log_probs.new_tensor(float("-inf")))
        return log_probs, (inner, history), attention

    return blocked


def mix_copy_distribution(vocab_probs: Tensor, attention: Tensor, p_gen: Tensor, source_extended: Tensor,
                          n_extended: int) -> Tensor:
    """Eq. 9 of See et al.: ``P(w) = p_gen P_vocab(w) + (1 − p_gen) Σ_{i: w_i = w} a_i``.

    Args:
        vocab_probs: ``(batch, vocab_size)`` ``P_vocab``, sums to 1.
        attention: ``(batch, src_len)`` ``a``, sums to 1 over real tokens and is 0 on padding.
        p_gen: ``(batch,)`` in [0, 1].
        source_extended: ``(batch, src_len)`` extended id of every source position.
        n_extended: size of the extended vocabulary (≥ vocab_size).

    Returns:
        ``(batch, n_extended)``, a distribution: the generation mass is zero-padded onto the extended ids and
        the copy mass of every position is added to its word's id (repeated words accumulate).
    """
    batch, vocab_size = vocab_probs.shape
    if n_extended < vocab_size:
        raise ValueError(f"n_extended must be >= vocab_size = {vocab_size}, got {n_extended}")
    if attention.shape != source_extended.shape:
        raise ValueError(f"attention and source_extended must both be (batch, src_len), got "
                         f"{tuple(attention.shape)} and {tuple(source_extended.shape)}")
    p_gen = p_gen.unsqueeze(-1)
    generated = torch.cat([p_gen * vocab_probs, vocab_probs.new_zeros(batch, n_extended - vocab_size)], dim=-1)
    return generated.scatter_add(1, source_extended, (1 - p_gen) * attention)


def pointer_generator_loss(output: PointerGeneratorOutput, target: Tensor, target_mask: Tensor,
                           coverage_weight: float = 0.0, entropy_weight: float = 0.0) -> tuple[Tensor, dict[str, float]]:
    """The training loss, averaged per real target token: ``NLL + coverage_weight · covloss + entropy_weight · H``.

    Args:
        output: the teacher-forced :class:`PointerGeneratorOutput`.
        target: ``(batch, tgt_len)`` gold next tokens in the ids the model predicts
            (:meth:`PointerGenerator.output_ids`).
        target_mask: ``(batch, tgt_len)`` bool, True = real target token.
        coverage_weight: λ of See et al.'s coverage loss (they use 1).
        entropy_weight: λ of Zhang et al.'s minimum-entropy regularizer (0.01–0.04 in their Table V).

    Returns:
        ``(loss, stats)`` with ``stats`` = the three terms (unweighted) and the total, as floats.
    """
    if target.shape != output.log_probs.shape[:2]:
        raise ValueError(f"target must be (batch, tgt_len) = {tuple(output.log_probs.shape[:2])}, "
                         f"got {tuple(target.shape)}")
    check_mask(target_mask, "target_mask", *target.shape)
    if int(target.max()) >= output.log_probs.shape[-1]:
        raise ValueError(f"target has id {int(target.max())} beyond the model's {output.log_probs.shape[-1]} outputs; "
                         "map it with PointerGenerator.output_ids")
    n_tokens = target_mask.sum().clamp_min(1)
    nll = -output.log_probs.gather(-1, target.unsqueeze(-1)).squeeze(-1)
    nll = nll.masked_fill(~target_mask, 0.0).sum() / n_tokens
    covloss = coverage_loss(output.attention, output.coverage, target_mask)
    entropy = entropy_penalty(output.attention, target_mask)
    loss = nll + coverage_weight * covloss + entropy_weight * entropy
    stats = {"loss": loss.item(), "nll": nll.item(), "coverage_loss": covloss.item(), "entropy": entropy.item()}
    return loss, stats
