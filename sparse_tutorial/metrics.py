"""Evaluation measures of the sequence-to-sequence chapters (8-10).

* :func:`corpus_bleu` and :func:`corpus_chrf` -- case-insensitive corpus BLEU and chrF through
  ``sacrebleu``, with one reference per sentence or several (a variable number is fine);
* :func:`paired_bootstrap` -- significance of each system against a baseline by paired bootstrap
  resampling (Koehn 2004), using ``sacrebleu``'s own implementation;
* :func:`attention_entropy_per_token` -- the mean entropy of the attention distributions, one per target
  token (the last column of Zhang et al.'s Table I);
* :func:`sink_share` -- where attention goes when it goes nowhere useful: the share of target tokens whose
  attention argmax falls on one fixed source position (the first token, or the last, e.g. ``</s>``);
* :func:`hard_alignment`, :func:`aer` and :func:`saer` -- word-alignment quality of attention against gold
  sure/possible links (Zhang et al. §VII-A-2, Table III), and :func:`argmax_agreement`, the share of
  linked target tokens whose attention argmax is a gold source word (baselines without attention:
  :mod:`sparse_tutorial.alignment_baselines`);
* :func:`rouge`, :func:`lead_k`, :func:`split_sentences` and :func:`repeated_ngram_fraction` -- ROUGE F1
  through ``rouge-score``, the Lead-k extractive baseline and the repetition measure of the summarization
  chapter (10; Zhang et al. §VII-B, Table V).

Alignments are sets of ``(source_index, target_index)`` pairs, 0-based. Attention matrices are
``(tgt_len, src_len)``: row ``i`` is the distribution the model used to emit target token ``i``.

``sacrebleu`` and ``rouge-score`` are imported by the functions that use them: they belong to the
``metrics`` extra (``pip install 'sparse_tutorial[metrics]'``), and the attention measures here need neither.
"""
from __future__ import annotations

import os
import re
from typing import Sequence, Union

import torch
from torch import Tensor

from sparse_tutorial._validation import check_attention_weights, check_mask
from sparse_tutorial.regularizers import entropy

References = Union[Sequence[str], Sequence[Sequence[str]]]
"""One reference string per hypothesis, or a list of reference strings per hypothesis."""
Alignment = set[tuple[int, int]]
"""A set of ``(source_index, target_index)`` links."""


def _reference_streams(references: References, n: int) -> list[list[str | None]]:
    """sacrebleu's layout: one *stream* per reference slot; ``None`` where a sentence has fewer refs."""
    if len(references) != n:
        raise ValueError(f"references must have one entry per hypothesis ({n}), got {len(references)}")
    per_sentence = [[r] if isinstance(r, str) else list(r) for r in references]
    if any(len(r) == 0 for r in per_sentence):
        raise ValueError("references must hold at least one reference per hypothesis")
    width = max(len(r) for r in per_sentence)
    return [[r[k] if k < len(r) else None for r in per_sentence] for k in range(width)]


def _bleu(lowercase: bool, tokenize: str) -> "sacrebleu.metrics.BLEU":  # noqa: F821
    from sacrebleu.metrics import BLEU

    # force: pre-tokenised input ("none") ends in " ." on purpose, so sacrebleu's warning does not apply
    return BLEU(lowercase=lowercase, tokenize=tokenize, force=tokenize == "none")


def corpus_bleu(hypotheses: Sequence[str], references: References, lowercase: bool = True,
                tokenize: str = "13a") -> float:
    """Corpus BLEU (0-100) of detokenised or space-tokenised strings.

    Args:
        hypotheses: one output string per sentence.
        references: one reference string per sentence, or a list of references per sentence.
        lowercase: case-insensitive BLEU, as in Zhang et al.
        tokenize: sacrebleu tokenizer name (``"13a"`` default; ``"none"`` for pre-tokenised text).
    """
    streams = _reference_streams(references, len(hypotheses))
    return _bleu(lowercase, tokenize).corpus_score(list(hypotheses), streams).score


def corpus_chrf(hypotheses: Sequence[str], references: References, lowercase: bool = True,
                word_order: int = 0) -> float:
    """Corpus chrF (0-100; Popović 2015): the character n-gram F-score (n <= 6, recall weighted by β = 2).

    It credits a half-right word form ("reads" for "reading") that BLEU scores as a miss, so it moves
    before BLEU does on a weak model. With several references, each sentence is scored against the one
    that gives it the best F-score (sacrebleu's rule).

    Args:
        hypotheses: one output string per sentence.
        references: one reference string per sentence, or a list of references per sentence (as
            :func:`corpus_bleu`).
        lowercase: case-insensitive, like :func:`corpus_bleu` (sacrebleu's own default is case-sensitive).
        word_order: word n-grams added to the character n-grams: 0 is chrF, 2 is chrF++ (Popović 2017).
    """
    from sacrebleu.metrics import CHRF

    streams = _reference_streams(references, len(hypotheses))
    return CHRF(word_order=word_order, lowercase=lowercase).corpus_score(list(hypotheses), streams).score


