"""The confirmatory design of chapter 13's interpretability claims, fixed before its fresh seeds were trained.

The stored 5-seed grid of the ``medium`` profile (``book/results/interpretability.json``: BiLSTM and
Transformer on Rotten Tomatoes, BiLSTM on 20 Newsgroups hockey vs baseball, each with softmax, sparsemax and
seven more sparsegen λ, seeds 0–4) is the **pilot**. From it alone, before any fresh seed, this module fixes
which of chapter 13's claims (:mod:`~sparse_tutorial.experiments.interpretability.claims`, keyed as there)
are **primary**, **secondary** or **estimation only**, the seeds and the test: the exact Wilcoxon signed-rank
test of each claim's per-seed values over the fresh seeds (Table 1: sparsemax's H̃(g_h) minus softmax's; a
trend: the seed's Kendall τ-b of λ with the measure, against 0), Bonferroni per family, and its
Hodges–Lehmann interval (:mod:`~sparse_tutorial.stats.confirmatory`; the families, power and plan:
:mod:`~sparse_tutorial.stats.design`).

**Seeds.** Fresh seeds :data:`FRESH_SEEDS` (5 … 14, never run before this design), 10 per arm; no seeds are
added after looking. Verdicts use the fresh seeds only; the pilot's seeds are shown beside them, labelled as
the pilot.

**Power.** Each claim is powered for its pilot's mean with the upper 80 % bound of its own pilot sd (five
values, 4 df): Table 1 is in normalized entropy, the trends in Kendall τ-b.

**Primary** (Bonferroni over five), per table of Meister et al. on Rotten Tomatoes, their SST: Table 1 for
the BiLSTM and the Transformer (−0.003 and +0.039 against a margin of −0.1, sd 0.013 and 0.031: powers 1.00),
Table 2 for both (τ-b −0.80 and −0.69, sd 0.21 and 0.45: powers 1.00 and 0.88), and Fig. 3's gradient
agreement for the BiLSTM (τ-b +0.71, sd 0.30, against the paper: power 1.00). A sixth claim, whichever,
would lower Table 2's Transformer power to 0.797, under the target. The all-positions claim is "not tested"
when τ-b sits within 0.05 of its tie bound (chapter 13); if that happens on the fresh seeds it gets no
verdict, and its twin over the positions attention keeps, in the secondary family, has no such ties.

**Secondary** (its own Bonferroni over six): the other claims no more than 30 fresh seeds would decide alone
(:data:`~sparse_tutorial.stats.design.AFFORDABLE_SEEDS`): 20 Newsgroups' Table 1 (+0.024, sd 0.086: power
0.88) and Table 2 (τ-b −0.51, sd 0.55: 0.31), the BiLSTM's Fig. 3 gradient agreement over the positions
attention keeps (+0.83, sd 0.10: 1.00) and its leave-one-out agreement (+0.20, sd 0.31: 0.12), and
20 Newsgroups' leave-one-out agreement over all positions (−0.67, sd 0.20: 1.00) and over the kept ones
(+0.51, sd 0.36: 0.71).

**Estimation only** (effect and interval over every seed, no verdict): the Fig. 3 claims the pilot puts near
0 against their spread, each needing more fresh seeds alone than 30: the BiLSTM's leave-one-out agreement
over kept positions (τ-b +0.20, sd 0.68: about 98), the Transformer's four (gradient +0.16 and +0.14 over
kept positions, leave-one-out +0.36 and +0.07: about 50, 320, 36 and 850), and 20 Newsgroups' gradient
agreement over kept positions (+0.09, sd 0.87: about 857). Their arms train anyway, so they are estimated
over 15 seeds. Left out: 20 Newsgroups' gradient agreement over all positions, "not tested" in the pilot
(τ-b at its tie bound), so it has no pilot value to power it with.

**Runs.** The fresh seeds train every model of the grid (:data:`ARMS`): the 18 of Rotten Tomatoes, every
seed of them first (about 1.3 hours of one core by the pilot's mean seconds), then the 9 of 20 Newsgroups
(about 7.0 hours: softmax and sparsemax measure H̃(g_h) on posts of up to 400 tokens): 270 runs, about 8.3
hours. The grid of the pilot (``--profile medium --seeds 5``) trains them after its own
(:meth:`~sparse_tutorial.stats.design.Design.runs_extending`).

``python -m sparse_tutorial.stats.confirmatory interpretability`` prints the design (:func:`describe`).
"""
from __future__ import annotations

