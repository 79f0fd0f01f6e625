"""Running an experiment's independent trainings: one after another, on every core and GPU of one machine,
or on a Ray cluster, with the same numbers for every run.

Every experiment of the book is a grid of independent runs (system × seed × λ …). A :class:`Run` names one
by its ``kind`` and its ``config``; the experiment's ``execute(run) -> dict`` computes it from nothing else
(it seeds itself and loads its data from the cache), so a run gives the same numbers wherever it executes,
given the same number of threads (ATen's reductions may split differently over more threads, which moves
the last digits; the thread count is recorded with every run).

:func:`run_sweep` executes a list of runs:

* serially in this process (``workers=1``, the default; what the chapters do);
* with ``workers=N``: a local `Ray <https://docs.ray.io>`_ instance runs N at a time, each in its own worker
  process; on a GPU machine the runs share the GPUs (``gpus_per_run``, by default N runs per GPU), so that
  several small models train on one GPU at once. Without Ray, N local processes do the same (spawned, so
  each can use CUDA; they all see every GPU, and ``gpus_per_run`` is not needed);
* with ``address="auto"`` or ``"ray://HOST:10001"``: on an existing Ray cluster (``ray start`` on each node,
  e.g. in a SLURM allocation; see the reproducibility appendix).

Ray is an optional extra (``pip install 'sparse_tutorial[ray]'``), needed for a cluster only.

With a ``run_dir`` each finished run is stored at once as a run record ``KEY.json`` beside ``KEY.log`` (what
it printed; :mod:`~sparse_tutorial.runs.records`: the result, its config, seconds, threads and
device, the identity of the sizes and code that made it, and a checksum), and a later call reuses the
records that check out, so an interrupted sweep resumes where it stopped (``fresh=True`` redoes them). A
run is locked (``KEY.lock``) while it trains, so two sweeps on one folder share the work: each trains the
runs the other has not taken, then waits for the other's. While a run trains, every call of
:func:`~sparse_tutorial.training.train` in it writes a checkpoint after each epoch beside the record
(``KEY.code-CODE.train<n>.ckpt``, :func:`~sparse_tutorial.training.checkpoint_every_epoch`; never committed):
a run killed mid-training continues from its last finished epoch when the sweep runs again with the same
code or code shown to compute the same (the identity's ``equivalent_codes``, whose checkpoints are renamed to
the current code's), and the record lists the checkpoints it resumed from (``resumed_checkpoints``). They
are deleted once the record is stored. The results come back in the order of ``runs`` as they read from those files
(strict JSON: a NaN is ``None``), so a resumed sweep and a fresh one are assembled from identical values.
"""
from __future__ import annotations

import contextlib
import glob
import hashlib
import io
import json
import logging
import math
import multiprocessing
import os
import re
import resource
import socket
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Optional, Sequence

import torch
from tqdm import tqdm

from sparse_tutorial.atomic import writable_directory
from sparse_tutorial.runs.records import (
    LOG, RecordNotStoredError, Status, check_free_space, read_record, sealed, store_record,
)
from sparse_tutorial.profiles import seed_everything
from sparse_tutorial.training import checkpoint_every_epoch

RAY_HINT = ("the runs go one after another; to run them in parallel: pass --workers N (this machine), or "
            "pip install 'sparse_tutorial[ray]' and pass --address auto (a Ray cluster)")
"""The line the command line prints when it runs serially and Ray is not installed."""


class RayMissingError(RuntimeError):
    """Parallel runs were asked for (``workers > 1`` or an ``address``) but Ray is not installed."""


class StaleRecordsError(RuntimeError):
    """The runs folder holds records of this grid made by other code; nothing was trained (message names them)."""


class GridIncompleteError(RuntimeError):
    """The sweep stopped at its time limit (``hours``) with runs still to train; the finished ones are stored.

    Attributes:
        stored: how many runs of the grid are stored.
        missing: the keys of the runs still to train.
    """

    def __init__(self, stored: int, missing: list[str], hours: float) -> None:
        self.stored, self.missing = stored, missing
        super().__init__(f"stopped after {hours:g} h with {len(missing)} of {stored + len(missing)} runs still to "
                         f"train (the first: {missing[0]}); the same command continues from the {stored} stored")