def paired_bootstrap(baseline: Sequence[str], systems: dict[str, Sequence[str]], references: References,
                     n_samples: int = 1000, seed: int = 12345, lowercase: bool = True,
                     tokenize: str = "13a") -> dict[str, dict[str, float | None]]:
    """Paired bootstrap resampling of BLEU for every system against ``baseline`` (sacrebleu ``bs`` test).

    Returns:
        ``{name: {"bleu", "mean", "ci", "p_value"}}`` for ``"baseline"`` and each system, where ``mean`` and
        ``ci`` are the bootstrap mean and 95 % half-width, and ``p_value`` (``None`` for the baseline) is
        sacrebleu's two-sided p-value of the BLEU difference: the share of resamples whose centred absolute
        difference exceeds the observed one, ``(c + 1) / (n_samples + 1)``. (A system identical to the
        baseline therefore gets the degenerate ``1 / (n_samples + 1)``; compare different outputs only.)
    """
    from sacrebleu.significance import PairedTest

    if "baseline" in systems:
        raise ValueError("systems must not use the reserved name 'baseline'")
    streams = _reference_streams(references, len(baseline))
    named = [("baseline", list(baseline))] + [(k, list(v)) for k, v in systems.items()]
    previous = os.environ.get("SACREBLEU_SEED")
    os.environ["SACREBLEU_SEED"] = str(seed)
    try:
        test = PairedTest(named, {"BLEU": _bleu(lowercase, tokenize)}, streams,
                          test_type="bs", n_samples=n_samples)
        _, scores = test()
    finally:
        if previous is None:
            del os.environ["SACREBLEU_SEED"]
        else:
            os.environ["SACREBLEU_SEED"] = previous
    return {name: {"bleu": r.score, "mean": r.mean, "ci": r.ci, "p_value": r.p_value}
            for name, r in zip(scores["System"], scores["BLEU"])}


def attention_entropy_per_token(weights: Tensor | Sequence[Tensor], target_mask: Tensor | None = None) -> float:
    """Mean entropy (nats) of the attention distributions over all real target tokens.

    The :func:`~sparse_tutorial.regularizers.entropy` of each row, averaged. Unlike
    :func:`~sparse_tutorial.regularizers.entropy_penalty` (the same mean as a training loss term) it also
    takes the ragged matrices of decoding, returns a float and refuses an input without a target token.

    Args:
        weights: ``(batch, tgt_len, src_len)`` with ``target_mask: (batch, tgt_len)`` (True = real token),
            or a list of ``(tgt_len_i, src_len_i)`` matrices (e.g. from decoding), every row counted.
    """
    if isinstance(weights, Tensor):
        check_attention_weights(weights)
        rows = entropy(weights, dim=-1)
        if target_mask is not None:
            check_mask(target_mask, "target_mask", *rows.shape)
            rows = rows[target_mask]
    else:
        rows = torch.cat([entropy(w, dim=-1).reshape(-1) for w in weights])
    if rows.numel() == 0:
        raise ValueError("weights hold no target token")
    return rows.mean().item()


def _require_matrix(attention: Tensor) -> None:
    if attention.dim() != 2:
        raise ValueError(f"attention must be (tgt_len, src_len), got shape {tuple(attention.shape)}")


def sink_share(attention: Sequence[Tensor], position: int = 0) -> float:
    """Share of all target tokens whose attention argmax is the source token at ``position``.

    A model that ignores its source parks attention on one fixed token: the first (``position=0``) or the
    last (``position=-1``, e.g. ``</s>``). Sharp attention on such a *sink* has a low entropy per token, so
    this measure tells a collapse apart from sharpening onto the aligned word.

    Args:
        attention: one ``(tgt_len_i, src_len_i)`` matrix per sentence, without padding (``position=-1``
            means the last column of each matrix); every row counts as one target token.
        position: a source index, negative ones counted from the end as in Python.

    Returns:
        ``(rows whose argmax is position) / (all rows)``. Ties go to the first maximal source position
        (``torch.argmax``), so a uniform row counts as attending to position 0.
    """
    on_sink = total = 0
    for matrix in attention:
        _require_matrix(matrix)
        src_len = matrix.shape[1]
        if not -src_len <= position < src_len:
            raise ValueError(f"position {position} lies outside a source of length {src_len}")
        on_sink += int((matrix.argmax(dim=-1) == position % src_len).sum())
        total += matrix.shape[0]
    if total == 0:
        raise ValueError("attention holds no target token")
    return on_sink / total


