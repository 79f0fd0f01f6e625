"""Run a named experiment and write ``book/results/NAME.json`` (the chapters read these files).

An *experiment* is a module ``sparse_tutorial.experiments.NAME`` that describes its independent training
runs and how their results combine::

    def grid(profile: str, seeds: int) -> list[Run]: ...          # every (system, seed, λ ...) to train
    def execute(run: Run) -> dict: ...                             # one of them, from its config alone
    def assemble(profile: str, seeds: int, runs: list[Run], results: list[dict]) -> dict: ...

(:mod:`~sparse_tutorial.runs.sweep` executes the grid: serially, on local Ray workers or on a
cluster, storing each run as it finishes). ``assemble`` returns every number the chapter reads
(JSON-serialisable; include a ``"corpus"`` entry with the data's provenance). A module without ``grid``
may define ``run(profile, seeds) -> dict`` instead. Adding a module is all it takes to register one (an
experiment with parts is a package: ``nmt/__init__.py`` the grid, beside it ``nmt/data.py``, ``nmt/claims.py``, ...):
:func:`available` lists them, and ``python -m sparse_tutorial.experiments NAME --profile PROFILE
[--seeds N] [--workers N | --address auto]`` runs one. Every experiment honours the one profile ladder
:data:`sparse_tutorial.profiles.PROFILES` (``quick`` / ``medium`` / ``full``); a module-level ``PROFILES``
tuple may narrow it.

:func:`run_experiment` checks its arguments and the results folder first, wraps the module's results with
what makes them reproducible -- profile, seeds, library versions, hardware, device, wall time, the command
and the git commit -- and :func:`write_results` stores them as strict JSON, replacing the previous file all
at once; :func:`load_results` is what a chapter calls.
"""
from __future__ import annotations

import importlib
import json
import os
import pkgutil
import platform
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import torch

from sparse_tutorial.atomic import atomic_write_text, writable_directory
from sparse_tutorial.runs.records import Status, code_fingerprint, equivalent_codes, read_record, sizes_digest
from sparse_tutorial.runs.sweep import (
    RAY_HINT, check_sweep_arguments, ray_available, run_sweep, stored_results, strict_json,
)
from sparse_tutorial.hardware import cpu_backend
from sparse_tutorial.profiles import PROFILES, default_device

_LIBRARIES = ("torch", "numpy", "sacrebleu", "rouge-score", "entmax", "scipy", "pandas")


def available() -> list[str]:
    """Names of the experiments in ``sparse_tutorial.experiments``: the modules (or packages) that define
    ``grid`` and ``execute`` and ``assemble``, or ``run`` (the library's own modules -- the runner, the sweep,
    the records, the verdicts -- are not experiments, nor are the parts inside an experiment's package)."""
    package = Path(__file__).resolve().parents[1] / "experiments"
    names = sorted(m.name for m in pkgutil.iter_modules([str(package)]) if not m.name.startswith("_"))
    found = []
    for name in names:
        module = importlib.import_module(f"sparse_tutorial.experiments.{name}")
        if all(hasattr(module, f) for f in ("grid", "execute", "assemble")) or hasattr(module, "run"):
            found.append(name)
    return found


STORED_RESULTS = Path(__file__).resolve().parents[1] / "stored_results"
"""The book's stored results as a pip install ships them: the wheel copies ``book/results/*.json`` here
(``pyproject.toml``); in a clone this folder does not exist and :func:`results_dir` has the same files."""


def results_dir() -> Path:
    """Where an experiment writes by default, and where :func:`load_results` looks first:
    ``$SPARSE_TUTORIAL_RESULTS`` if set, else ``book/results`` of the repository holding this package
    (an editable install or a clone), else ``book/results`` under the working directory (a pip install,
    e.g. on Colab)."""
    if os.environ.get("SPARSE_TUTORIAL_RESULTS"):
        return Path(os.environ["SPARSE_TUTORIAL_RESULTS"])
    repo = Path(__file__).resolve().parents[2]
    if (repo / "book").is_dir():
        return repo / "book" / "results"
    return Path.cwd() / "book" / "results"


