"""Which attention method when: the measurements behind the table that closes Part I.

Every method of Part I that changes the attention weights (:data:`METHODS`: a projection, or softmax with a
penalty on its weights) is measured here in one run, the same way for all:

* **exact zeros**: the share of exact zeros among the other keys of the trained one-to-one lookup
  (:mod:`sparse_tutorial.lookup`, ``LookupTask()``);
* **exact gradient**: whether ``torch.autograd.gradcheck`` passes in float64 for the weights as a function of
  the scores (with the penalty added, for the penalty rows) -- a straight-through estimator does not;
* **many-to-one**: the accuracy of the lookup whose query occurs three times (``LookupTask(copies=3)``), which
  needs the weight spread over all three occurrences;
* **longer inputs**: the one-to-one model trained on 8 keys, tested on 24;
* **cost**: the time of a forward and backward pass of the weights (and penalty) on ``(1024, 64)`` scores
  divided by softmax's, the fastest of five interleaved repeats (``benchmarks/`` measures the
  projections alone with care, appendix *Benchmarks*).

Every model is trained with :func:`~sparse_tutorial.lookup.train_lookup`'s defaults, as in the chapters; the
trained numbers move in their 2nd-3rd digit with the CPU and the thread count.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any, Callable

import torch
from torch import Tensor
from tqdm import tqdm

from sparse_tutorial.lookup import LookupTask, train_lookup
from sparse_tutorial.projections import get_projection
from sparse_tutorial.regularizers import PENALTIES


@dataclass(frozen=True)
class Method:
    """One row: the projection (a name of :func:`~sparse_tutorial.projections.get_projection` and its keyword
    arguments), the penalty on the weights and its λ, the knob a user turns, and the chapter that teaches it."""

    projection: str
    projection_kwargs: tuple[tuple[str, Any], ...] = ()
    penalty: str | None = None
    weight: float = 0.0
    knob: str = "none"
    chapter: str = ""

    def project(self) -> Callable[[Tensor], Tensor]:
        """The projection as ``fn(scores) -> weights`` (last dim)."""
        return get_projection(self.projection, **dict(self.projection_kwargs))


METHODS: dict[str, Method] = {
    "softmax": Method("softmax", chapter="01_attention_zoo"),
    "softmax + L∞ penalty, λ = 0.5": Method("softmax", penalty="linf", weight=0.5, knob="λ (penalty weight)",
                                            chapter="03_linf"),
    "softmax + L∞ penalty, λ = 10": Method("softmax", penalty="linf", weight=10.0, knob="λ (penalty weight)",
                                           chapter="03_linf"),
    "softmax + entropy penalty, λ = 0.5": Method("softmax", penalty="entropy", weight=0.5,
                                                 knob="λ (penalty weight)", chapter="04_min_entropy"),
    "softmax + entropy penalty, λ = 10": Method("softmax", penalty="entropy", weight=10.0,
                                                knob="λ (penalty weight)", chapter="04_min_entropy"),
    "softmax, T = 0.2": Method("temperature", (("temperature", 0.2),), knob="T (temperature)",
                               chapter="05_temperature_gumbel"),
    "Gumbel-softmax, straight-through": Method("gumbel", (("temperature", 1.0), ("hard", True)),
                                               knob="T (temperature)", chapter="05_temperature_gumbel"),
    "sparsemax": Method("sparsemax", chapter="06_sparsemax"),
    "sparsegen-lin, λ = 0.5": Method("sparsegen", (("lam", 0.5),), knob="λ < 1 (sparsity)",
                                     chapter="07_sparsegen_entmax"),
    "1.5-entmax": Method("entmax15", chapter="07_sparsegen_entmax"),
    "α-entmax, α = 1.25": Method("alpha_entmax", (("alpha", 1.25),), knob="α (learnable)",
                                chapter="07_sparsegen_entmax"),
}
"""Part I's methods, named as the table shows them; each penalty at the two ends its chapter asserts (the
λ between them is where the trained attention tips from keeping a needed tie to breaking it, a point that
moves with the CPU)."""
LONGER = LookupTask(length=24)
"""The one-to-one lookup with three times the keys, on which the model trained on 8 is tested."""


def accuracy_on(result: dict[str, Any], task: LookupTask, seed: int, size: int = 2000) -> float:
    """Accuracy of a trained lookup model (a :func:`~sparse_tutorial.lookup.train_lookup` result) on ``size``
    fresh lookups of ``task``."""
    keys, labels, query, answer, _ = task.sample(size, torch.Generator().manual_seed(seed + 3))
    with torch.no_grad():
        logits, _ = result["model"](keys, labels, query)
    return (logits.argmax(-1) == answer).double().mean().item()


def _weights_and_penalty(method: Method) -> Callable[[Tensor], Tensor]:
    """``scores -> weights`` of ``method``, plus ``λ · penalty`` broadcast onto them (what training differentiates)."""
    project = method.project()
    if method.penalty is None:
        return project

    def penalised(scores: Tensor) -> Tensor:
        weights = project(scores)
        return weights + method.weight * PENALTIES[method.penalty](weights[:, None, :])
    return penalised


def exact_gradient(method: Method, seed: int) -> bool:
    """Whether ``gradcheck`` passes for ``_weights_and_penalty`` at random float64 scores ``(4, 6)``."""
    scores = torch.randn(4, 6, dtype=torch.float64, generator=torch.Generator().manual_seed(seed)).requires_grad_()
    function = _weights_and_penalty(method)

    def fixed_noise(x: Tensor) -> Tensor:
        torch.manual_seed(seed)  # Gumbel's noise: the same draw in every evaluation gradcheck makes
        return function(x)
    return torch.autograd.gradcheck(fixed_noise, (scores,), raise_exception=False)


def relative_costs(methods: dict[str, Method], shape: tuple[int, int] = (1024, 64), calls: int = 20,
                   repeats: int = 5) -> dict[str, float]:
    """Per method, the time of ``calls`` forward + backward passes of ``_weights_and_penalty`` on
    ``shape`` float32 scores, the fastest of ``repeats`` (the least disturbed by the rest of the machine),
    divided by the first method's; the repeats of all methods interleaved."""
    scores = torch.randn(*shape, generator=torch.Generator().manual_seed(0))
    functions = {name: _weights_and_penalty(method) for name, method in methods.items()}
    best = {name: math.inf for name in methods}
    for _ in range(repeats):
        for name, function in functions.items():
            start = time.perf_counter()
            for _ in range(calls):
                function(scores.detach().requires_grad_()).sum().backward()
            best[name] = min(best[name], time.perf_counter() - start)
    first = next(iter(best.values()))
    return {name: seconds / first for name, seconds in best.items()}


