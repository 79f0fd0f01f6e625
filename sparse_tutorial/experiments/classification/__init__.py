"""Experiment ``classification``: Sun & Lu (2020), explained in chapter 12.

Holds what every Part III experiment shares -- the data of
:mod:`~sparse_tutorial.experiments.classification.data` (a :class:`Task` of padded train/dev/test tensors,
the vocabulary and per-token label counts) and the training loop of
:mod:`~sparse_tutorial.experiments.classification.training` (:func:`fit`, keeping the epoch that is best on
dev, and :func:`accuracy`); their names are importable from here too -- plus the pieces of chapter 12:

* :func:`synthetic_task`: a corpus on which Sun & Lu's assumptions hold *exactly* (every token is
  positive, negative or neutral; the data set is balanced and symmetric under flipping the labels);
* :func:`score_summary`: polarity and attention scores by token class (their Figs. 2-4);
* :func:`average_attention_weights`: each token's mean attention weight on the test set (their Fig. 5);
* :func:`lambda_table`: test accuracy of DP/DP-L/DP-A/AD across the scaling factor λ (``scale`` in code and
  results; their Table 2).

``python -m sparse_tutorial.experiments classification --profile full --seeds 3`` writes
``book/results/classification.json`` on the GPU when there is one (``--profile medium``: every scale of
Table 2 on the whole of Rotten Tomatoes, 20News I and 20News II, early stopping on dev, sized for a 2-core
CPU). The experiment is a grid of runs (:func:`grid`: one per trained model, :func:`system_run`), each
trained and evaluated by :func:`execute` and combined by :func:`assemble` (see
:mod:`~sparse_tutorial.runs.runner`), which judges the paper's claims with
:mod:`~sparse_tutorial.experiments.classification.claims`.

Device: :func:`fit` trains on ``device`` (default the CPU, which is what the quick and medium profiles use,
so their numbers do not depend on the hardware) and hands the model back on the CPU, so every analysis
below runs on CPU tensors; the profiles choose it with :func:`~sparse_tutorial.profiles.training_device`.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from sparse_tutorial.experiments.classification import design
from sparse_tutorial.experiments.classification.claims import TABLE_2_SCALES, Correct, Model, judge
from sparse_tutorial.experiments.classification.data import (  # noqa: F401 (part of this module's API)
    TASKS,
    Split,
    Task,
    batches,
    cached_task,
    evaluation_subset,
    load_task,
    synthetic_task,
)
from sparse_tutorial.experiments.classification.training import (  # noqa: F401 (part of this module's API)
    AttentionSource,
    ExtraLoss,
    FitResult,
    accuracy,
    correct_predictions,
    fit,
    training_loss,
    uniform_attention,
)
from sparse_tutorial.runs.runner import sweep_experiment
from sparse_tutorial.runs.sweep import Run
from sparse_tutorial.interpret import NEGATIVE, NEUTRAL, POSITIVE, token_scores
from sparse_tutorial.models.classifier import (
    SUN_LU_VARIANTS,
    AttentionClassifier,
    sun_lu_config,
)
from sparse_tutorial.profiles import training_device

CLASS_NAMES = {POSITIVE: "positive", NEGATIVE: "negative", NEUTRAL: "neutral"}


def score_summary(model: AttentionClassifier, task: Task) -> dict[str, dict[str, Any]]:
    """Polarity and attention scores of the positive / negative / neutral tokens (Sun & Lu Figs. 2-4).

    For multi-class tasks a "polarity token of label c" is summarised by its score for its own label.
    Returns ``{class_name: {"count", "polarity", "attention"}}`` with per-token value lists.
    """
    scores = token_scores(model)
    classes = task.token_classes()
    summary: dict[str, dict[str, Any]] = {}
    if task.num_classes == 2:
        groups = {CLASS_NAMES[c]: classes == c for c in (POSITIVE, NEGATIVE, NEUTRAL)}
        polarity = scores.polarity
    else:
        groups = {name: classes == c for c, name in enumerate(task.label_names)}
        groups["neutral"] = classes == -1
        own = classes.clamp(min=0)
        polarity = scores.polarity.gather(1, own.unsqueeze(-1)).squeeze(-1)
    for name, chosen in groups.items():
        summary[name] = {"count": int(chosen.sum()), "polarity": polarity[chosen].tolist(),
                         "attention": scores.attention[chosen].tolist()}
    return summary


@torch.no_grad()
def average_attention_weights(model: AttentionClassifier, task: Task) -> dict[str, list[float]]:
    """Each classified token's mean attention weight over its test-set occurrences (Sun & Lu Fig. 5)."""
    model.eval()
    ids, mask, _ = task.test
    weights = model(ids, mask).weights
    total = torch.zeros(task.vocab_size).index_add_(0, ids[mask], weights[mask])
    seen = torch.zeros(task.vocab_size).index_add_(0, ids[mask], torch.ones(int(mask.sum())))
    classes = task.token_classes()
    return {CLASS_NAMES[c]: (total / seen.clamp(min=1))[(classes == c) & (seen > 0)].tolist()
            for c in (POSITIVE, NEGATIVE, NEUTRAL)}


