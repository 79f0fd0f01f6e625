"""A confirmatory design as data: the claims its fresh seeds will decide, in which family, powered for what
effect with what standard deviation; the arms those seeds train, in what order and at what cost; the table
of power and minimum detectable effect it prints; and judging a family once its fresh seeds are stored.

Every experiment's design is a module of its own (``experiments/NAME/design.py``: chapter 10's translation,
chapters 11–14's summarization, classification, interpretability and explanation) holding one
:class:`Design`; the tests it uses are :mod:`~sparse_tutorial.stats.confirmatory`.

**Families.** A **primary** family (Bonferroni over its claims, each claim powered at
:data:`~sparse_tutorial.stats.confirmatory.POWER_TARGET` or more), a **secondary** family (its own
Bonferroni, its arms trained after the primary ones, powered or not), and **estimation-only** claims:
effect and interval, no verdict, where judged alone at α even :data:`AFFORDABLE_SEEDS` fresh seeds would not
reach the target power (:func:`seeds_needed`).

**Standard deviation.** Each claim's power is computed with an upper confidence bound of the pilot's
standard deviation of its per-seed paired differences (:func:`sd_upper_bound`, at :data:`SD_CONFIDENCE`),
so that a pilot that happened to be calm does not inflate it: chapter 10 pools one sd over seven arms in
BLEU, chapters 11–14 take each claim's own from its five pilot differences (4 degrees of freedom), as their
claims come in different units.

**Fresh runs.** A design names the runs its fresh seeds train, every seed of the primary family's arms first
(:meth:`Design.fresh_runs`), and about what they cost (:meth:`Design.cpu_hours`). An experiment's grid adds
them after the pilot's own runs when it is the pilot's grid (:meth:`Design.runs_extending`; chapter 10's
``runs_of`` maps its arms to systems itself). The designs were committed before their fresh runs entered
their grids: a grid is run code, and changing it changes the code fingerprint of every stored run
(:mod:`~sparse_tutorial.runs.records`), so each such change is recorded as computing what the old code
computed (:mod:`~sparse_tutorial.runs.equivalence`). A results file shows what the fresh seeds stored so far
say (:meth:`Design.section`): the experiment's claims judged on the pilot's seeds and, apart, on the fresh
seeds (:func:`seed_differences`; :meth:`Design.results_section` for an experiment whose arms are its runs).
"""
from __future__ import annotations

import math
import subprocess
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Container, Mapping, Sequence

import numpy as np
from scipy import stats

from sparse_tutorial.runs.sweep import Run
from sparse_tutorial.stats.confirmatory import (
    POWER_TARGET, Judged, judge, minimum_detectable_effect, power)
from sparse_tutorial.stats.inference import ALPHA, seed_interval
from sparse_tutorial.stats.inference import minimum_detectable_effect as t_minimum_detectable_effect

FAMILIES = ("primary", "secondary")
"""The families a design judges (its third group, ``"estimation"``, is never judged)."""
SD_CONFIDENCE = 0.8
"""The one-sided confidence of the upper bound of the pilot's sd that every power is computed with."""
AFFORDABLE_SEEDS = 30
"""The most fresh seeds per arm a design could ask for (three times its 10; on the 2-core CPU of the stored
runs, days of training): a claim that would need more, judged alone at α, is estimation only."""
WILCOXON_EFFICIENCY = 3 / math.pi
"""The signed-rank test's asymptotic efficiency relative to the paired t when the differences are normal:
it needs about ``1 / 0.955`` times the t's seeds (:func:`seeds_needed`)."""
CLAIM_COLUMN = 55
"""The least width of the claim column of :meth:`Design.describe`."""


def sd_upper_bound(sd: float, df: int, confidence: float = SD_CONFIDENCE) -> float:
    """The one-sided upper ``confidence`` bound of a normal standard deviation estimated as ``sd`` with
    ``df`` degrees of freedom: ``sd · √(df / χ²_{1 − confidence}(df))`` (in ``sd``'s unit)."""
    return sd * math.sqrt(df / stats.chi2.ppf(1 - confidence, df))