def measure(seed: int = 0) -> dict[str, dict[str, Any]]:
    """``{method: {column: value}}``: every column of the module docstring for every method of
    :data:`METHODS`, in one run, the models in float32 (as chapters 3-7 train them) whatever the default
    dtype (``pandas.DataFrame.from_dict(measure(), orient="index")`` makes it a table)."""
    default = torch.get_default_dtype()
    torch.set_default_dtype(torch.float32)
    try:
        return _measured(seed)
    finally:
        torch.set_default_dtype(default)


def _measured(seed: int) -> dict[str, dict[str, Any]]:
    rows = {}
    for name, method in tqdm(METHODS.items(), desc="training Part I's methods on the lookups"):
        training = dict(projection=method.project(), penalty=method.penalty, weight=method.weight, seed=seed)
        one_to_one = train_lookup(LookupTask(), **training)
        many_to_one = train_lookup(LookupTask(copies=3), **training)
        rows[name] = {"exact zeros": one_to_one["zeros"], "exact gradient": exact_gradient(method, seed),
                      "many-to-one accuracy": many_to_one["accuracy"], "accuracy, 8 keys": one_to_one["accuracy"],
                      "accuracy, 24 keys": accuracy_on(one_to_one, LONGER, seed), "knob": method.knob}
    for name, cost in relative_costs(METHODS).items():
        rows[name]["cost ÷ softmax"] = cost
    return rows