def median_gap(summary: dict[str, dict[str, Any]], key: str, polar: str, neutral: str = "neutral") -> float:
    """Median ``key`` score of the ``polar`` tokens minus that of the neutral tokens."""
    return float(np.median(summary[polar][key]) - np.median(summary[neutral][key]))


def fit_sun_lu(task: Task, variant: str, scale: float, seed: int, epochs: int, lr: float = 0.05,
               embed_dim: int = 100, weight_decay: float = 1e-5, vtw_weight: float = 0.0,
               extra_loss: ExtraLoss | None = None, device: str | torch.device = "cpu",
               patience: int | None = None) -> FitResult:
    """Sun & Lu's model ``variant`` with scaling factor λ = ``scale`` trained on ``task`` by :func:`fit`
    (``patience``: early stopping on dev).

    L2 regularisation (``weight_decay``) is applied to DP-L, DP-A and AD as in the paper, never to DP.
    ``extra_loss(model, token_ids, mask, output)`` is a regularizer of the reader's own, added to the loss
    (:func:`training_loss`).
    """
    config = sun_lu_config(variant, task.vocab_size, scale=scale, num_classes=task.num_classes, embed_dim=embed_dim)
    return fit(config, task, epochs=epochs, lr=lr, seed=seed, weight_decay=0.0 if variant == "DP" else weight_decay,
               vtw_weight=vtw_weight, extra_loss=extra_loss, device=device, patience=patience)


def lambda_table(task: Task, variants: tuple[str, ...], scales: tuple[float, ...], seeds: tuple[int, ...],
                 epochs: int, lr: float = 0.05, embed_dim: int = 100, weight_decay: float = 1e-5,
                 device: str | torch.device = "cpu", patience: int | None = None) -> list[dict[str, Any]]:
    """Test accuracy (model chosen on dev) for each variant × scale × seed (Sun & Lu Table 2).

    Each model is :func:`fit_sun_lu`'s (``weight_decay`` on every variant but DP); ``device`` and
    ``patience`` are passed to :func:`fit`. Rows: ``{"task", "variant", "scale", "seed", "dev_accuracy",
    "test_accuracy", "best_epoch"}``.
    """
    rows = []
    for variant in variants:
        for scale in scales:
            for seed in seeds:
                result = fit_sun_lu(task, variant, scale, seed, epochs, lr=lr, embed_dim=embed_dim,
                                    weight_decay=weight_decay, device=device, patience=patience)
                rows.append({"task": task.name, "variant": variant, "scale": scale, "seed": seed,
                             "dev_accuracy": result.dev_accuracy, "test_accuracy": result.test_accuracy,
                             "best_epoch": result.best_epoch})
    return rows


def _rounded(values: list[float]) -> list[float]:
    return [round(value, 4) for value in values]


def _median(values: list[float]) -> float:
    return float(np.median(values)) if len(values) else float("nan")


