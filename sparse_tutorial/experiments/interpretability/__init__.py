"""Experiment ``interpretability``: Meister et al. (2021), explained in chapter 13.

For BiLSTM and Transformer classifiers with softmax, sparsemax and sparsegen-lin attention it measures, on
test sentences:

* ``H̃(g_{h_p}(x))``, the normalised entropy of the influence of the inputs on each intermediate
  representation (their Table 1; averaged over positions ``p`` and examples);
* ``H̃(g_ŷ(x))`` and ``H̃(D_ŷ(x))``, the entropy of gradient and leave-one-out importance of the inputs on
  the prediction (their Fig. 2), next to the entropy and the share of exact zeros of the attention itself;
* Kendall's τ-b between the attention distribution and each importance measure (their Fig. 3), with the
  largest τ-b the attention's ties allow (:func:`tau_b_bound`) and τ over the positions of non-zero weight;

and, across the sparsegen λ grid, Kendall's τ-b between λ and ``H̃(g_ŷ(x))`` (their Table 2). The verdicts on
the paper's claims are :mod:`~sparse_tutorial.experiments.interpretability.claims`'s.

``python -m sparse_tutorial.experiments interpretability --profile full --seeds 3`` writes
``book/results/interpretability.json`` (``--profile medium``: the stored run, sized for a shared 2-core CPU; :data:`SIZES`):
a grid of runs (:func:`grid`, one per trained model), each trained and measured by :func:`execute` and
combined by :func:`assemble` (see :mod:`~sparse_tutorial.runs.runner`).
"""
from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import torch
from scipy.stats import kendalltau
from torch import Tensor

from sparse_tutorial.experiments.classification import Split, Task, cached_task, evaluation_subset, fit
from sparse_tutorial.experiments.interpretability.claims import judge
from sparse_tutorial.runs.runner import sweep_experiment
from sparse_tutorial.runs.sweep import Run
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


def on_device_of(model: torch.nn.Module, split: Split) -> Split:
    """``split`` with its tensors on ``model``'s device (the same tensors when that is the CPU): the analyses
    of chapters 13 and 14 run where the model is, on the GPU after a full-profile training there."""
    device = next(model.parameters()).device
    return Split(*(tensor.to(device) for tensor in split))


def importance_statistics(model: AttentionClassifier, split: Split, intermediate: bool = True) -> dict[str, Any]:
    """Means over the examples of ``split`` of every quantity in the module docstring, and in ``"items"`` the
    value of each example (``None`` where it is undefined: fewer than two positions, or a constant vector),
    which the claims resample (:mod:`~sparse_tutorial.experiments.interpretability.claims`).

    ``intermediate``: measure ``H̃(g_{h_p}(x))`` (on every example of ``split``); it takes one backward pass
    per position, which on documents of hundreds of tokens costs far more than everything else, so a run
    whose model Table 1 does not compare can leave it out (its values are then ``None``).
    ``"test_sentences"`` and ``"intermediate_sentences"`` say how many examples each mean is over. Runs on
    ``model``'s device.
    """
    split = on_device_of(model, split)
    ids, mask, _ = split
    with torch.no_grad():
        weights = model(ids, mask).weights
    grad = gradient_importance(model, ids, mask)
    loo = leave_one_out_importance(model, ids, mask)
    real = mask.sum(-1) > 1
    if intermediate:
        inner = intermediate_importance(model, ids, mask)                                   # (batch, p, i)
        inner_entropy = normalized_entropy(inner, mask.unsqueeze(1).expand_as(inner))      # (batch, p)
        inner_entropy = ((inner_entropy * mask).sum(-1) / mask.sum(-1)).masked_fill(~real, float("nan"))
    else:
        inner_entropy = torch.full(real.shape, float("nan"), device=ids.device)
    items = {"entropy_intermediate": inner_entropy,
             **{key: value.masked_fill(~real, float("nan")) for key, value in {
                 "entropy_gradient": normalized_entropy(grad, mask),
                 "entropy_loo": normalized_entropy(loo, mask),
                 "entropy_attention": normalized_entropy(weights, mask),
                 "tau_gradient": batched_kendall_tau_b(weights, grad, mask),
                 "tau_loo": batched_kendall_tau_b(weights, loo, mask),
                 "tau_b_bound": tau_b_bound(weights, mask),
                 "tau_gradient_support": batched_kendall_tau_b(weights, grad, mask & (weights > 0)),
                 "tau_loo_support": batched_kendall_tau_b(weights, loo, mask & (weights > 0))}.items()}}
    return {
        **{key: _nanmean(value.float().cpu()) for key, value in items.items()},
        "entropy_intermediate_std": inner_entropy[real].std().item() if intermediate else None,
        "attention_zero_share": ((weights == 0) & mask).sum().item() / mask.sum().item(),
        "test_sentences": int(real.sum()),
        "intermediate_sentences": int(real.sum()) if intermediate else 0,
        "items": {key: [None if math.isnan(v) else round(v, 4) for v in value.float().cpu().tolist()]
                  for key, value in items.items()},
    }