STALE_CHOICES = ("refuse", "redo", "accept")
"""What a sweep does with records made by other code: stop and name them (default), redo them, reuse them."""
RUN_ORDERS = ("grid", "arm")
"""The order in which a sweep trains its runs: ``grid``, the experiment's own (e.g. seed 0 of every system,
then seed 1, ...); ``arm``, every seed of one arm (a run less its ``seed``) before the next arm, the arms in
the order of their first run in the grid, so that a claim about an arm can be judged as soon as possible."""


@dataclass(frozen=True)
class Run:
    """One independent training run of an experiment: ``kind`` (e.g. ``"system"``) and its ``config``.

    ``config`` is a tuple of ``(name, value)`` pairs with JSON values, so that a run is hashable and can be
    stored; build one with :meth:`of` and read it like a dict (``run["seed"]``).
    """

    kind: str
    config: tuple[tuple[str, Any], ...]

    @classmethod
    def of(cls, kind: str, **config: Any) -> "Run":
        """``Run.of("system", name="+Entropy", seed=0)``; values must be JSON (numbers, strings, lists)."""
        frozen = tuple((name, tuple(value) if isinstance(value, list) else value)
                       for name, value in sorted(config.items()))
        json.dumps(frozen)  # fails now, naming the value, rather than when the result is stored
        return cls(kind, frozen)

    def __getitem__(self, name: str) -> Any:
        return dict(self.config)[name]

    def get(self, name: str, default: Any = None) -> Any:
        return dict(self.config).get(name, default)

    @property
    def arm(self) -> tuple[str, tuple[tuple[str, Any], ...]]:
        """The run less its seed (what it trains); the runs of one arm differ by their ``seed`` only."""
        return self.kind, tuple(item for item in self.config if item[0] != "seed")

    def as_dict(self) -> dict[str, Any]:
        """``{"kind": ..., "config": {...}}``, as stored in the run's file."""
        return {"kind": self.kind, "config": {name: list(v) if isinstance(v, tuple) else v
                                              for name, v in self.config}}

    @property
    def key(self) -> str:
        """The run's file name, which says what the run is and cannot collide, e.g. ``system-name=NMT-seed=0-1a2b3c4d``."""
        text = json.dumps(self.as_dict(), sort_keys=True)
        readable = "-".join([self.kind] + [f"{name}={value}" for name, value in self.config])
        readable = re.sub(r"[^A-Za-z0-9=.+_-]+", "_", readable)[:120]
        return f"{readable}-{hashlib.sha1(text.encode()).hexdigest()[:8]}"