def token_analysis(model: AttentionClassifier, task: Task) -> dict[str, Any]:
    """Chapter 12's per-token analysis of a trained model, values rounded to 4 digits.

    Returns ``{"classes": {class: {"count", "polarity", "attention"}}}`` (:func:`score_summary`, per-token
    lists; Figs. 2-4) and, on a binary task, ``"average_weights"`` (``{class: list}`` of
    :func:`average_attention_weights`, Fig. 5) and, for a dot-product model, ``"vtw"`` (its ``VᵀW``).
    """
    analysis: dict[str, Any] = {"classes": {
        name: {"count": entry["count"], "polarity": _rounded(entry["polarity"]), "attention": _rounded(entry["attention"])}
        for name, entry in score_summary(model, task).items()}}
    if task.num_classes == 2:
        analysis["average_weights"] = {name: _rounded(weights)
                                       for name, weights in average_attention_weights(model, task).items()}
        if model.config.score == "dot":
            analysis["vtw"] = model.vtw().item()
    return analysis


def analysis_medians(analysis: dict[str, Any]) -> dict[str, Any]:
    """The medians of a :func:`token_analysis` that the results keep: ``{"classes": {class: {"count",
    "polarity_median", "attention_median"}}}`` (NaN for a class without tokens), plus ``"vtw"`` and
    ``"average_weight_medians"`` (``{class: median}``) when the analysis has them."""
    medians: dict[str, Any] = {"classes": {
        name: {"count": entry["count"], "polarity_median": _median(entry["polarity"]),
               "attention_median": _median(entry["attention"])} for name, entry in analysis["classes"].items()}}
    if "vtw" in analysis:
        medians["vtw"] = analysis["vtw"]
    if "average_weights" in analysis:
        medians["average_weight_medians"] = {name: _median(weights)
                                             for name, weights in analysis["average_weights"].items()}
    return medians


@dataclass(frozen=True)
class Sizes:
    """Data and training sizes of one profile of :data:`SIZES`.

    Attributes:
        tasks: the tasks of :data:`TASKS` that are trained.
        n_train: training examples per task (``None``: all of them).
        epochs, patience: the most epochs, and early stopping on dev accuracy (``None``: off).
        scales: the scaling factors λ of the table (Sun & Lu's λ, ``scale`` in code and results).
        weight_decay: the L2 weight of DP-L, DP-A and AD.
        max_seeds: the tasks trained with fewer seeds than asked for (``{task: at most}``).
        note: the profile in a sentence, written into the results as ``"profile_note"``.
    """

    tasks: tuple[str, ...]
    n_train: int | None
    epochs: int
    patience: int | None
    scales: tuple[float, ...]
    weight_decay: float
    max_seeds: Mapping[str, int]
    note: str


SIZES: dict[str, Sizes] = {
    "quick": Sizes(tasks=("rotten_tomatoes",), n_train=2500, epochs=2, patience=None, scales=(0.001, 10, 10000),
                   weight_decay=0.0, max_seeds={},
                   note="quick profile: 2,500 training sentences, 2 epochs, 3 scales λ, no L2 regularisation"),
    "medium": Sizes(tasks=tuple(TASKS), n_train=None, epochs=6, patience=2, scales=TABLE_2_SCALES, weight_decay=1e-5,
                    max_seeds={},
                    note="medium profile (shared 2-core CPU): the whole training sets of Rotten Tomatoes, 20News I "
                         "and 20News II, every seed; all 7 scales λ of Table 2, up to 6 epochs with early stopping "
                         "on dev (patience 2), L2 (1e-5) on DP-L, DP-A and AD as in the paper"),
    "full": Sizes(tasks=tuple(TASKS), n_train=None, epochs=10, patience=None, scales=TABLE_2_SCALES,
                  weight_decay=1e-5, max_seeds={},
                  note="full profile: Rotten Tomatoes, 20News I and 20News II; all λ, 10 epochs, L2 on "
                       "DP-L/DP-A/AD"),
}
"""The sizes of each profile of :data:`~sparse_tutorial.profiles.PROFILES`."""
ANALYSED_MODELS: tuple[Model, ...] = (("DP", 10.0, 0.0), ("DP", 100.0, 0.0), ("DP", 10.0, 1.0), ("AD", 10.0, 0.0))
"""``(variant, scale, vtw_weight)`` of the models whose tokens chapter 11 analyses (:func:`token_analysis`):
DP at λ = 10 (Figs. 2, 3c, 5) and 100 (Fig. 3b), DP with Sun & Lu's ``VᵀW`` regularizer (binary tasks
only) and AD (Fig. 4). Every other model of the grid is one of the λ table's."""