def hard_alignment(attention: Tensor) -> Alignment:
    """Hard links from soft attention: each target token ``i`` is linked to its most attended source word.

    Args:
        attention: ``(tgt_len, src_len)``.

    Returns:
        ``{(argmax_j attention[i, j], i) for every i}`` -- exactly one link per target token, the usual way
        of reading alignments off attention (Tu et al. 2016); ties go to the first source position.
    """
    _require_matrix(attention)
    return {(j, i) for i, j in enumerate(attention.argmax(dim=-1).tolist())}


def aer(predicted: Sequence[Alignment], sure: Sequence[Alignment], possible: Sequence[Alignment]) -> float:
    """Corpus alignment error rate (Och & Ney 2003): ``1 - (|A∩S| + |A∩P|) / (|A| + |S|)``.

    Possible links include the sure ones (``P ⊇ S``; the union is taken, so passing only the extra
    possible links is fine). Counts are summed over the corpus before dividing.
    """
    if not len(predicted) == len(sure) == len(possible):
        raise ValueError(f"predicted, sure and possible must have the same length, got "
                         f"{len(predicted)}, {len(sure)}, {len(possible)}")
    a_s = a_p = n_a = n_s = 0
    for a, s, p in zip(predicted, sure, possible):
        p = p | s
        a_s, a_p, n_a, n_s = a_s + len(a & s), a_p + len(a & p), n_a + len(a), n_s + len(s)
    if n_a + n_s == 0:
        raise ValueError("predicted and sure hold no link")
    return 1.0 - (a_s + a_p) / (n_a + n_s)


def _link_matrix(links: Alignment, shape: tuple[int, int]) -> Tensor:
    matrix = torch.zeros(shape)
    for j, i in links:
        if not (0 <= i < shape[0] and 0 <= j < shape[1]):
            raise ValueError(f"link (source {j}, target {i}) lies outside the attention matrix {shape}")
        matrix[i, j] = 1.0
    return matrix


def saer(attention: Sequence[Tensor], sure: Sequence[Alignment], possible: Sequence[Alignment]) -> float:
    """Soft alignment error rate, Zhang et al. eq. 23 (after Tu et al. 2016):

    ``SAER = 1 - (|M_A ⊙ M_S| + |M_A ⊙ M_P|) / (|M_A| + |M_S|)``, where ``M_A`` is the attention matrix,
    ``M_S``/``M_P`` hold 1 at sure/possible links (``P ⊇ S``) and ``|M|`` sums the entries. Summed over the
    corpus. Every row of an attention matrix sums to 1, so ``|M_A|`` is the number of target tokens.

    Args:
        attention: one ``(tgt_len, src_len)`` matrix per sentence pair.
    """
    if not len(attention) == len(sure) == len(possible):
        raise ValueError(f"attention, sure and possible must have the same length, got "
                         f"{len(attention)}, {len(sure)}, {len(possible)}")
    num = den = 0.0
    for m_a, s, p in zip(attention, sure, possible):
        m_a = m_a.detach().float().cpu()
        m_s, m_p = _link_matrix(s, tuple(m_a.shape)), _link_matrix(p | s, tuple(m_a.shape))
        num += (m_a * m_s).sum().item() + (m_a * m_p).sum().item()
        den += m_a.sum().item() + m_s.sum().item()
    if den == 0:
        raise ValueError("attention and sure hold no mass")
    return 1.0 - num / den


def argmax_agreement(attention: Sequence[Tensor], sure: Sequence[Alignment]) -> float:
    """Share of the linked target tokens whose attention argmax is one of their gold source words.

    Only target tokens with at least one sure link count; tokens without a link (function words the
    annotators left unaligned) are left out of both the numerator and the denominator. Unlike
    :func:`aer` it ignores how many links a token has: one hit among them is enough.

    Args:
        attention: one ``(tgt_len, src_len)`` matrix per sentence pair.
        sure: the gold sure links of each pair; ties of the argmax go to the first source position.
    """
    if len(attention) != len(sure):
        raise ValueError(f"attention and sure must have the same length, got {len(attention)} and {len(sure)}")
    agree = linked = 0
    for matrix, links in zip(attention, sure):
        _require_matrix(matrix)
        gold = _link_matrix(links, tuple(matrix.shape))  # (tgt_len, src_len), 1 at sure links
        linked += int(gold.any(dim=-1).sum())
        agree += int(gold.gather(-1, matrix.argmax(dim=-1, keepdim=True).cpu()).sum())
    if linked == 0:
        raise ValueError("sure holds no link: no target token to score")
    return agree / linked