def strict_json(value: Any) -> Any:
    """``value`` with every non-finite float (NaN, ±inf) replaced by ``None``, in nested dicts, lists and
    tuples: strict JSON has no NaN, and readers other than Python's (``jq``, JavaScript) reject it."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {key: strict_json(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [strict_json(item) for item in value]
    return value


def as_stored(value: Any) -> Any:
    """``value`` as it reads back from a strict JSON file (tuples become lists, NaN becomes ``None``)."""
    return json.loads(json.dumps(strict_json(value), allow_nan=False))


def execute_logged(execute: Callable[[Run], dict], run: Run, threads: int) -> dict[str, Any]:
    """Run ``execute(run)`` on ``threads`` threads, capturing what it prints and logs.

    This is what each worker calls (and the serial loop). Before the run every generator is seeded with 0,
    so even randomness the run forgot to seed is the same wherever it runs.

    Returns:
        ``{"run", "result", "seconds", "threads", "device", "host", "worker_max_rss_mb", "log"}``.
    """
    previous_threads = torch.get_num_threads()
    torch.set_num_threads(threads)
    seed_everything(0)
    buffer = io.StringIO()
    handler = logging.StreamHandler(buffer)
    logging.getLogger().addHandler(handler)
    tic = time.perf_counter()
    try:
        with contextlib.redirect_stdout(buffer), contextlib.redirect_stderr(buffer):
            result = execute(run)
    finally:
        logging.getLogger().removeHandler(handler)
        torch.set_num_threads(previous_threads)
    return {"run": run.as_dict(), "result": as_stored(result), "seconds": round(time.perf_counter() - tic, 2),
            "threads": threads, "device": "cuda" if torch.cuda.is_available() else "cpu",
            "host": socket.gethostname(),
            "worker_max_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
            "log": buffer.getvalue()}


def ray_available() -> bool:
    """Whether the optional Ray extra is installed."""
    try:
        import ray  # noqa: F401
    except ImportError:
        return False
    return True


class _Locks:
    """Per-run lock files ``KEY.lock`` in ``run_dir`` (POSIX ``flock``; without ``fcntl`` or a folder every
    lock is granted: two sweeps may then train a run twice, which is only slower)."""

    def __init__(self, run_dir: Optional[Path]) -> None:
        self.run_dir, self.held = run_dir, {}
        try:
            import fcntl
            self.fcntl = fcntl if run_dir is not None else None
        except ImportError:
            self.fcntl = None

    def take(self, run: Run, wait: bool) -> bool:
        """Lock ``run``; without ``wait``, ``False`` at once when another sweep holds it."""
        if self.fcntl is None:
            return True
        handle = open(self.run_dir / f"{run.key}.lock", "a")
        try:
            self.fcntl.flock(handle, self.fcntl.LOCK_EX | (0 if wait else self.fcntl.LOCK_NB))
        except BlockingIOError:
            handle.close()
            return False
        self.held[run] = handle
        return True

    def release(self, run: Run) -> None:
        handle = self.held.pop(run, None)
        if handle is not None:
            handle.close()

    def wait(self, run: Run) -> None:
        """Block until no other sweep holds ``run``'s lock."""
        self.take(run, wait=True)
        self.release(run)


def _reusable(run_dir: Optional[Path], runs: Sequence[Run], identity: dict[str, str], on_stale: str
              ) -> dict[Run, Optional[dict[str, Any]]]:
    """The stored record of each run that may be reused, ``None`` for the runs to (re)do; see
    :mod:`~sparse_tutorial.runs.records` for the rule.

    Raises:
        StaleRecordsError: with ``on_stale="refuse"``, when records of other code are found.
    """
    if run_dir is None:
        return {run: None for run in runs}
    found = {run: read_record(run_dir / f"{run.key}.json", run.as_dict(), identity) for run in runs}
    stale = [run for run, f in found.items() if f.status is Status.OTHER_CODE]
    if stale and on_stale == "refuse":
        raise StaleRecordsError(
            f"{len(stale)} stored run(s) in {run_dir} were made by other code ({stale[0].key}.json: "
            f"{found[stale[0]].why}); pass --redo-stale to train them again or --accept-stale to reuse them")
    reusable: dict[Run, Optional[dict[str, Any]]] = {}
    for run, f in found.items():
        if f.status in (Status.CORRUPT, Status.OTHER_SIZES) or (f.status is Status.OTHER_CODE and on_stale == "redo"):
            LOG.warning("run record %s.json: %s; the run is done again", run.key, f.why)
        keep = f.status is Status.VALID or (f.status is Status.OTHER_CODE and on_stale == "accept")
        reusable[run] = f.record if keep else None
    return reusable


def stored_results(runs: Sequence[Run], run_dir: Path, identity: dict[str, str], on_stale: str = "refuse"
                   ) -> dict[Run, dict[str, Any]]:
    """The result of each run of ``runs`` whose record in ``run_dir`` may be reused (the rule of
    :func:`run_sweep`), training nothing: what an unfinished grid has so far.

    Raises:
        StaleRecordsError: with ``on_stale="refuse"``, when records of other code are found.
    """
    found = _reusable(Path(run_dir), list(dict.fromkeys(runs)), identity, on_stale)
    return {run: record["result"] for run, record in found.items() if record is not None}


