"""Experiment ``interpretability``: Meister et al. (2021), explained in chapter 12.

For BiLSTM and Transformer classifiers with softmax, sparsemax and sparsegen-lin attention it measures, on
test sentences:

* ``H̃(g_{h_p}(x))``, the normalised entropy of the influence of the inputs on each intermediate
  representation (their Table 1; averaged over positions ``p`` and examples);
* ``H̃(g_ŷ(x))`` and ``H̃(D_ŷ(x))``, the entropy of gradient and leave-one-out importance of the inputs on
  the prediction (their Fig. 2), next to the entropy and the share of exact zeros of the attention itself;
* Kendall's τ-b between the attention distribution and each importance measure (their Fig. 3);

and, across the sparsegen λ grid, the Pearson correlation between λ and ``H̃(g_ŷ(x))`` (their Table 2).

``python -m sparse_tutorial.experiments interpretability --profile full --seeds 3`` writes
``book/results/interpretability.json`` (``--profile medium``: smaller models and grid, sized for a CPU):
a grid of runs (:func:`grid`, one per trained model), each trained and measured by :func:`execute` and
combined by :func:`assemble` (see :mod:`~sparse_tutorial.experiments.runner`).
"""
from __future__ import annotations

from typing import Any

import numpy as np
import torch
from scipy.stats import pearsonr

from sparse_tutorial.experiments.classification import Split, Task, cached_task, fit
from sparse_tutorial.experiments.runner import sweep_experiment
from sparse_tutorial.experiments.sweep import Run
from sparse_tutorial.interpret import (
    batched_kendall_tau_b,
    gradient_importance,
    intermediate_importance,
    leave_one_out_importance,
    normalized_entropy,
)
from sparse_tutorial.models.classifier import AttentionClassifier, meister_config
from sparse_tutorial.profiles import training_device


def projection_grid(sparsegen_lambdas: tuple[float, ...]) -> list[tuple[str, float | None]]:
    """``(projection, λ)`` for softmax (λ ``None``), sparsemax (= sparsegen-lin with λ = 0) and each other
    sparsegen λ."""
    return [("softmax", None), ("sparsemax", 0.0)] + [("sparsegen", lam) for lam in sparsegen_lambdas if lam != 0.0]


def head(split: Split, count: int) -> Split:
    """The first ``count`` examples, trimmed to their longest row."""
    mask = split.mask[:count]
    width = int(mask.sum(-1).max())
    return Split(split.token_ids[:count, :width], mask[:, :width], split.labels[:count])


def importance_statistics(model: AttentionClassifier, split: Split) -> dict[str, float]:
    """Means over the examples of ``split`` of every quantity in the module docstring."""
    ids, mask, _ = split
    with torch.no_grad():
        weights = model(ids, mask).weights
    grad = gradient_importance(model, ids, mask)
    loo = leave_one_out_importance(model, ids, mask)
    inner = intermediate_importance(model, ids, mask)                          # (batch, p, i)
    inner_entropy = normalized_entropy(inner, mask.unsqueeze(1).expand_as(inner))   # (batch, p)
    inner_entropy = (inner_entropy * mask).sum(-1) / mask.sum(-1)
    real = mask.sum(-1) > 1
    return {
        "entropy_intermediate": inner_entropy[real].mean().item(),
        "entropy_intermediate_std": inner_entropy[real].std().item(),
        "entropy_gradient": normalized_entropy(grad, mask)[real].mean().item(),
        "entropy_loo": normalized_entropy(loo, mask)[real].mean().item(),
        "entropy_attention": normalized_entropy(weights, mask)[real].mean().item(),
        "attention_zero_share": ((weights == 0) & mask).sum().item() / mask.sum().item(),
        "tau_gradient": np.nanmean(batched_kendall_tau_b(weights, grad, mask)[real].numpy()).item(),
        "tau_loo": np.nanmean(batched_kendall_tau_b(weights, loo, mask)[real].numpy()).item(),
    }


def train_and_measure(task: Task, encoder: str, projection: str, lam: float | None, seed: int,
                      evaluation: Split, epochs: int, embed_dim: int = 64, hidden_dim: int = 64,
                      lr: float = 1e-3, device: str | torch.device = "cpu") -> dict[str, Any]:
    """Train ``encoder`` with attention ``projection`` (sparsegen's ``lam``; see :func:`projection_grid`) on
    ``task`` (Adam, model chosen on dev; trained on ``device``) and measure it on ``evaluation`` on the CPU.

    Returns:
        ``{"task", "encoder", "projection", "lambda", "seed", "dev_accuracy", "test_accuracy"}`` and
        :func:`importance_statistics`.
    """
    config = meister_config(encoder, task.vocab_size, projection=projection, num_classes=task.num_classes,
                            embed_dim=embed_dim, hidden_dim=hidden_dim,
                            **({"lam": lam} if projection == "sparsegen" else {}))
    result = fit(config, task, epochs=epochs, lr=lr, seed=seed, optimizer="adam", device=device)
    return {"task": task.name, "encoder": encoder, "projection": projection, "lambda": lam, "seed": seed,
            "dev_accuracy": result.dev_accuracy, "test_accuracy": result.test_accuracy,
            **importance_statistics(result.model, evaluation)}