def seeds_needed(kind: str, effect: float, sd: float, margin: float | None = None, most: int = 1000,
                 alpha: float = ALPHA) -> int | None:
    """About how many fresh seeds a claim of ``kind`` judged alone at ``alpha`` needs to decide it (✓ or ✗,
    whichever ``effect`` implies) with :data:`~sparse_tutorial.stats.confirmatory.POWER_TARGET` power,
    when its per-seed differences have mean ``effect`` and standard deviation ``sd`` (the claim's unit).

    The paired t's number (noncentral t: :func:`~sparse_tutorial.stats.inference.minimum_detectable_effect`,
    two-sided against 0 for ``greater``/``less``, one-sided against the nearest margin for the margin kinds)
    divided by :data:`WILCOXON_EFFICIENCY`: simulating the exact test (:func:`~sparse_tutorial.stats.confirmatory.power`) at hundreds of seeds
    would take minutes. ``None`` when ``effect`` sits on its null or more than ``most`` seeds are needed."""
    delta = margin or 0.0
    bound = {"greater": 0.0, "less": 0.0, "not_greater": delta, "not_less": -delta,
             "equivalent": math.copysign(delta, effect)}[kind]
    distance = abs(effect - bound)
    if distance == 0 or sd <= 0:
        return None

    def detects(n: int) -> bool:
        mde = t_minimum_detectable_effect({"se": sd / math.sqrt(n), "df": n - 1}, alpha,
                                          two_sided=kind in ("greater", "less"), power=POWER_TARGET)
        return mde is not None and mde <= distance

    t_seeds = int(most * WILCOXON_EFFICIENCY)
    if not detects(t_seeds):
        return None
    low, high = 1, t_seeds   # detects(high) holds; detects(low) cannot (one seed has no spread)
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (low, middle) if detects(middle) else (middle, high)
    return math.ceil(high / WILCOXON_EFFICIENCY)


@dataclass(frozen=True)
class DesignedClaim:
    """One claim of a design: it compares ``a`` with ``b`` (two arms, two token classes of one arm, a trend
    against 0: the per-seed paired difference is ``a − b``, in ``unit``), with the ``kind`` and ``margin`` of
    the chapter's claims module; the pilot's paired differences (one per pilot seed); the effect it is
    powered for and the sd its power is computed with; its family (``"primary"``, ``"secondary"`` or
    ``"estimation"``); and the arms whose runs it is computed from (keys of ``Design.arms``, or in
    chapter 10 its systems)."""

    a: str
    b: str
    kind: str
    family: str
    pilot_differences: tuple[float, ...]
    powered_for: float
    unit: str
    sd: float
    arms: tuple[str, ...]
    margin: float | None = None

    @classmethod
    def from_pilot(cls, a: str, b: str, kind: str, family: str, unit: str, arms: tuple[str, ...],
                   pilot_differences: tuple[float, ...], margin: float | None = None) -> "DesignedClaim":
        """The claim powered for its pilot's mean difference, with the upper bound of its pilot's own sd
        (:func:`sd_upper_bound`, ``n − 1`` degrees of freedom)."""
        d = np.asarray(pilot_differences, dtype=float)
        return cls(a, b, kind, family, tuple(pilot_differences), float(d.mean()), unit,
                   sd_upper_bound(float(d.std(ddof=1)), len(d) - 1), arms, margin)


@dataclass(frozen=True)
class Arm:
    """What one arm trains at each seed: the run's ``kind`` and its fields besides ``profile`` and ``seed``
    (``Run.of(kind, profile=…, seed=…, **config)``, the experiment's own grid's run), and the mean seconds
    of one core that its pilot runs took."""

    kind: str
    config: Mapping[str, Any]
    seconds: float

    def run(self, profile: str, seed: int) -> Run:
        """The run of this arm at ``profile`` with ``seed``."""
        return Run.of(self.kind, profile=profile, seed=seed, **self.config)