def run_sweep(runs: Sequence[Run], execute: Callable[[Run], dict], *, workers: int = 1,
              address: Optional[str] = None, run_dir: Optional[Path] = None, fresh: bool = False,
              threads_per_run: int = 1, gpus_per_run: Optional[float] = None,
              description: str = "runs", progress: bool = True, identity: Optional[dict[str, str]] = None,
              on_stale: str = "refuse", hours: Optional[float] = None, order: str = "grid") -> list[dict[str, Any]]:
    """Execute ``runs`` (serially, on ``workers`` local Ray workers, or on the Ray cluster at ``address``)
    and return each one's result, in the order of ``runs``.

    Args:
        runs: the grid; duplicates are executed once.
        execute: ``execute(run) -> dict``, a module-level function (workers import it by name).
        workers: runs at a time on this machine (``> 1`` starts a local Ray instance, or local processes
            without Ray).
        address: a Ray cluster to join (``"auto"``, ``"ray://HOST:10001"``); ``workers`` is then ignored.
        run_dir: where each finished run is stored, and where finished runs are found on a rerun.
        fresh: execute every run even if ``run_dir`` holds it.
        threads_per_run: torch threads of each run (default 1: the book's models are small, and one thread
            per run is both the fastest way to use the cores, with ``workers`` = cores, and what makes
            a serial sweep and a parallel one give the same numbers).
        gpus_per_run: GPU share Ray reserves per run (default: with CUDA, ``GPUs / workers``; else 0).
        description, progress: the label and whether to show the sweep's progress bar (runs done / total).
        identity: ``{"sizes": ..., "code": ...}`` of this grid, stored in each record and compared on reuse.
        on_stale: one of :data:`STALE_CHOICES`, for records made by other code.
        hours: start no run after this many hours (the runs under way finish and are stored): a grid longer
            than a session (a Colab runtime, a cluster job) is trained over several calls.
        order: one of :data:`RUN_ORDERS`: the order the runs train in; the results keep
            the order of ``runs``.

    Raises:
        ValueError: ``workers`` < 1, ``threads_per_run`` < 1, a negative ``gpus_per_run``, an unknown
            ``on_stale`` or ``order``.
        RayMissingError: ``address`` without Ray installed.
        StaleRecordsError: see ``on_stale``.
        GridIncompleteError: ``hours`` passed with runs still to train (those that finished are stored).
        RecordNotStoredError: a finished run could not be stored (it was saved elsewhere, named).
        OSError: the runs folder has no room for a record (checked before each run trains).
        RuntimeError: a run failed in a Ray worker (named; the runs that finished are stored).
    """
    check_sweep_arguments(workers, threads_per_run, gpus_per_run, on_stale, hours, order)
    stop_at = None if hours is None else time.time() + 3600 * hours
    parallel = workers > 1 or address is not None
    if address is not None and not ray_available():
        raise RayMissingError("a Ray cluster (--address) needs Ray: pip install 'sparse_tutorial[ray]'")
    if run_dir is not None:
        run_dir = writable_directory(run_dir, "the runs folder")
    identity = dict(identity or {})
    unique = _in_order(list(dict.fromkeys(runs)), order)
    records = {run: None for run in unique} if fresh else _reusable(run_dir, unique, identity, on_stale)
    bar = tqdm(total=len(unique), initial=sum(r is not None for r in records.values()), desc=description,
               unit="run", disable=not progress)
    job = Job(execute, threads_per_run, run_dir, identity, fresh, stop_at)

    def finished(run: Run, outcome: tuple[str, Optional[dict[str, Any]]]) -> None:
        if outcome[0] == "done":
            records[run] = outcome[1]
            bar.update(1)

    def out_of_time() -> bool:
        return stop_at is not None and time.time() >= stop_at

    try:
        pending = [run for run in unique if records[run] is None]
        while pending:
            if parallel and ray_available():
                _run_on_ray(pending, job, workers, address, threads_per_run, gpus_per_run, finished)
            elif parallel:
                _run_in_processes(pending, job, workers, finished)
            else:
                for run in pending:
                    finished(run, job(run))
            pending = [run for run in pending if records[run] is None]
            if pending and out_of_time():
                raise GridIncompleteError(len(unique) - len(pending), [run.key for run in pending], hours or 0.0)
            for run in pending:  # another sweep on this folder is training them: wait for it, then read
                LOG.info("waiting for another sweep that is training %s", run.key)
                _Locks(run_dir).wait(run)
            job = Job(execute, threads_per_run, run_dir, identity, fresh=False, stop_at=stop_at)
    finally:
        bar.close()
    return [records[run]["result"] for run in runs]