from sparse_tutorial.experiments.interpretability import NEWS, RT, SIZES, projection_grid
from sparse_tutorial.experiments.interpretability.claims import ENCODER_NAMES, ENTROPY_MARGIN
from sparse_tutorial.stats.design import Arm, Design, DesignedClaim

PROFILE = "medium"
"""The profile whose grid the design extends."""
PILOT_SEEDS = tuple(range(5))
FRESH_SEEDS = tuple(range(5, 15))
"""The confirmatory seeds, 10 per arm."""
SHORT = {RT: "RT", NEWS: "20News"}
"""The data sets' short names in the arms' names."""


def _name(task: str, encoder: str, projection: str, sparsegen_lambda: float | None = None) -> str:
    """An arm's name, like ``"RT BiLSTM sparsegen λ=-4"``."""
    what = f"sparsegen λ={sparsegen_lambda:g}" if projection == "sparsegen" else projection
    return f"{SHORT[task]} {ENCODER_NAMES[encoder]} {what}"


def _arm(task: str, encoder: str, projection: str, sparsegen_lambda: float | None,
         seconds: float) -> tuple[str, Arm]:
    """One model of the grid, named by :func:`_name`, with the mean seconds of one core its five pilot runs took."""
    return _name(task, encoder, projection, sparsegen_lambda), Arm(
        "system", {"task": task, "encoder": encoder, "projection": projection, "sparsegen_lambda": sparsegen_lambda},
        seconds)


PILOT_SECONDS = {(RT, "bilstm"): (27, 17, 19, 21, 23, 26, 30, 27, 18),
                 (RT, "transformer"): (23, 30, 21, 33, 34, 23, 23, 35, 38),
                 (NEWS, "bilstm"): (938, 838, 143, 129, 124, 113, 113, 67, 62)}
"""Per data set and encoder, the mean seconds of one core the five pilot runs of each projection took, in the
order of :func:`~sparse_tutorial.experiments.interpretability.projection_grid`."""
ARMS: dict[str, Arm] = dict(
    _arm(task, encoder, projection, sparsegen_lambda, seconds) for (task, encoder), times in PILOT_SECONDS.items()
    for (projection, sparsegen_lambda), seconds
    in zip(projection_grid(SIZES[PROFILE].tasks[task].sparsegen_lambdas), times))
"""Every model of the ``medium`` grid (``Run.of("system", profile=…, task=…, encoder=…, projection=…,
sparsegen_lambda=…, seed=…)``), in its order. On 20 Newsgroups softmax and sparsemax take 15 minutes a seed:
they measure H̃(g_h) through every layer of posts of up to 400 tokens."""


def _where(task: str, encoder: str) -> str:
    """How a claim's name says the encoder and data set (as chapter 13's claims module does)."""
    return f"{ENCODER_NAMES[encoder]}, {task}"


def _sweep(task: str, encoder: str) -> tuple[str, ...]:
    """The arms of a trend claim: sparsemax (λ = 0) and every sparsegen λ of ``task`` and ``encoder``."""
    return tuple(name for name, arm in ARMS.items() if arm.config["task"] == task
                 and arm.config["encoder"] == encoder and arm.config["projection"] != "softmax")


def _table_1(task: str, encoder: str, family: str, differences: tuple[float, ...]) -> tuple[str, DesignedClaim]:
    """Table 1: sparsemax's H̃(g_h) minus softmax's, per seed."""
    return (f"Table 1, {_where(task, encoder)}: sparsemax spreads the inputs' influence on h_p as much as softmax",
            DesignedClaim.from_pilot("sparsemax", "softmax", "not_less", family, "normalized entropy",
                                     (_name(task, encoder, "sparsemax"), _name(task, encoder, "softmax")),
                                     differences, ENTROPY_MARGIN))


