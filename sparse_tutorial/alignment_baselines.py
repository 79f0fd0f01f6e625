"""Word alignments without attention: the baselines an attention AER must beat (chapter 10, Table III).

* :func:`diagonal_alignment` -- every target word linked to the source word at the same relative
  position, the alignment of a model that knows only the two lengths;
* :class:`IBMModel1` -- Brown et al.'s (1993) IBM Model 1: lexical translation probabilities
  ``t(target word | source word)`` learned by expectation-maximisation from sentence pairs alone, with a
  NULL source word for target words that translate nothing; :meth:`IBMModel1.align` reads the most
  probable (Viterbi) alignment off them.

Alignments follow :mod:`sparse_tutorial.metrics`: sets of ``(source_index, target_index)`` pairs, 0-based,
so :func:`~sparse_tutorial.metrics.aer` scores them directly.

Why not NLTK's ``nltk.translate.IBMModel1`` (NLTK is installed with ``rouge-score``)? It is a pure-Python
loop over every word pair: 50 s for five iterations on the 7.1k Greek-English training verses of chapter 10,
where the vectorised EM below takes about a second. It also normalises a target word that occurs twice in
a sentence once for both occurrences, halving their counts. ``tests/test_alignment_baselines.py`` checks
that the two agree wherever NLTK follows Brown et al.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import sparse

from sparse_tutorial.metrics import Alignment

SentencePair = tuple[Sequence[str], Sequence[str]]
"""``(source words, target words)`` of one sentence pair."""


def diagonal_alignment(source_len: int, target_len: int) -> Alignment:
    """Link target position ``i`` to source position ``round(i * (source_len - 1) / max(target_len - 1, 1))``.

    The first target word goes to the first source word and the last to the last, the ones between
    evenly spaced; halves are rounded up (exact integer arithmetic, no float rounding). One link per target
    word, so it competes with attention's one argmax link per target word on equal terms.

    Returns:
        ``{(source_index, i) for i in range(target_len)}``; empty when ``target_len == 0``.
    """
    if source_len < 1:
        raise ValueError(f"source_len must be >= 1, got {source_len}")
    if target_len < 0:
        raise ValueError(f"target_len must be >= 0, got {target_len}")
    steps = max(target_len - 1, 1)
    return {((2 * i * (source_len - 1) + steps) // (2 * steps), i) for i in range(target_len)}


@dataclass(frozen=True, eq=False)  # eq=False: sparse matrices have no truth value
class IBMModel1:
    """Lexical translation probabilities of IBM Model 1, trained with :meth:`train`.

    Attributes:
        source_ids: source word -> row of ``translation`` (row 0 is NULL, the last row any unseen word).
        target_ids: target word -> column of ``translation`` (the last column is any unseen word).
        translation: ``(len(source_ids) + 2, len(target_ids) + 1)`` sparse matrix of ``t(target | source)``;
            every row of a seen source word (and NULL) sums to 1, the unseen row and column are 0.
    """

    source_ids: dict[str, int]
    target_ids: dict[str, int]
    translation: sparse.csr_matrix

    @classmethod
    def train(cls, pairs: Sequence[SentencePair], iterations: int = 5) -> IBMModel1:
        """EM from uniform ``t`` (Brown et al. 1993, §4.1; Koehn 2010, §4.2).

        E-step: each target word of a pair spreads one count over NULL and the source words of its
        sentence in proportion to ``t(target | source)``; M-step: ``t`` is the normalised count. A source
        word repeated in a sentence collects a share at each of its positions. All pairs of co-occurring
        words of the corpus are laid out in one flat array, so an iteration is three ``np.bincount`` calls.

        Args:
            pairs: ``(source words, target words)`` per sentence pair.
            iterations: EM iterations (5 is the usual choice for Model 1).
        """
        if iterations < 1:
            raise ValueError(f"iterations must be >= 1, got {iterations}")
        if not any(len(target) for _, target in pairs):
            raise ValueError("pairs hold no target word: nothing to train on")
        source_ids: dict[str, int] = {}
        target_ids: dict[str, int] = {}
        flat_source, flat_target, flat_token = [], [], []  # one entry per (target word, source word or NULL)
        tokens = 0
        for source, target in pairs:
            rows = np.array([0] + [source_ids.setdefault(w, len(source_ids) + 1) for w in source])
            columns = np.array([target_ids.setdefault(w, len(target_ids)) for w in target], dtype=np.int64)
            flat_source.append(np.tile(rows, len(columns)))
            flat_target.append(np.repeat(columns, len(rows)))
            flat_token.append(np.repeat(np.arange(tokens, tokens + len(columns)), len(rows)))
            tokens += len(columns)
        n_source, n_target = len(source_ids) + 2, len(target_ids) + 1
        word_pairs, pair_of = np.unique(np.concatenate(flat_source) * n_target + np.concatenate(flat_target),
                                        return_inverse=True)
        token_of, source_of_pair = np.concatenate(flat_token), word_pairs // n_target
        probability = np.ones(len(word_pairs))  # uniform: every constant gives the same first E-step
        for _ in range(iterations):
            current = probability[pair_of]
            share = current / np.bincount(token_of, weights=current)[token_of]
            counts = np.bincount(pair_of, weights=share, minlength=len(word_pairs))
            probability = counts / np.bincount(source_of_pair, weights=counts)[source_of_pair]
        translation = sparse.csr_matrix((probability, (source_of_pair, word_pairs % n_target)),
                                        shape=(n_source, n_target))
        return cls(source_ids, target_ids, translation)

    def probability(self, target_word: str, source_word: str | None) -> float:
        """``t(target_word | source_word)``; ``source_word=None`` is NULL; 0 for a pair never seen together."""
        row = 0 if source_word is None else self.source_ids.get(source_word, self.translation.shape[0] - 1)
        return float(self.translation[row, self.target_ids.get(target_word, self.translation.shape[1] - 1)])

    def align(self, source: Sequence[str], target: Sequence[str]) -> Alignment:
        """The Viterbi alignment: each target word linked to the source word of highest ``t(target | source)``.

        Target words whose best candidate is NULL get no link (ties go to NULL, then to the earlier source
        position), so a word never seen in training, whose ``t`` is 0 everywhere, stays unlinked.

        Returns:
            ``{(source_index, target_index)}``, at most one link per target word, no NULL links.
        """
        unseen_source, unseen_target = self.translation.shape[0] - 1, self.translation.shape[1] - 1
        rows = [0] + [self.source_ids.get(w, unseen_source) for w in source]
        columns = [self.target_ids.get(w, unseen_target) for w in target]
        best = self.translation[rows][:, columns].toarray().argmax(axis=0)  # (tgt_len,) into [NULL] + source
        return {(j - 1, i) for i, j in enumerate(best.tolist()) if j > 0}