@dataclass(frozen=True)
class Job:
    """What the process that trains a run does (serially, or in a Ray worker): lock the run, read the record
    another sweep may have stored meanwhile, else check the free space, execute, store the record, unlock.
    Returns ``("done", record)``, ``("busy", None)`` when another sweep holds the run's lock, or
    ``("late", None)`` when it would start after ``stop_at`` (a ``time.time()``)."""

    execute: Callable[[Run], dict]
    threads: int
    run_dir: Optional[Path]
    identity: dict[str, Any]
    fresh: bool = False
    stop_at: Optional[float] = None

    def __call__(self, run: Run) -> tuple[str, Optional[dict[str, Any]]]:
        if self.stop_at is not None and time.time() >= self.stop_at:
            return "late", None
        locks = _Locks(self.run_dir)
        if not locks.take(run, wait=False):
            return "busy", None
        try:
            if self.run_dir is None:
                return "done", sealed(execute_logged(self.execute, run, self.threads), self.identity)
            if not self.fresh:
                found = read_record(self.run_dir / f"{run.key}.json", run.as_dict(), self.identity)
                if found.status is Status.VALID:
                    return "done", found.record
            else:
                _remove_checkpoints(self.run_dir, run)
            check_free_space(self.run_dir, self.run_dir.glob("*.json"))
            code = self.identity.get("code", "")
            _adopt_checkpoints(self.run_dir, run, code, self.identity.get("equivalent_codes", ()))
            resumed = [path.name for path in _checkpoints(self.run_dir, run, code)]
            with checkpoint_every_epoch(self.run_dir / f"{run.key}.code-{code}"):
                record = execute_logged(self.execute, run, self.threads)
            stored = sealed({**record, "resumed_checkpoints": resumed}, self.identity)
            store_record(self.run_dir, run.key, stored, record["log"])
            _remove_checkpoints(self.run_dir, run)
            return "done", stored
        finally:
            locks.release(run)


def _checkpoints(run_dir: Path, run: Run, code: Optional[str] = None) -> list[Path]:
    """The training checkpoints of ``run`` in ``run_dir`` written by ``code`` (``None``: by any code), sorted."""
    made_by = "*" if code is None else glob.escape(code)
    return sorted(run_dir.glob(f"{glob.escape(run.key)}.code-{made_by}.train*.ckpt"))


def _adopt_checkpoints(run_dir: Path, run: Run, code: str, equivalent_codes: Sequence[str]) -> None:
    """Rename ``run``'s checkpoints written by one of ``equivalent_codes`` to ``code``'s names, when ``code``
    has none of its own: that code computes what they computed, so the run continues from them."""
    if _checkpoints(run_dir, run, code):
        return
    for other in equivalent_codes:
        found = _checkpoints(run_dir, run, other)
        if found:
            old_prefix = f"{run.key}.code-{other}."
            for path in found:
                path.rename(path.with_name(f"{run.key}.code-{code}." + path.name[len(old_prefix):]))
            return


def _remove_checkpoints(run_dir: Path, run: Run) -> None:
    """Delete the training checkpoints of ``run`` in ``run_dir`` (those of any code)."""
    for path in _checkpoints(run_dir, run):
        path.unlink(missing_ok=True)