def tau_b_bound(weights: Tensor, mask: Tensor) -> Tensor:
    """Per example, the largest Kendall τ-b its attention ``weights`` can reach against an importance vector
    without ties, ``(batch,)``: every pair tied in the weights (the exact zeros of sparse attention above all)
    is neither concordant nor discordant, so τ-b ≤ √(1 − t / n₀) with t tied pairs of the n₀ = n(n − 1)/2
    (about √(1 − f²) for a share f of zeros). NaN for fewer than two positions. A τ-b near this bound says
    more about the ties than about agreement; τ over the positions with non-zero weight does not have them.
    On ``weights``' device."""
    bounds = []
    for row, kept in zip(weights.detach().cpu(), mask.cpu()):
        values = row[kept]
        pairs = len(values) * (len(values) - 1) / 2
        if pairs == 0:
            bounds.append(float("nan"))
            continue
        counts = torch.unique(values, return_counts=True)[1].double()
        bounds.append(math.sqrt(1.0 - float((counts * (counts - 1) / 2).sum()) / pairs))
    return torch.tensor(bounds, device=weights.device)


def _nanmean(values: Tensor) -> float | None:
    """The mean of the defined values, ``None`` when none is."""
    defined = values[~torch.isnan(values)]
    return float(defined.mean()) if len(defined) else None


def train_and_measure(task: Task, encoder: str, projection: str, sparsegen_lambda: float | None, seed: int,
                      evaluation: Split, epochs: int, embed_dim: int = 64, hidden_dim: int = 64,
                      lr: float = 1e-3, device: str | torch.device = "cpu",
                      intermediate: bool = True) -> dict[str, Any]:
    """Train ``encoder`` with attention ``projection`` (with ``sparsegen_lambda`` for sparsegen; see
    :func:`projection_grid`) on ``task`` (Adam, model chosen on dev) and measure it on ``evaluation``, both
    on ``device`` (``intermediate``: see :func:`importance_statistics`).

    Returns:
        ``{"task", "encoder", "projection", "sparsegen_lambda", "seed", "dev_accuracy", "test_accuracy"}``
        and :func:`importance_statistics`.
    """
    config = meister_config(encoder, task.vocab_size, projection=projection, num_classes=task.num_classes,
                            embed_dim=embed_dim, hidden_dim=hidden_dim,
                            **({"lam": sparsegen_lambda} if projection == "sparsegen" else {}))
    result = fit(config, task, epochs=epochs, lr=lr, seed=seed, optimizer="adam", device=device)
    return {"task": task.name, "encoder": encoder, "projection": projection, "sparsegen_lambda": sparsegen_lambda,
            "seed": seed, "dev_accuracy": result.dev_accuracy, "test_accuracy": result.test_accuracy,
            **importance_statistics(result.model.to(device), evaluation, intermediate)}