@dataclass(frozen=True)
class Design:
    """A confirmatory design: its ``claims`` (``{claim: DesignedClaim}``, in the order it lists them), the
    ``profile`` and ``pilot_seeds`` of its pilot grid, the ``fresh_seeds`` every judged arm trains, the
    estimation-only arms trained at the fresh seeds too (``fresh_estimation_arms``, last), and ``arms``: what
    each arm trains and costs (empty where the experiment maps arm names to runs itself, as chapter 10's
    ``system_run`` does)."""

    claims: Mapping[str, DesignedClaim]
    profile: str
    pilot_seeds: tuple[int, ...]
    fresh_seeds: tuple[int, ...]
    fresh_estimation_arms: tuple[str, ...] = ()
    arms: Mapping[str, Arm] = field(default_factory=dict)

    def family(self, name: str) -> list[str]:
        """The claims of family ``name`` (``"primary"``, ``"secondary"`` or ``"estimation"``), in design order."""
        return [claim for claim, designed in self.claims.items() if designed.family == name]

    def family_arms(self, name: str) -> list[str]:
        """The arms family ``name`` needs, in the order its claims name them."""
        return list(dict.fromkeys(arm for claim in self.family(name) for arm in self.claims[claim].arms))

    def training_groups(self) -> list[list[str]]:
        """The arms trained at the fresh seeds, in groups trained one after the other (every fresh seed of a
        group before the next): the primary family's arms, those only the secondary family needs, then
        ``fresh_estimation_arms`` that neither needs."""
        primary = self.family_arms("primary")
        secondary = [arm for arm in self.family_arms("secondary") if arm not in primary]
        return [primary, secondary, [arm for arm in self.fresh_estimation_arms if arm not in primary + secondary]]

    def fresh_runs(self) -> list[Run]:
        """Every run of the fresh seeds, in training order (:meth:`training_groups`, each group seed by seed)."""
        return [self.arms[arm].run(self.profile, seed) for group in self.training_groups()
                for seed in self.fresh_seeds for arm in group]

    def runs_extending(self, profile: str, seeds: int) -> list[Run]:
        """:meth:`fresh_runs` when ``profile`` with seeds ``0 … seeds − 1`` is the pilot's grid (the grid this
        design extends), else none: a grid of other sizes or seeds has nothing to confirm."""
        return self.fresh_runs() if profile == self.profile and seeds == len(self.pilot_seeds) else []

    def cpu_hours(self) -> float:
        """About how many hours of one core :meth:`fresh_runs` take (each arm's pilot ``Arm.seconds``)."""
        seconds = sum(self.arms[arm].seconds for group in self.training_groups() for arm in group)
        return seconds * len(self.fresh_seeds) / 3600

    def table(self, seeds: int | None = None, sd: float | None = None) -> dict[str, dict[str, Any]]:
        """Per claim: its fields, its family's size, and at ``seeds`` fresh seeds (default: the design's) its
        power and minimum detectable effect under Bonferroni over its family (estimation-only claims: as if
        judged alone at α), and the seeds it would need judged alone (:func:`seeds_needed`). ``sd``
        replaces every claim's own sd (what-if tables)."""
        seeds = seeds if seeds is not None else len(self.fresh_seeds)
        table = {}
        for name, designed in self.claims.items():
            size = len(self.family(designed.family)) if designed.family in FAMILIES else 1
            spread = sd if sd is not None else designed.sd
            table[name] = {"family": designed.family, "a": designed.a, "b": designed.b, "kind": designed.kind,
                           "margin": designed.margin, "unit": designed.unit, "arms": list(designed.arms),
                           "pilot_differences": list(designed.pilot_differences),
                           "powered_for": designed.powered_for, "sd": spread, "family_size": size,
                           "power": power(designed.kind, designed.powered_for, spread, seeds, size, designed.margin),
                           "mde": minimum_detectable_effect(designed.kind, spread, seeds, size, designed.margin),
                           "seeds_needed": seeds_needed(designed.kind, designed.powered_for, spread,
                                                        designed.margin)}
        return table

    def judge_family(self, name: str, differences: Mapping[str, Mapping[int, float]]) -> dict[str, Judged | None]:
        """Judge family ``name`` on the fresh seeds: ``differences[claim][seed]`` is a claim's paired
        difference at a seed (other seeds, the pilot's among them, are ignored). A claim is ``None`` until
        every one of ``fresh_seeds`` is there: the design fixed their number, and no claim is judged on
        fewer."""
        claims = self.family(name)
        judged: dict[str, Judged | None] = {}
        for claim in claims:
            designed, found = self.claims[claim], differences.get(claim, {})
            judged[claim] = (judge(designed.kind, [found[s] for s in self.fresh_seeds], len(claims), designed.margin)
                             if all(s in found for s in self.fresh_seeds) else None)
        return judged

    def section(self, differences: Mapping[str, Mapping[int, float]], stored: Mapping[str, Sequence[int]],
                module_file: str | Path, not_tested: Mapping[str, str] | None = None) -> dict[str, Any]:
        """The design and what its fresh seeds say, as a results file's ``checks["design"]``.

        Args:
            differences: ``{claim: {seed: paired difference}}`` at every seed both sides of a claim have, the
                pilot's and the fresh ones (a family is judged on the fresh seeds only, :meth:`judge_family`).
            stored: ``{arm: seeds}``, the fresh seeds each arm has stored.
            module_file: the design module's file (its adding commit is the design's, :func:`added_in`).
            not_tested: ``{claim: reason}`` for the claims whose precondition failed on the fresh seeds, all of
                them stored (the experiment's own judging found the claim "not tested" there, so it has no
                differences and never gets a verdict).

        Returns:
            ``commit``, ``fresh_seeds``; per family its claims, each with its row of :meth:`table`, the fresh
            seeds its arms have, ``judged`` (the fields of :class:`~sparse_tutorial.stats.confirmatory.Judged`,
            ``None`` until every fresh seed is stored, and for good when the claim was not tested) and
            ``not_tested`` (the reason, or ``None``); ``estimation``: each estimation-only claim's row, the
            seeds it has, their mean difference and its 95 % t-interval over every seed.
        """
        table = self.table()
        families = {}
        for name in FAMILIES:
            families[name] = {claim: {**table[claim],
                                      "fresh_seeds": {arm: sorted(stored.get(arm, ())) for arm in self.claims[claim].arms},
                                      "judged": None if found is None else asdict(found),
                                      "not_tested": (not_tested or {}).get(claim) if found is None else None}
                              for claim, found in self.judge_family(name, differences).items()}
        estimation = {}
        for claim in self.family("estimation"):
            seeds = sorted(differences.get(claim, {}))
            values = [differences[claim][seed] for seed in seeds]
            estimation[claim] = {**table[claim], "seeds": seeds, "mean": float(np.mean(values)) if seeds else None,
                                 "ci95": seed_interval(values) if len(seeds) > 1 else None}
        return {"commit": added_in(module_file), "fresh_seeds": list(self.fresh_seeds), "families": families,
                "estimation": estimation}

    def stored(self, done: Container[Run]) -> dict[str, list[int]]:
        """``{arm: [the fresh seeds whose run of it is in done]}`` over ``arms`` (:meth:`section`'s
        ``stored``)."""
        return {name: [seed for seed in self.fresh_seeds if arm.run(self.profile, seed) in done]
                for name, arm in self.arms.items()}

    def judged_apart(self, stored: Mapping[str, Sequence[int]]) -> tuple[list[int], list[str]]:
        """The fresh seeds a results file judges its claims on, apart from the pilot, and the arms it judges
        them with: the fresh seeds at which every arm of the first training group (the primary family's,
        trained seed by seed before any other, :meth:`training_groups`) is stored, and the arms stored at
        every one of those seeds, in ``arms``' order; no seeds and no arms while fewer than two seeds."""
        first = self.training_groups()[0]
        seeds = [seed for seed in self.fresh_seeds if all(seed in stored.get(arm, ()) for arm in first)]
        if len(seeds) < 2:
            return [], []
        return seeds, [arm for arm in self.arms if all(seed in stored.get(arm, ()) for seed in seeds)]

    def results_section(self, pilot_claims: Mapping[str, Mapping[str, Any]], done: Container[Run],
                        judge_fresh: Callable[[list[Run]], Mapping[str, Mapping[str, Any]]],
                        module_file: str | Path) -> dict[str, Any]:
        """:meth:`section` of an experiment whose grid is this design's pilot and its fresh runs.

        Args:
            pilot_claims: the experiment's claims judged on the pilot's seeds (its results file's
                ``checks["claims"]``, whose ``seed_level`` lists follow ``pilot_seeds``).
            done: the runs stored so far (the pilot's and the fresh ones).
            judge_fresh: the experiment's claims judged, by the same function as ``pilot_claims``, on the given
                runs: those of :meth:`judged_apart`'s arms at its seeds, arm by arm, each seed by seed in
                order (so that every ``seed_level`` list follows those seeds). Not called while
                :meth:`judged_apart` has no seeds.
            module_file: the design module's file.

        The per-seed differences are :func:`seed_differences` of the pilot's claims and of the fresh ones,
        each fresh claim kept only when every arm it is computed from is among the arms judged. Once every
        fresh seed is judged, a claim the fresh judging finds "not tested" is :meth:`section`'s
        ``not_tested``, with its reason.
        """
        stored = self.stored(done)
        seeds, arms = self.judged_apart(stored)
        judged = [(self.pilot_seeds, pilot_claims)]
        not_tested = {}
        if seeds:
            fresh = judge_fresh([self.arms[arm].run(self.profile, seed) for arm in arms for seed in seeds])
            kept = {claim: entry for claim, entry in fresh.items()
                    if claim in self.claims and set(self.claims[claim].arms) <= set(arms)}
            judged.append((seeds, kept))
            if seeds == list(self.fresh_seeds):
                not_tested = {claim: entry["reason"] for claim, entry in kept.items() if entry["verdict"] == "not tested"}
        return self.section(seed_differences(*judged), stored, module_file, not_tested)

    def describe(self, header: str | None = None) -> str:
        """The design as text: ``header`` (default: the pilot's seeds and how each claim's own sd is used),
        then a row per claim (family, kind, the effect it is powered for, power and MDE in its unit, and the
        sd used where claims have their own); then, for a design that names its ``arms``, what each
        estimation-only claim would need and what the fresh seeds train."""
        table = self.table()
        own_sd = len({row["sd"] for row in table.values()}) > 1
        width = max(CLAIM_COLUMN, *map(len, table))
        lines = [header if header is not None else
                 f"pilot seeds {self.pilot_seeds[0]}–{self.pilot_seeds[-1]}; each claim powered with the upper "
                 f"{SD_CONFIDENCE * 100:.0f} % bound of its own pilot sd ({len(self.pilot_seeds) - 1} df); "
                 f"{len(self.fresh_seeds)} fresh seeds per arm ({self.fresh_seeds[0]}–{self.fresh_seeds[-1]}), "
                 f"power target {POWER_TARGET:.0%}"]
        for claim, row in table.items():
            digits = _decimals(row["sd"])
            lines.append(f"{row['family']:10s} {claim:{width}s} {row['kind']:12s} powered for "
                         f"{row['powered_for']:+{digits + 4}.{digits}f} power {row['power']:.2f}  MDE "
                         f"{row['mde']:.{digits}f}" + (f" sd {row['sd']:.{digits}f}" if own_sd else "")
                         + f" {row['unit']}")
        if self.arms:
            lines.append(f"estimation only: the fresh seeds each claim would need for {POWER_TARGET * 100:.0f} % "
                         f"power, judged alone at {ALPHA * 100:.0f} %:")
            for claim, row in table.items():
                if row["family"] == "estimation":
                    needed = f"about {row['seeds_needed']}" if row["seeds_needed"] else "over 1000"
                    lines.append(f"  {needed:>10s}  {claim}")
            lines.append(f"fresh seeds {self.fresh_seeds[0]}–{self.fresh_seeds[-1]} train {len(self.fresh_runs())} "
                         f"runs, about {self.cpu_hours():.1f} hours of one core (each arm's pilot runs' mean time), "
                         "every seed of a group before the next:")
            lines += [f"  {group_name}: {', '.join(group)}" for group_name, group
                      in zip(("primary", "secondary only", "estimation only"), self.training_groups()) if group]
        return "\n".join(lines)