def _in_order(runs: Sequence[Run], order: str) -> list[Run]:
    """``runs`` in one of the :data:`RUN_ORDERS` (checked by :func:`check_sweep_arguments`): as given
    (``grid``), or grouped by :attr:`Run.arm` (``arm``), each arm where its first run was and its runs in
    their order."""
    if order == "grid":
        return list(runs)
    first: dict[tuple, int] = {}
    for run in runs:
        first.setdefault(run.arm, len(first))
    return sorted(runs, key=lambda run: first[run.arm])


def check_sweep_arguments(workers: int, threads_per_run: int, gpus_per_run: Optional[float] = None,
                          on_stale: str = "refuse", hours: Optional[float] = None, order: str = "grid") -> None:
    """Raise a ``ValueError`` naming the first bad argument of :func:`run_sweep` (before anything starts)."""
    if workers < 1 or threads_per_run < 1:
        raise ValueError(f"workers and threads_per_run must be >= 1, got {workers} and {threads_per_run}")
    if gpus_per_run is not None and not (gpus_per_run >= 0 and math.isfinite(gpus_per_run)):
        raise ValueError(f"gpus_per_run must be a number >= 0, got {gpus_per_run}")
    if on_stale not in STALE_CHOICES:
        raise ValueError(f"on_stale must be one of {STALE_CHOICES}, got {on_stale!r}")
    if hours is not None and not (hours > 0 and math.isfinite(hours)):
        raise ValueError(f"hours must be a number > 0, got {hours}")
    if order not in RUN_ORDERS:
        raise ValueError(f"order must be one of {RUN_ORDERS}, got {order!r}")


def _run_on_ray(pending: list[Run], job: Job, workers: int, address: Optional[str], threads: int,
                gpus_per_run: Optional[float], finished: Callable[[Run, tuple], None]) -> None:
    """Submit ``job`` of every pending run as a Ray task and hand each outcome to ``finished`` as it completes
    (a record that could not be stored is re-raised as the worker raised it)."""
    import ray

    if not ray.is_initialized():
        if address is not None:
            ray.init(address=address, log_to_driver=False)
        else:  # workers import this package by name: make sure they find the copy this process runs
            package_parent = str(Path(__file__).resolve().parents[2])  # holds sparse_tutorial/
            path = os.pathsep.join(filter(None, [package_parent, os.environ.get("PYTHONPATH")]))
            ray.init(num_cpus=workers * threads, include_dashboard=False, log_to_driver=False,
                     runtime_env={"env_vars": {"PYTHONPATH": path}})
    if gpus_per_run is None:
        gpus = ray.cluster_resources().get("GPU", 0)
        gpus_per_run = min(1.0, gpus / workers) if gpus else 0.0
    task = ray.remote(_call).options(num_cpus=threads, num_gpus=gpus_per_run, max_retries=0)
    futures = {task.remote(job, run): run for run in pending}
    while futures:
        done, _ = ray.wait(list(futures), num_returns=1)
        run = futures.pop(done[0])
        try:
            finished(run, ray.get(done[0]))
        except ray.exceptions.RayTaskError as error:
            for future in futures:
                ray.cancel(future)
            if isinstance(error.cause, (RecordNotStoredError, OSError)):
                raise error.cause from error
            raise RuntimeError(f"run {run.key} failed in a Ray worker: {error}") from error


def _run_in_processes(pending: list[Run], job: Job, workers: int,
                      finished: Callable[[Run, tuple], None]) -> None:
    """Without Ray: ``job`` of every pending run in ``workers`` local processes (spawned: a forked process
    cannot use CUDA once its parent has), each outcome handed to ``finished`` as it completes. The first run
    that raises cancels the runs not started and is re-raised as the worker raised it."""
    with ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn")) as pool:
        futures = {pool.submit(job, run): run for run in pending}
        try:
            for future in as_completed(futures):
                finished(futures[future], future.result())
        except BaseException:
            for future in futures:
                future.cancel()
            raise


def _call(job: Job, run: Run) -> tuple[str, Optional[dict[str, Any]]]:
    """``job(run)``: a module-level function for Ray to run in a worker."""
    return job(run)