def sweep(task: Task, encoders: tuple[str, ...], sparsegen_lambdas: tuple[float, ...], seeds: tuple[int, ...],
          epochs: int, eval_examples: int, embed_dim: int = 64, hidden_dim: int = 64,
          lr: float = 1e-3, device: str | torch.device = "cpu") -> list[dict[str, Any]]:
    """:func:`train_and_measure` every encoder × projection × seed on the same ``eval_examples`` test
    sentences (:func:`~sparse_tutorial.experiments.classification.evaluation_subset`)."""
    evaluation, _ = evaluation_subset(task.test, eval_examples, name=f"{task.name} test")
    return [train_and_measure(task, encoder, projection, sparsegen_lambda, seed, evaluation, epochs,
                              embed_dim=embed_dim, hidden_dim=hidden_dim, lr=lr, device=device)
            for encoder in encoders for projection, sparsegen_lambda in projection_grid(sparsegen_lambdas)
            for seed in seeds]


def lambda_entropy_correlation(rows: list[dict[str, Any]], encoder: str,
                               key: str = "entropy_gradient") -> float:
    """Kendall's τ-b (Meister et al.'s correlation, their footnote 2) between sparsegen λ (sparsemax counts
    as λ = 0) and ``key`` over the runs of ``encoder``: their Table 2.

    A ``key`` of ``None`` (a NaN as stored in JSON) counts as NaN, and so makes the correlation NaN."""
    chosen = [r for r in rows if r["encoder"] == encoder and r["sparsegen_lambda"] is not None]
    values = [float("nan") if r[key] is None else r[key] for r in chosen]
    return float(kendalltau([r["sparsegen_lambda"] for r in chosen], values, variant="b").statistic)


PAPER_LAMBDAS = (-4.0, -2.0, -1.0, 0.0, 0.25, 0.5, 0.75, 0.9)
"""Meister et al.'s sparsegen λ grid (λ = 0 is sparsemax)."""
ENCODERS = ("bilstm", "transformer")
RT, NEWS = "rotten_tomatoes", "newsgroups:hockey-vs-baseball"
"""The data sets, by their name in :data:`~sparse_tutorial.experiments.classification.TASKS`: short movie-review
sentences, and 20 Newsgroups posts of up to 400 tokens, where sparse attention has room to leave most
tokens out."""

@dataclass(frozen=True)
class TaskSizes:
    """Data, model and training sizes of one data set at one profile.

    Attributes:
        n_train: training sentences (``None``: all); the model of the epoch best on dev is kept.
        epochs, learning_rate: Adam's training.
        embedding_dim, hidden_dim: the model.
        n_test: test items every model is measured on: a seeded, label-stratified random sample of the test
            split, the same for every model (:func:`~sparse_tutorial.experiments.classification.evaluation_subset`).
        intermediate_projections: the projections whose runs measure ``H̃(g_h)`` (on all ``n_test`` items;
            Table 1 compares softmax with sparsemax, so on long documents the others may leave it out).
        sparsegen_lambdas: the sparsegen λ grid (softmax and sparsemax are always run).
        encoders: the encoders trained, each with every projection.
    """

    n_train: int | None
    epochs: int
    learning_rate: float
    embedding_dim: int
    hidden_dim: int
    n_test: int
    intermediate_projections: tuple[str, ...]
    sparsegen_lambdas: tuple[float, ...]
    encoders: tuple[str, ...]


@dataclass(frozen=True)
class Sizes:
    """The sizes of one profile of :data:`SIZES`: ``tasks`` maps each data set to its :class:`TaskSizes`;
    ``note`` says it in a sentence and is written into the results as ``"profile_note"``."""

    tasks: Mapping[str, TaskSizes]
    note: str