Plan = list[tuple[dict[str, Any], Run]]
"""Entries of the results, in their order: the labels of each and the run that fills it in."""


def analysed_models(num_classes: int) -> list[Model]:
    """The :data:`ANALYSED_MODELS` of a task with ``num_classes`` labels (``VᵀW`` exists on binary tasks only)."""
    return [model for model in ANALYSED_MODELS if num_classes == 2 or model[2] == 0.0]


def task_seeds(profile: str, task: str, seeds: int) -> int:
    """How many of the ``seeds`` asked for ``task`` trains at ``profile`` (its ``max_seeds`` cap)."""
    return min(seeds, SIZES[profile].max_seeds.get(task, seeds))


def system_run(profile: str, task: str, variant: str, scale: float, seed: int, vtw_weight: float = 0.0) -> Run:
    """The run that trains ``variant`` with scaling factor λ = ``scale`` on task ``task`` of :data:`TASKS` at
    ``profile``'s size."""
    return Run.of("system", profile=profile, task=task, variant=variant, scale=float(scale), seed=seed,
                  vtw_weight=float(vtw_weight))


def _table_plan(profile: str, seeds: int, task: str) -> Plan:
    """The rows of the λ table of ``task``: every variant × scale × seed."""
    return [({"variant": variant, "scale": scale, "seed": seed}, system_run(profile, task, variant, scale, seed))
            for variant in SUN_LU_VARIANTS for scale in SIZES[profile].scales
            for seed in range(task_seeds(profile, task, seeds))]


def _scores_plan(profile: str, seeds: int, task: str, num_classes: int) -> Plan:
    """The entries of the token analysis of ``task``: every seed × :func:`analysed_models`."""
    return [({"variant": variant, "scale": scale, "vtw_weight": vtw_weight, "seed": seed},
             system_run(profile, task, variant, scale, seed, vtw_weight))
            for seed in range(task_seeds(profile, task, seeds)) for variant, scale, vtw_weight in analysed_models(num_classes)]


def grid(profile: str, seeds: int) -> list[Run]:
    """Every training of chapter 12 at ``profile``: the λ table's, then the token analysis's that the table
    does not already train (e.g. DP and AD at scale 10 are the table's); then, when these are the pilot of
    the confirmatory design (:mod:`~sparse_tutorial.experiments.classification.design`), its fresh seeds'
    runs. Loads every corpus first."""
    sizes = SIZES[profile]
    tasks = {name: cached_task(name, sizes.n_train) for name in sizes.tasks}   # all before training
    runs = [run for name, task in tasks.items()
            for _, run in _table_plan(profile, seeds, name) + _scores_plan(profile, seeds, name, task.num_classes)]
    return list(dict.fromkeys(runs + design.CONFIRMATORY.runs_extending(profile, seeds)))


def execute(run: Run) -> dict[str, Any]:
    """Train the model of a :func:`system_run` and evaluate it.

    Returns:
        ``{"task", "corpus", "num_classes", "dev_accuracy", "test_accuracy", "best_epoch", "correct"}`` (the
        task's name and provenance; ``correct``: 0/1 per test document) and, for an analysed model
        (:func:`analysed_models`), ``"analysis"``: :func:`token_analysis`.

    Raises:
        ValueError: ``run`` is not a ``"system"`` run.
    """
    if run.kind != "system":
        raise ValueError(f"run.kind must be 'system', got {run.kind!r}")
    sizes = SIZES[run["profile"]]
    task = cached_task(run["task"], sizes.n_train)
    result = fit_sun_lu(task, run["variant"], run["scale"], run["seed"], sizes.epochs,
                        weight_decay=sizes.weight_decay, vtw_weight=run["vtw_weight"],
                        device=training_device(run["profile"]), patience=sizes.patience)
    out = {"task": task.name, "corpus": task.provenance, "num_classes": task.num_classes,
           "dev_accuracy": result.dev_accuracy, "test_accuracy": result.test_accuracy, "best_epoch": result.best_epoch,
           "correct": correct_predictions(result.model, task.test).int().tolist()}
    if (run["variant"], run["scale"], run["vtw_weight"]) in analysed_models(task.num_classes):
        out["analysis"] = token_analysis(result.model, task)
    return out


