"""Every projection by name: what ``Attention(score, "sparsemax")`` and the experiments' configurations
resolve (:func:`get_projection`)."""
from __future__ import annotations

import functools
import inspect
from typing import Callable

from torch import Tensor

from sparse_tutorial._validation import check_positive
from sparse_tutorial.projections.alpha_entmax import alpha_entmax, entmax_bisect
from sparse_tutorial.projections.dense import gumbel_softmax, softmax, softmax_with_temperature
from sparse_tutorial.projections.sparse import _check_lam, entmax15, sparsegen_lin, sparsemax

Projection = Callable[..., Tensor]
"""A projection as the attention modules use it, ``fn(scores, dim=-1) -> weights``."""

PROJECTIONS: dict[str, Projection] = {
    "softmax": softmax,
    "sparsemax": sparsemax,
    "entmax15": entmax15,
    "sparsegen_lin": sparsegen_lin,
    "softmax_with_temperature": softmax_with_temperature,
    "gumbel_softmax": gumbel_softmax,
    "alpha_entmax": alpha_entmax,
    "entmax_bisect": entmax_bisect,
    "sparsegen": sparsegen_lin,
    "temperature": softmax_with_temperature,
    "gumbel": gumbel_softmax,
}
"""Name → projection function; the keyword arguments each accepts are those of its signature. Every
function is found by its own name; ``"sparsegen"``, ``"temperature"`` and ``"gumbel"`` are the short names
that stored run keys and chapters use; ``"entmax_bisect"`` is the ``entmax`` package's name of α-entmax."""

_KWARG_CHECKS: dict[str, Callable[[object], None]] = {
    "temperature": lambda value: check_positive(value, "temperature"),
    "lam": _check_lam,
}


def get_projection(name: str, **kwargs: object) -> Projection:
    """The projection called ``name`` with ``kwargs`` bound, as ``fn(scores, dim=-1) -> weights``.

    Example: ``get_projection("temperature", temperature=0.5)``, ``get_projection("sparsegen", lam=0.5)``,
    ``get_projection("gumbel", temperature=0.5, hard=True)``.

    Raises:
        ValueError: unknown ``name`` (the message lists the valid ones), keyword arguments that the
            projection does not take (named), or invalid values (e.g. ``temperature <= 0``).
    """
    if name not in PROJECTIONS:
        raise ValueError(f"unknown projection name {name!r}; valid names: {sorted(PROJECTIONS)}")
    function = PROJECTIONS[name]
    if not kwargs:
        return function
    accepted = set(inspect.signature(function).parameters) - {"scores", "dim", "k"}
    unknown = sorted(set(kwargs) - accepted)
    if unknown:
        raise ValueError(f"projection {name!r} does not take keyword argument(s) {unknown}; "
                         f"it takes {sorted(accepted) or 'none'}")
    for key, value in kwargs.items():
        if key in _KWARG_CHECKS:
            _KWARG_CHECKS[key](value)
    return functools.partial(function, **kwargs)