def _sizes(n_train: int | None, epochs: int, dim: int, n_test: int,
           intermediate_projections: tuple[str, ...] = ("softmax", "sparsemax", "sparsegen"),
           sparsegen_lambdas: tuple[float, ...] = PAPER_LAMBDAS, encoders: tuple[str, ...] = ENCODERS) -> TaskSizes:
    """A :class:`TaskSizes` with Meister et al.'s learning rate and ``dim`` for both model sizes."""
    return TaskSizes(n_train=n_train, epochs=epochs, learning_rate=2e-3, embedding_dim=dim, hidden_dim=dim,
                     n_test=n_test, intermediate_projections=intermediate_projections,
                     sparsegen_lambdas=sparsegen_lambdas, encoders=encoders)


SIZES: dict[str, Sizes] = {
    "quick": Sizes(tasks={RT: _sizes(4000, epochs=3, dim=32, n_test=80, sparsegen_lambdas=(-2.0, 0.0, 0.8))},
                   note="quick profile: Rotten Tomatoes, 4,000 training sentences, 3 epochs, 32 dimensions, 3 "
                        "values of sparsegen λ, 80 test sentences"),
    "medium": Sizes(tasks={RT: _sizes(None, epochs=5, dim=32, n_test=500),
                           NEWS: _sizes(None, epochs=3, dim=32, n_test=200,
                                        intermediate_projections=("softmax", "sparsemax"), encoders=("bilstm",))},
                    note="medium profile (shared 2-core CPU): all 8,454 Rotten Tomatoes training sentences, 5 "
                         "epochs (best on dev), 32 dimensions, the paper's 8 values of sparsegen λ, both encoders, "
                         "500 test sentences; and 20 Newsgroups hockey vs baseball (posts of up to 400 tokens): "
                         "BiLSTM, 3 epochs, the same λ, 200 test posts (H̃(g_h) for softmax and sparsemax); "
                         "test items are a label-stratified random sample of each test set"),
    "full": Sizes(tasks={RT: _sizes(None, epochs=8, dim=64, n_test=500),
                         NEWS: _sizes(None, epochs=8, dim=64, n_test=500)},
                  note="full profile: 64-dimensional models, 8 epochs, the paper's 8 values of sparsegen λ, 500 "
                       "test items, Rotten Tomatoes and 20 Newsgroups"),
}
"""The sizes of each profile of :data:`~sparse_tutorial.profiles.PROFILES`."""


from sparse_tutorial.experiments.interpretability import design  # noqa: E402 (its arms are the models above)


def grid(profile: str, seeds: int) -> list[Run]:
    """One run per data set × encoder × projection × seed at ``profile`` (kind ``"system"``); then, when
    these are the pilot of the confirmatory design (:mod:`~sparse_tutorial.experiments.interpretability.design`),
    its fresh seeds' runs. Loads every corpus first."""
    tasks = SIZES[profile].tasks
    for name, sizes in tasks.items():
        cached_task(name, sizes.n_train)   # before training: a missing corpus fails now
    runs = [Run.of("system", profile=profile, task=name, encoder=encoder, projection=projection,
                   sparsegen_lambda=sparsegen_lambda, seed=seed)
            for name, sizes in tasks.items() for encoder in sizes.encoders
            for projection, sparsegen_lambda in projection_grid(sizes.sparsegen_lambdas)
            for seed in range(seeds)]
    return list(dict.fromkeys(runs + design.CONFIRMATORY.runs_extending(profile, seeds)))


