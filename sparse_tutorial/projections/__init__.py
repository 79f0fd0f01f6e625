"""Projections of attention scores onto the probability simplex: softmax and its sparse relatives.

Every function maps ``scores: (..., n, ...)`` to ``weights`` of the same shape whose slices along ``dim``
lie on the simplex (non-negative, summing to one). Chapter 5 (temperature, Gumbel), chapter 6 (sparsemax)
and chapter 7 (sparsegen, entmax-1.5, α-entmax) explain them; the appendix "How fast is sparse attention?"
times them.
This package is the one to import them from: the functions, their ``nn.Module`` twins (``M(dim=...)``, as
in the ``entmax`` package) and :func:`get_projection`; any of the three plugs into every attention module.

* :func:`softmax`, :func:`softmax_with_temperature`, :func:`gumbel_softmax` — dense (Gumbel ``hard=True``
  is one-hot forward with a straight-through gradient).
* :func:`sparsemax` — the Euclidean projection onto the simplex (Martins & Astudillo 2016, eq. 2),
  ``p = max(z − τ, 0)``, with the closed-form Jacobian-vector product ``v ↦ s ⊙ (v − mean_S v)``.
* :func:`sparsegen_lin` — sparsegen-lin (Laha et al. 2018): ``sparsemax(z / (1 − λ))``, λ < 1.
* :func:`entmax15` — exact 1.5-entmax (Peters et al. 2019): ``p = max(z/2 − τ, 0)²``.
* :func:`alpha_entmax` — α-entmax for any α ≥ 1, α learnable (:class:`AlphaEntmax`); the ``entmax``
  package's ``entmax_bisect``/``EntmaxBisect`` with its signature.

Conventions shared by all of them:

* masked positions are passed as ``-inf`` scores and get exactly zero weight; a slice that is entirely
  ``-inf`` (nothing to attend to) gets all zeros and a zero gradient, never NaN;
* NaN or ``+inf`` in the scores raises ``ValueError``; finite huge scores (``±3e38``) are fine because
  every computation first subtracts the row maximum;
* float16/bfloat16 scores are computed in float32 and returned in their own dtype;
* ``dim`` may be any dimension; batch shapes and non-contiguous inputs need no special care.

Algorithms (timed in the appendix). Neither sparse projection sorts: each finds its threshold τ exactly by
a search that starts from a lower bound and runs only on the few entries that can be in the support, and
the backward passes use the closed-form Jacobians. No Python loop runs over batch elements. The package
has one module per idea, each read top to bottom:

* ``dense`` — softmax, temperature, Gumbel;
* ``sparse`` — sparsemax, sparsegen-lin, 1.5-entmax;
* ``alpha_entmax`` — α-entmax by bisection, with its gradient in α;
* ``registry`` — every projection by name (:func:`get_projection`);
* :mod:`~sparse_tutorial.projections.kernel_dispatch` — which code runs: on the CPU the compiled C++ kernel
  of :mod:`~sparse_tutorial.projections.fused` (``fused_sparsemax.cpp``) when a compiler is at hand
  (``with fused.eager():`` turns it off), else the eager PyTorch code of the two modules below;
* :mod:`~sparse_tutorial.projections.sparsemax_eager` and :mod:`~sparse_tutorial.projections.entmax_eager`
  — the threshold searches and their backward passes, as autograd Functions;
* :mod:`~sparse_tutorial.projections.threshold_candidates` — what both searches share: a lower bound on τ
  from block maxima, and the candidates above it;
* :mod:`~sparse_tutorial.projections.score_rows` — validation, the row maximum and the ``(rows, n)`` layout
  that every projection starts from.
"""
from sparse_tutorial.projections.alpha_entmax import AlphaEntmax, EntmaxBisect, alpha_entmax, entmax_bisect
from sparse_tutorial.projections.dense import (GumbelSoftmax, Softmax, SoftmaxWithTemperature, gumbel_softmax, softmax,
                                               softmax_with_temperature)
from sparse_tutorial.projections.registry import PROJECTIONS, Projection, get_projection
from sparse_tutorial.projections.sparse import Entmax15, SparsegenLin, Sparsemax, entmax15, sparsegen_lin, sparsemax

__all__ = ["PROJECTIONS", "AlphaEntmax", "Entmax15", "EntmaxBisect", "GumbelSoftmax", "Projection", "Softmax",
           "SoftmaxWithTemperature", "SparsegenLin", "Sparsemax", "alpha_entmax", "entmax15", "entmax_bisect",
           "get_projection", "gumbel_softmax", "softmax", "softmax_with_temperature", "sparsegen_lin", "sparsemax"]