def _table_2(task: str, encoder: str, family: str, differences: tuple[float, ...]) -> tuple[str, DesignedClaim]:
    """Table 2: each seed's Kendall τ-b of λ with H̃(g_ŷ), against 0."""
    return (f"Table 2, {_where(task, encoder)}: λ correlates negatively with the entropy of gradient importance",
            DesignedClaim.from_pilot("τ-b of λ with entropy_gradient", "0", "less", family, "Kendall τ-b",
                                     _sweep(task, encoder), differences))


def _fig_3(task: str, encoder: str, measure: str, support: bool, family: str,
           differences: tuple[float, ...]) -> tuple[str, DesignedClaim]:
    """Fig. 3: each seed's Kendall τ-b of λ with the agreement of attention and ``measure`` importance
    (over every position, or over the positions attention keeps: ``support``), against 0."""
    key = {"gradient": "tau_gradient", "leave-one-out": "tau_loo"}[measure] + ("_support" if support else "")
    return (f"Fig. 3, {_where(task, encoder)}: attention agrees less with {measure} importance as λ grows"
            + (" (τ over the positions attention keeps)" if support else ""),
            DesignedClaim.from_pilot(f"τ-b of λ with {key}", "0", "less", family, "Kendall τ-b",
                                     _sweep(task, encoder), differences))


DESIGN: dict[str, DesignedClaim] = dict([
    _table_1(RT, "bilstm", "primary", (-0.014111, 0.0071638, 0.0027364, -0.0010254, -0.007837)),
    _table_1(RT, "transformer", "primary", (0.032319, 0.012442, 0.040603, 0.066888, 0.043988)),
    _table_2(RT, "bilstm", "primary", (-0.78571, -0.85714, -0.92857, -0.57143, -0.85714)),
    _table_2(RT, "transformer", "primary", (-0.57143, -0.92857, -0.64286, -0.28571, -1.0)),
    _fig_3(RT, "bilstm", "gradient", False, "primary", (0.71429, 0.64286, 0.85714, 0.42857, 0.92857)),
    _table_1(NEWS, "bilstm", "secondary", (0.045092, -0.021285, 0.099386, -0.037668, 0.032598)),
    _table_2(NEWS, "bilstm", "secondary", (-0.71429, -0.57143, 0.071429, -0.85714, -0.5)),
    _fig_3(RT, "bilstm", "gradient", True, "secondary", (0.85714, 0.85714, 0.85714, 0.71429, 0.85714)),
    _fig_3(RT, "bilstm", "leave-one-out", False, "secondary", (0.35714, 0.21429, -0.14286, 0.28571, 0.28571)),
    _fig_3(NEWS, "bilstm", "leave-one-out", False, "secondary", (-0.5, -0.78571, -0.71429, -0.78571, -0.57143)),
    _fig_3(NEWS, "bilstm", "leave-one-out", True, "secondary", (0.5, 0.78571, 0.28571, 0.28571, 0.71429)),
    _fig_3(RT, "bilstm", "leave-one-out", True, "estimation", (0.35714, 0.5, -0.57143, 0.35714, 0.35714)),
    _fig_3(RT, "transformer", "gradient", False, "estimation", (0.28571, 0.42857, 0.14286, -0.21429, 0.14286)),
    _fig_3(RT, "transformer", "gradient", True, "estimation", (0.78571, 0.57143, 0.21429, -0.57143, -0.28571)),
    _fig_3(RT, "transformer", "leave-one-out", False, "estimation", (0.57143, 0.42857, -0.28571, 0.14286, 0.92857)),
    _fig_3(RT, "transformer", "leave-one-out", True, "estimation", (0.5, 0.42857, -0.5, 0.28571, -0.35714)),
    _fig_3(NEWS, "bilstm", "gradient", True, "estimation", (0.64286, -0.57143, -0.42857, 0.21429, 0.57143)),
])
"""The design: ``{claim: DesignedClaim}`` (keys as in ``interpretability.json``), each powered for its pilot's
mean difference with the upper 80 % bound of its pilot's sd."""

CONFIRMATORY = Design(DESIGN, PROFILE, PILOT_SEEDS, FRESH_SEEDS, arms=ARMS)
"""The design as one :class:`~sparse_tutorial.stats.design.Design`."""
describe = CONFIRMATORY.describe