def seed_differences(*judged: tuple[Sequence[int], Mapping[str, Mapping[str, Any]]]) -> dict[str, dict[int, float]]:
    """``{claim: {seed: a − b}}``: the per-seed paired differences of claims judged by the inference standard
    (:func:`~sparse_tutorial.stats.inference.judge_family`'s entries, whose ``seed_level`` lists ``a`` and
    ``b`` per seed), from each ``(seeds, claims)`` of ``judged`` (the pilot's, the fresh seeds', judged apart);
    a claim not tested on some seeds has no differences there."""
    differences: dict[str, dict[int, float]] = {}
    for seeds, claims in judged:
        for claim, entry in claims.items():
            level = entry.get("seed_level")
            if level is None:
                continue
            if not len(level["a"]) == len(level["b"]) == len(seeds):
                raise ValueError(f"claim {claim!r} was judged on {len(level['a'])} seeds, not the {len(seeds)} given")
            differences.setdefault(claim, {}).update(
                {seed: float(a - b) for seed, a, b in zip(seeds, level["a"], level["b"])})
    return differences


def added_in(path: str | Path) -> str | None:
    """The commit that added the file at ``path`` (a design's commit; ``None`` outside a git clone)."""
    path = Path(path)
    try:
        done = subprocess.run(["git", "log", "--diff-filter=A", "--format=%H", "--", path.name],
                              cwd=path.parent, capture_output=True, text=True, check=True)
    except (OSError, subprocess.CalledProcessError):
        return None
    return done.stdout.split()[-1] if done.stdout.split() else None


def _decimals(sd: float) -> int:
    """Decimals that show two significant digits of ``sd``, at least two."""
    return max(2, 1 - math.floor(math.log10(sd)))