# ---------------------------------------------------------------------------------------- summarization

ROUGE_TYPES = ("rouge1", "rouge2", "rougeL", "rougeLsum")
"""ROUGE variants reported by chapter 10: unigram, bigram, longest common subsequence (LCS) over the whole
text, and the summary-level LCS over sentences (``rougeLsum``, which needs one sentence per line)."""

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")


def split_sentences(text: str) -> list[str]:
    """Split at ``.``, ``!`` or ``?`` followed by whitespace, and at newlines; drop empty pieces.

    A plain rule, not a trained sentence splitter: "e.g. foo" is split after "e.g.". Good enough for Lead-k
    and for ``rougeLsum``'s line breaks, and it keeps the library free of NLTK data downloads.
    """
    return [sentence.strip() for sentence in _SENTENCE_END.split(text.strip()) if sentence.strip()]


def lead_k(document: str, k: int) -> str:
    """The Lead-k extractive baseline: the first ``k`` sentences of ``document``, one per line.

    Lead-3 is the classic CNN/Daily Mail baseline (See et al. 2017; Table V of Zhang et al. 2019); for
    one-line references such as package synopses Lead-1 is the fairer comparison.
    """
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    return "\n".join(split_sentences(document)[:k])


def rouge(predictions: Sequence[str], references: Sequence[str],
          rouge_types: Sequence[str] = ROUGE_TYPES) -> dict[str, float]:
    """Corpus ROUGE: the mean over examples of each variant's F1, in percent, via ``rouge-score``.

    Tokens are lowercased alphanumeric words with Porter stemming (``use_stemmer=True``, as the official
    ROUGE-1.5.5 ``-m``). For ``rougeLsum`` both texts are put one sentence per line with
    :func:`split_sentences` (``rouge-score`` reads sentences from newlines; we do not use its
    ``split_summaries=True``, which needs NLTK's punkt data). Tables report ``ROUGE-L`` as ``rougeLsum``,
    which is what the official script computes on multi-sentence summaries.

    Args:
        predictions: system summaries.
        references: one reference per prediction.
        rouge_types: any of :data:`ROUGE_TYPES`.

    Returns:
        ``{rouge_type: mean F1 × 100}``; 0 for an empty list.
    """
    per_example = rouge_per_example(predictions, references, rouge_types)
    return {rouge_type: sum(scores) / max(len(scores), 1) for rouge_type, scores in per_example.items()}


def rouge_per_example(predictions: Sequence[str], references: Sequence[str],
                      rouge_types: Sequence[str] = ROUGE_TYPES) -> dict[str, list[float]]:
    """Each example's ROUGE F1 × 100 (the scores :func:`rouge` averages; a paired bootstrap over documents
    resamples them): ``{rouge_type: [score of example 0, 1, ...]}``.

    Raises:
        ValueError: the lists differ in length, or an unknown ``rouge_types`` entry.
    """
    if len(predictions) != len(references):
        raise ValueError(f"predictions and references must have the same length, got {len(predictions)} "
                         f"and {len(references)}")
    unknown = sorted(set(rouge_types) - set(ROUGE_TYPES))
    if unknown:
        raise ValueError(f"rouge_types must be among {ROUGE_TYPES}, got {unknown}")
    from rouge_score import rouge_scorer

    scorer = rouge_scorer.RougeScorer(list(rouge_types), use_stemmer=True)
    scores: dict[str, list[float]] = {rouge_type: [] for rouge_type in rouge_types}
    for prediction, reference in zip(predictions, references):
        result = scorer.score("\n".join(split_sentences(reference)), "\n".join(split_sentences(prediction)))
        for rouge_type in rouge_types:
            scores[rouge_type].append(100 * result[rouge_type].fmeasure)
    return scores


def repeated_ngram_fraction(sequences: Sequence[Sequence[str]], n: int = 3) -> float:
    """Share of the n-grams of the outputs that repeat an earlier n-gram of the *same* output.

    See et al. (2017, Fig. 4) use it to show that coverage removes repetition: 0 means no output repeats
    itself. Pooled over all outputs (long outputs weigh more); 0 when no output has n tokens.
    """
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    repeated = total = 0
    for tokens in sequences:
        ngrams = [tuple(tokens[i:i + n]) for i in range(len(tokens) - n + 1)]
        repeated += len(ngrams) - len(set(ngrams))
        total += len(ngrams)
    return repeated / total if total else 0.0


__all__ = ["corpus_bleu", "corpus_chrf", "paired_bootstrap", "attention_entropy_per_token", "sink_share",
           "hard_alignment", "aer", "saer", "argmax_agreement", "ROUGE_TYPES", "split_sentences", "lead_k", "rouge",
           "repeated_ngram_fraction"]