def environment(device: torch.device | None = None) -> dict[str, Any]:
    """Library versions, hardware and device of this process; ``cpu`` is :func:`~sparse_tutorial.hardware.cpu_backend`
    (the CPU model, its vector instructions and the kernels PyTorch picked), which trained numbers depend on."""
    device = device or default_device()
    versions = {}
    for name in _LIBRARIES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    env = {"python": platform.python_version(), "libraries": versions, "platform": platform.platform(),
           "processor": platform.processor() or platform.machine(), "cpu_count": os.cpu_count(),
           "torch_threads": torch.get_num_threads(), "device": str(device), "cpu": cpu_backend()}
    if device.type == "cuda":
        env["gpu"] = torch.cuda.get_device_name(device)
    return env


def _git_dirty() -> bool | None:
    """Whether the clone's tracked files other than the stored results (``book/results``) differ from
    :func:`_git_commit` (``None`` outside a clone): then the commit alone does not reproduce the run."""
    try:
        out = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no", "--", ":/",
                              ":(top,exclude)book/results"], cwd=Path(__file__).parent,
                             capture_output=True, text=True, timeout=10, check=True)
    except (OSError, subprocess.SubprocessError):
        return None
    return bool(out.stdout.strip())


def _git_commit() -> str | None:
    """The commit of the code that runs: ``git rev-parse HEAD`` in a clone, else the commit pip recorded
    when it installed the package from a repository (``direct_url.json``), else ``None``."""
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=Path(__file__).parent, capture_output=True,
                             text=True, timeout=10, check=True)
        return out.stdout.strip()
    except (OSError, subprocess.SubprocessError):
        pass
    try:
        direct_url = json.loads(metadata.distribution("sparse_tutorial").read_text("direct_url.json") or "{}")
    except (metadata.PackageNotFoundError, json.JSONDecodeError):
        return None
    return direct_url.get("vcs_info", {}).get("commit_id")