def execute(run: Run) -> dict[str, Any]:
    """Train and measure the model of one run of :func:`grid`.

    Returns:
        ``{"corpus": provenance, "evaluation_subset": the test items' record
        (:meth:`~sparse_tutorial.data.sampling.Subset.record`), "row": train_and_measure's row}``.

    Raises:
        ValueError: ``run`` is not a ``"system"`` run.
    """
    if run.kind != "system":
        raise ValueError(f"run.kind must be 'system', got {run.kind!r}")
    sizes = SIZES[run["profile"]].tasks[run["task"]]
    task = cached_task(run["task"], sizes.n_train)
    evaluation, subset = evaluation_subset(task.test, sizes.n_test, name=f"{task.name} test")
    row = train_and_measure(task, run["encoder"], run["projection"], run["sparsegen_lambda"], run["seed"],
                            evaluation, sizes.epochs, embed_dim=sizes.embedding_dim, hidden_dim=sizes.hidden_dim,
                            lr=sizes.learning_rate, device=training_device(run["profile"]),
                            intermediate=run["projection"] in sizes.intermediate_projections)
    return {"corpus": task.provenance, "evaluation_subset": subset.record(), "row": row}


def checks(profile: str, rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The verdicts on Meister et al.'s claims (:func:`~sparse_tutorial.experiments.interpretability.claims.judge`)
    and what they rest on: ``{"seeds": the fewest seeds of any (data set, encoder, λ), "n_test": {data set:
    test items per run}, "lambdas": {data set: sparsegen λ grid}, "claims"}``."""
    per_cell: dict[tuple, int] = {}
    for row in rows:
        cell = (row["task"], row["encoder"], row["sparsegen_lambda"])
        per_cell[cell] = per_cell.get(cell, 0) + 1
    return {"seeds": min(per_cell.values()),
            "n_test": {row["task"]: row["test_sentences"] for row in rows},
            "lambdas": {name: list(sizes.sparsegen_lambdas) for name, sizes in SIZES[profile].tasks.items()},
            "claims": judge(rows)}


def assemble(profile: str, seeds: int, runs: list[Run], results: list[dict[str, Any]]) -> dict[str, Any]:
    """Chapter 13's results from the runs of :func:`grid`, in its order: ``{"profile_note", "corpus": {data
    set: provenance}, "evaluation_subsets": {data set: its test items' record}, "rows": [train_and_measure's
    row, without its per-item values], "checks": :func:`checks`}`` of the seeds ``0 … seeds − 1`` (a NaN is
    ``None``; the per-item values stay in the run records) and, for the design's pilot, ``checks["design"]``:
    what the fresh seeds stored so far say (:meth:`~sparse_tutorial.stats.design.Design.results_section`,
    their claims judged by :func:`~sparse_tutorial.experiments.interpretability.claims.judge`).

    Raises:
        ValueError: the runs of one data set (the fresh seeds' too) were measured on different test items.
    """
    pilot = [result for result in results if result["row"]["seed"] < seeds]
    rows = [result["row"] for result in pilot]
    corpora = {result["row"]["task"]: result["corpus"] for result in pilot}
    subsets: dict[str, dict[str, Any]] = {}
    for result in results:
        task = result["row"]["task"]
        if subsets.setdefault(task, result["evaluation_subset"]) != result["evaluation_subset"]:
            raise ValueError(f"the runs of {task} were measured on different test items "
                             f"({subsets[task]['index_sha256'][:12]} and "
                             f"{result['evaluation_subset']['index_sha256'][:12]}); every model of a comparison "
                             "must be measured on the same ones")
    assembled = {"profile_note": SIZES[profile].note, "corpus": corpora, "evaluation_subsets": subsets,
                 "rows": [{key: value for key, value in row.items() if key != "items"} for row in rows],
                 "checks": checks(profile, rows)}
    if design.CONFIRMATORY.runs_extending(profile, seeds):
        done = dict(zip(runs, results))
        assembled["checks"]["design"] = design.CONFIRMATORY.results_section(
            assembled["checks"]["claims"], done, lambda fresh: judge([done[run]["row"] for run in fresh]),
            design.__file__)
    return assembled


def run(profile: str, seeds: int) -> dict[str, Any]:
    """Chapter 13: every data set × encoder × projection × seed, and the verdicts (:func:`assemble`'s
    results), serially."""
    return sweep_experiment("interpretability", profile, seeds)