def _per_model(plan: Plan, done: dict[Run, dict[str, Any]], key: str) -> dict[Model, list[Any]]:
    """``{(variant, scale, vtw_weight): [result[key] of seed 0, 1, ...]}`` over the runs of ``plan``."""
    grouped: dict[Model, list[Any]] = {}
    for run in dict.fromkeys(run for _, run in plan):
        grouped.setdefault((run["variant"], run["scale"], run["vtw_weight"]), []).append(done[run][key])
    return grouped


def _judged_runs(runs: list[Run], done: dict[Run, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The claims of :func:`judge` on the results of ``runs`` (each model's runs seed by seed, in order): what
    :meth:`~sparse_tutorial.stats.design.Design.results_section` judges on the fresh seeds."""
    tasks: dict[str, tuple[int, Correct, dict[Model, list[Any]]]] = {}
    for run in runs:
        result, model = done[run], (run["variant"], run["scale"], run["vtw_weight"])
        _, correct, analyses = tasks.setdefault(run["task"], (result["num_classes"], {}, {}))
        correct.setdefault(model, []).append(result["correct"])
        if "analysis" in result:
            analyses.setdefault(model, []).append(result["analysis"])
    return judge([(name, *parts) for name, parts in tasks.items()])


def assemble(profile: str, seeds: int, runs: list[Run], results: list[dict[str, Any]]) -> dict[str, Any]:
    """Chapter 12's results from the runs of :func:`grid`, task by task.

    Returns:
        ``{"profile_note", "corpus": {task: provenance}, "seeds_per_task": {task: seeds}, "lambda_table":
        [{"task", "variant", "scale", "seed", "dev_accuracy", "test_accuracy", "best_epoch"}], "scores":
        [{"task", "variant", "scale", "vtw_weight", "seed", "test_accuracy", "classes"[, "vtw",
        "average_weight_medians"]}] (:func:`analysis_medians`), "checks": {"seeds" (the fewest of any task),
        "n_test": {task: test documents}, "datasets": [task], "claims":
        :func:`~sparse_tutorial.experiments.classification.claims.judge`'s, every task's claims in one family}}``.
    """
    done = dict(zip(runs, results))
    table, scores, corpora, seeds_per_task, n_test, judged_tasks = [], [], {}, {}, {}, []
    for name in SIZES[profile].tasks:
        table_plan = _table_plan(profile, seeds, name)
        first = done[table_plan[0][1]]          # any run of the task says its name, provenance and classes
        scores_plan = _scores_plan(profile, seeds, name, first["num_classes"])
        corpora[first["task"]] = first["corpus"]
        seeds_per_task[first["task"]] = task_seeds(profile, name, seeds)
        n_test[first["task"]] = len(first["correct"])
        table += [{"task": done[run]["task"], **labels,
                   **{key: done[run][key] for key in ("dev_accuracy", "test_accuracy", "best_epoch")}}
                  for labels, run in table_plan]
        scores += [{"task": done[run]["task"], **labels, "test_accuracy": done[run]["test_accuracy"],
                    **analysis_medians(done[run]["analysis"])} for labels, run in scores_plan]
        judged_tasks.append((name, first["num_classes"], _per_model(table_plan + scores_plan, done, "correct"),
                             _per_model(scores_plan, done, "analysis")))
    checks = {"seeds": min(seeds_per_task.values()), "n_test": n_test, "datasets": list(corpora),
              "claims": judge(judged_tasks)}
    if design.CONFIRMATORY.runs_extending(profile, seeds):
        checks["design"] = design.CONFIRMATORY.results_section(
            checks["claims"], done, lambda fresh: _judged_runs(fresh, done), design.__file__)
    return {"profile_note": SIZES[profile].note, "corpus": corpora, "seeds_per_task": seeds_per_task,
            "lambda_table": table, "scores": scores, "checks": checks}


def run(profile: str, seeds: int) -> dict[str, Any]:
    """Chapter 12: the λ table, the token analysis and the verdicts (:func:`assemble`'s results), serially."""
    return sweep_experiment("classification", profile, seeds)