def rounded(value: Any, digits: int = 4) -> Any:
    """``value`` with every float rounded to ``digits`` significant digits, in nested dicts, lists and tuples."""
    if isinstance(value, float):
        return float(f"{value:.{digits}g}")
    if isinstance(value, dict):
        return {key: rounded(item, digits) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [rounded(item, digits) for item in value]
    return value


def mean_std(values: Sequence[float]) -> dict[str, float]:
    """``{"mean", "std"}`` of ``values`` over seeds (sample standard deviation; 0 for a single value)."""
    array = np.asarray(values, dtype=float)
    return {"mean": float(array.mean()), "std": float(array.std(ddof=1)) if len(array) > 1 else 0.0}


def write_results(name: str, payload: dict[str, Any], directory: Path | None = None) -> Path:
    """Write ``payload`` to ``DIRECTORY/NAME.json`` (default :func:`results_dir`) and return the path.

    The file is strict JSON: a NaN or infinite number is written as ``null`` (see :func:`~sparse_tutorial.runs.sweep.strict_json`). It is
    replaced all at once (:func:`~sparse_tutorial.atomic.atomic_write_text`), so a full disk or a second
    writer never leaves a broken file: the previous results stay until the new ones are complete.
    """
    directory = writable_directory(directory if directory is not None else results_dir(), "the results folder")
    text = json.dumps(strict_json(payload), indent=1, sort_keys=False, allow_nan=False) + "\n"
    return atomic_write_text(directory / f"{name}.json", text)


class ResultsFileError(ValueError):
    """A results file exists but cannot be used; the message names the file and what is wrong with it."""


def load_results(name: str, directory: Path | None = None) -> dict[str, Any] | None:
    """The results of experiment ``name``: ``DIRECTORY/NAME.json`` when ``directory`` is given; else your own
    run in :func:`results_dir` if there is one, else the book's run shipped with the package
    (:data:`STORED_RESULTS`). ``None`` when there is none.

    Raises:
        ResultsFileError: the file found does not parse as JSON or does not hold an experiment's results.
    """
    folders = [Path(directory)] if directory is not None else [results_dir(), STORED_RESULTS]
    for path in (folder / f"{name}.json" for folder in folders):
        if path.exists():
            try:
                results = json.loads(path.read_text(encoding="utf-8"))
            except (UnicodeDecodeError, json.JSONDecodeError) as error:
                raise ResultsFileError(f"{path} is not valid JSON ({error}); rerun the experiment or restore "
                                       f"the file (git checkout -- {path.name})") from error
            if not isinstance(results, dict):
                raise ResultsFileError(f"{path} does not hold an experiment's results (a JSON object; found a "
                                       f"JSON {type(results).__name__}); rerun the experiment")
            return results
    return None


def accepted_profiles(name: str) -> tuple[str, ...]:
    """The profiles experiment ``name`` accepts: its module's ``PROFILES``, else the ladder
    :data:`~sparse_tutorial.profiles.PROFILES`."""
    module = importlib.import_module(f"sparse_tutorial.experiments.{name}")
    return tuple(getattr(module, "PROFILES", PROFILES))


def check_arguments(name: str, profile: str, seeds: int, workers: int = 1, threads_per_run: int = 1,
                    gpus_per_run: float | None = None, on_stale: str = "refuse", hours: float | None = None,
                    stored_only: bool = False, order: str = "grid") -> None:
    """Raise a ``ValueError`` naming the argument unless experiment ``name`` can run ``profile`` with ``seeds``
    and these sweep options (:func:`~sparse_tutorial.runs.sweep.check_sweep_arguments`).

    Raises:
        ValueError: if ``name`` is not in :func:`available`, ``profile`` is not in
            :func:`accepted_profiles`, ``seeds`` < 1, a sweep option is out of range, or ``stored_only``
            for an experiment not in :func:`partial_grid_experiments`.
    """
    if name not in available():
        raise ValueError(f"name must be one of {available()}, got {name!r}")
    if seeds < 1:
        raise ValueError(f"seeds must be >= 1, got {seeds}")
    if profile not in accepted_profiles(name):
        raise ValueError(f"profile must be one of {accepted_profiles(name)} for {name!r}, got {profile!r}")
    check_sweep_arguments(workers, threads_per_run, gpus_per_run, on_stale, hours, order)
    if stored_only and name not in partial_grid_experiments():
        raise ValueError(f"--stored-only assembles an unfinished grid only for {partial_grid_experiments()}, "
                         f"not {name!r}: run the command without it to finish the grid")


def grid_identity(name: str, profile: str, directory: Path | None = None) -> dict[str, Any]:
    """What a run record of experiment ``name`` at ``profile`` must match to be reused: the SHA-256 of the
    profile's sizes and the :func:`~sparse_tutorial.runs.records.code_fingerprint` of the experiment,
    or one of the ``equivalent_codes`` established in the results folder ``directory`` (default
    :func:`results_dir`; :mod:`~sparse_tutorial.runs.equivalence`); also the git commit and whether
    the clone differs from it, which every record stores."""

    module = importlib.import_module(f"sparse_tutorial.experiments.{name}")
    sizes = getattr(module, "SIZES", {}).get(profile)
    code = code_fingerprint(name)
    return {"sizes": sizes_digest(sizes), "code": code, "git_commit": _git_commit(), "git_dirty": _git_dirty(),
            "equivalent_codes": equivalent_codes(name, code, directory if directory is not None else results_dir())}


class ResultsNotWrittenError(OSError):
    """The experiment ran but its JSON could not be written where asked; the message says where it went."""


def _write_or_rescue(name: str, payload: dict[str, Any], directory: Path | None) -> Path:
    """:func:`write_results`; when that fails (the disk filled during the run), write to a new folder in
    the system's temporary folder instead and raise :class:`ResultsNotWrittenError` naming that file."""
    try:
        return write_results(name, payload, directory)
    except OSError as error:
        rescued = write_results(name, payload, Path(tempfile.mkdtemp(prefix=f"sparse_tutorial-{name}-")))
        raise ResultsNotWrittenError(f"could not write the results of {name!r} ({error}); "
                                     f"they were saved to {rescued} instead") from error


def sweep_experiment(name: str, profile: str, seeds: int, progress: bool = False, stored_only: bool = False,
                     **sweep_options: Any) -> dict[str, Any]:
    """The results of experiment ``name`` (its ``assemble``) after :func:`~sparse_tutorial.runs.sweep.run_sweep`
    executed its ``grid``; ``sweep_options`` go to ``run_sweep`` (``workers``, ``address``, ``run_dir`` ...).
    Serial, silent and with no run folder by default: what a chapter calls (the command line shows the
    sweep's progress bar).

    With ``stored_only`` nothing trains: the runs stored in ``run_dir`` are assembled as they are, for an
    experiment that judges an unfinished grid (``PARTIAL_GRIDS`` in its module: a claim whose runs are
    missing is "not tested") or whose missing runs are all fresh runs of its confirmatory design (a claim
    of the design is pending until they are stored: :func:`confirmatory_fresh_runs`), and ``"grid"`` says
    how many runs are stored and names the missing ones.
    """
    module = importlib.import_module(f"sparse_tutorial.experiments.{name}")
    runs = module.grid(profile, seeds)
    run_dir = sweep_options.get("run_dir")
    identity = grid_identity(name, profile, Path(run_dir).parents[1] if run_dir is not None else None)
    if stored_only:
        if run_dir is None or name not in partial_grid_experiments():
            raise ValueError(f"stored_only needs a runs folder and one of {partial_grid_experiments()}, got {name!r}")
        found = stored_results(runs, run_dir, identity, sweep_options.get("on_stale", "refuse"))
        missing = [run.key for run in dict.fromkeys(runs) if run not in found]
        if not getattr(module, "PARTIAL_GRIDS", False):
            fresh = {run.key for run in confirmatory_fresh_runs(name)}
            unfinished = [key for key in missing if key not in fresh]
            if unfinished:
                raise ValueError(f"--stored-only assembles {name!r} only when every missing run is a fresh run of "
                                 f"its design; {len(unfinished)} others are missing, e.g. {unfinished[0]}: run the "
                                 "command without it to train them")
        runs = [run for run in runs if run in found]
        assembled = module.assemble(profile, seeds, runs, [found[run] for run in runs])
        assembled["grid"] = {"runs": len(found) + len(missing), "stored": len(found), "missing": missing}
    else:
        results = run_sweep(runs, module.execute, description=f"{name} ({profile})", progress=progress,
                            identity=identity, **sweep_options)
        assembled = module.assemble(profile, seeds, runs, results)
    if run_dir is not None:  # what the runs cost, also when this call only reassembled stored ones (or none yet)
        records = [json.loads((Path(run_dir) / f"{key}.json").read_text()) for key in {run.key for run in runs}]
        codes = sorted({r.get("identity", {}).get("code", "unknown") for r in records})
        assembled["runs_compute"] = {"runs": len(records), "run_seconds": round(sum(r["seconds"] for r in records), 1),
                                     # a resumed run's seconds count from its resume only
                                     "resumed_runs": sum(bool(r.get("resumed_checkpoints")) for r in records),
                                     "threads": sorted({r["threads"] for r in records}),
                                     "devices": sorted({r["device"] for r in records}),
                                     "code": identity["code"], "run_code": codes,
                                     "equivalent_code": [c for c in codes if c in identity["equivalent_codes"]],
                                     "mixed_code": not set(codes) <= {identity["code"], *identity["equivalent_codes"]}}
    return assembled


def confirmatory_fresh_runs(name: str) -> list[Run]:
    """The fresh runs of experiment ``name``'s confirmatory design (``design.CONFIRMATORY`` in its package,
    when the design names its arms: :meth:`~sparse_tutorial.stats.design.Design.fresh_runs`), else none."""
    design = getattr(importlib.import_module(f"sparse_tutorial.experiments.{name}"), "design", None)
    confirmatory = getattr(design, "CONFIRMATORY", None)
    return confirmatory.fresh_runs() if confirmatory is not None and confirmatory.arms else []


def partial_grid_experiments() -> list[str]:
    """The experiments whose unfinished grid ``--stored-only`` can assemble: those that judge one
    (``PARTIAL_GRIDS`` in their module) and those whose grid extends a pilot with a confirmatory design's
    fresh runs (:func:`confirmatory_fresh_runs`; only those may be missing)."""
    return [name for name in available()
            if getattr(importlib.import_module(f"sparse_tutorial.experiments.{name}"), "PARTIAL_GRIDS", False)
            or confirmatory_fresh_runs(name)]


def grid_status(name: str, profile: str, seeds: int, directory: Path | None = None) -> dict[str, list[str]]:
    """Which runs of experiment ``name``'s grid are stored and reusable, and which are not (without training
    anything): ``{status: [run keys]}`` with the statuses of
    :class:`~sparse_tutorial.runs.records.Status` (``valid``, ``missing``, ``corrupt``,
    ``other sizes``, ``other code``)."""
    module = importlib.import_module(f"sparse_tutorial.experiments.{name}")
    folder, identity = runs_dir(name, profile, directory), grid_identity(name, profile, directory)
    status: dict[str, list[str]] = {s.value: [] for s in Status}
    for run in dict.fromkeys(module.grid(profile, seeds)):
        status[read_record(folder / f"{run.key}.json", run.as_dict(), identity).status.value].append(run.key)
    return status


def runs_dir(name: str, profile: str, directory: Path | None = None) -> Path:
    """Where the CLI stores the finished runs of ``name`` at ``profile``: ``runs/NAME-PROFILE`` beside the JSON."""
    return (directory if directory is not None else results_dir()) / "runs" / f"{name}-{profile}"


def run_experiment(name: str, profile: str = "quick", seeds: int = 1, directory: Path | None = None,
                   write: bool = True, workers: int = 1, address: str | None = None, fresh: bool = False,
                   threads_per_run: int = 1, gpus_per_run: float | None = None,
                   on_stale: str = "refuse", hours: float | None = None, stored_only: bool = False,
                   order: str = "grid") -> dict[str, Any]:
    """Run experiment ``name`` and return (and, with ``write``, store) its results with their provenance.

    Every argument and, with ``write``, the results folder are checked before the experiment starts. With
    ``write`` each finished run is also stored in :func:`runs_dir`, and a rerun reuses the records found there
    that check out (``fresh`` redoes them); ``workers``, ``address``, ``threads_per_run``, ``gpus_per_run``,
    ``on_stale``, ``hours`` and ``order`` are :func:`~sparse_tutorial.runs.sweep.run_sweep`'s: with ``hours`` a
    grid is trained over several calls, each stopping with a
    :class:`~sparse_tutorial.runs.sweep.GridIncompleteError` until the last assembles the results;
    ``stored_only`` assembles the runs stored so far without training (:func:`sweep_experiment`).

    Raises:
        ValueError: see :func:`check_arguments`.
        UnwritableDirectoryError: the results folder is a file, cannot be created or is read-only.
        ResultsNotWrittenError: writing failed after the run; the results were saved elsewhere (named).
    """
    check_arguments(name, profile, seeds, workers, threads_per_run, gpus_per_run, on_stale, hours, stored_only,
                    order)
    directory = Path(directory) if directory is not None else None
    if write:
        writable_directory(directory if directory is not None else results_dir(), "the results folder")
    module = importlib.import_module(f"sparse_tutorial.experiments.{name}")
    started, commit, dirty = datetime.now(timezone.utc), _git_commit(), _git_dirty()  # the code that runs
    tic = time.perf_counter()
    if hasattr(module, "grid"):
        if workers == 1 and address is None and not ray_available():
            print(f"{name}: {RAY_HINT}", file=sys.stderr)
        results = sweep_experiment(name, profile, seeds, progress=True, stored_only=stored_only, workers=workers,
                                   address=address, fresh=fresh,
                                   run_dir=runs_dir(name, profile, directory) if write or stored_only else None,
                                   threads_per_run=threads_per_run, gpus_per_run=gpus_per_run,
                                   on_stale=on_stale, hours=hours, order=order)
        options = (f" --workers {workers}" * (workers > 1) + f" --threads-per-run {threads_per_run}"
                   + f" --order {order}" * (order != "grid") + " --stored-only" * stored_only)
        results["sweep"] = {"workers": workers, "address": address, "threads_per_run": threads_per_run}
    else:
        results, options = module.run(profile=profile, seeds=seeds), ""
    payload = {"experiment": name, "profile": profile, "seeds": seeds,
               "command": f"python -m sparse_tutorial.experiments {name} --profile {profile} --seeds {seeds}{options}",
               "started_utc": started.isoformat(timespec="seconds"),
               "wall_seconds": round(time.perf_counter() - tic, 1), "git_commit": commit, "git_dirty": dirty,
               "environment": environment(), "argv": sys.argv[1:], **results}
    if write:
        _write_or_rescue(name, payload, directory)
    return payload