def sweep(task: Task, encoders: tuple[str, ...], sparsegen_lambdas: tuple[float, ...], seeds: tuple[int, ...],
          epochs: int, eval_examples: int, embed_dim: int = 64, hidden_dim: int = 64,
          lr: float = 1e-3, device: str | torch.device = "cpu") -> list[dict[str, Any]]:
    """:func:`train_and_measure` every encoder × projection × seed on the first ``eval_examples`` test
    sentences."""
    evaluation = head(task.test, eval_examples)
    return [train_and_measure(task, encoder, projection, lam, seed, evaluation, epochs, embed_dim=embed_dim,
                              hidden_dim=hidden_dim, lr=lr, device=device)
            for encoder in encoders for projection, lam in projection_grid(sparsegen_lambdas) for seed in seeds]


def lambda_entropy_correlation(rows: list[dict[str, Any]], encoder: str,
                               key: str = "entropy_gradient") -> float:
    """Pearson correlation between sparsegen λ (sparsemax counts as λ = 0) and ``key`` over runs.

    A ``key`` of ``None`` (a NaN as stored in JSON) counts as NaN, and so makes the correlation NaN."""
    chosen = [r for r in rows if r["encoder"] == encoder and r["lambda"] is not None]
    values = [float("nan") if r[key] is None else r[key] for r in chosen]
    return float(pearsonr([r["lambda"] for r in chosen], values).statistic)


SETTINGS = {
    "quick": dict(train=4000, epochs=3, dim=32, eval_examples=80, lambdas=(-2.0, 0.0, 0.8)),
    "medium": dict(train=4000, epochs=3, dim=32, eval_examples=80, lambdas=(-2.0, 0.0, 0.8)),
    "full": dict(train=None, epochs=8, dim=64, eval_examples=500,
                 lambdas=(-4.0, -2.0, -1.0, 0.0, 0.25, 0.5, 0.75, 0.9)),
}
PROFILE_NOTES = {
    "quick": "quick profile: 4,000 training sentences, 3 epochs, 32 dimensions, 3 values of sparsegen λ",
    "medium": "medium profile (shared 2-core CPU): the quick profile's size (4,000 training sentences, "
              "3 epochs, 32 dimensions, sparsegen λ in {-2, 0, 0.8}, 80 test sentences) with several seeds",
    "full": "full profile: 64-dimensional models, 8 epochs, 8 values of sparsegen λ, 500 test sentences",
}


ENCODERS = ("bilstm", "transformer")
TASK = "rotten_tomatoes"
"""The task of :data:`~sparse_tutorial.experiments.classification.TASKS` the experiment trains on."""


def grid(profile: str, seeds: int) -> list[Run]:
    """One run per encoder × projection × seed at ``profile`` (kind ``"system"``); loads the corpus first."""
    settings = SETTINGS[profile]
    cached_task(TASK, settings["train"])   # before training: a missing corpus fails now
    return [Run.of("system", profile=profile, encoder=encoder, projection=projection, lam=lam, seed=seed)
            for encoder in ENCODERS for projection, lam in projection_grid(settings["lambdas"])
            for seed in range(seeds)]


def execute(run: Run) -> dict[str, Any]:
    """Train and measure the model of one run of :func:`grid`.

    Returns:
        ``{"corpus": provenance, "row": train_and_measure's row}``.

    Raises:
        ValueError: ``run`` is not a ``"system"`` run.
    """
    if run.kind != "system":
        raise ValueError(f"run.kind must be 'system', got {run.kind!r}")
    settings = SETTINGS[run["profile"]]
    task = cached_task(TASK, settings["train"])
    row = train_and_measure(task, run["encoder"], run["projection"], run["lam"], run["seed"],
                            head(task.test, settings["eval_examples"]), settings["epochs"],
                            embed_dim=settings["dim"], hidden_dim=settings["dim"], lr=2e-3,
                            device=training_device(run["profile"]))
    return {"corpus": task.provenance, "row": row}


def assemble(profile: str, seeds: int, runs: list[Run], results: list[dict[str, Any]]) -> dict[str, Any]:
    """Chapter 12's results from the runs of :func:`grid`, in its order: ``{"profile_note", "corpus",
    "rows": [train_and_measure's row], "lambda_entropy_correlation": {encoder: Pearson's r}}`` (a NaN
    statistic is ``None``)."""
    rows = [result["row"] for result in results]
    return {"profile_note": PROFILE_NOTES[profile], "corpus": results[0]["corpus"], "rows": rows,
            "lambda_entropy_correlation": {encoder: lambda_entropy_correlation(rows, encoder)
                                           for encoder in ENCODERS}}


def run(profile: str, seeds: int) -> dict[str, Any]:
    """Chapter 12 on the Rotten Tomatoes sentences: every encoder × projection × seed, and Table 2
    (:func:`assemble`'s results), serially."""
    return sweep_experiment("interpretability", profile, seeds)
