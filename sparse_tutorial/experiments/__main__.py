"""``python -m sparse_tutorial.experiments NAME [--profile PROFILE] [--seeds N] [--out DIR] [--workers N | --address ADDR]``.

The experiment's runs are stored one by one under ``DIR/runs/NAME-PROFILE/`` as they finish; running the
same command again skips the finished ones (``--fresh`` redoes them), and ``--status`` says which runs of
the grid are stored and which are still to train, without training anything. ``--workers N`` runs N at a time on
this machine (in Ray workers, or in local processes without Ray) and ``--address auto`` on a Ray cluster
(``pip install 'sparse_tutorial[ray]'``).

Every argument and the output folder are checked before the experiment starts (before Ray or any
training); a bad one, a corpus that is not fetched yet, a folder that cannot be written, stored runs made by
other code (``--redo-stale`` / ``--accept-stale``) or a finished run that could not be stored ends the
command with one line saying what to do (exit status 2), not a traceback. Ctrl-C says how many runs are
stored and that the same command resumes from them (exit status 130). ``--hours H`` starts no run after H
hours; if runs are left it says how many and exits with status 3, and the same command continues: a grid
longer than one session is trained over several, e.g. on Colab with ``--out`` on Google Drive.
``--order arm`` trains every seed of one arm before the next (the default, ``grid``, is the experiment's
order: seed 0 of every arm first), so that the claims about the first arms can be judged sooner.
``--stored-only`` trains nothing and writes the results of the runs stored so far (experiments that judge
an unfinished grid: a claim whose runs are missing is "not tested"; or whose missing runs are all fresh runs
of their confirmatory design: its claims are pending), and the file names the missing runs.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Sequence

from sparse_tutorial.atomic import UnwritableDirectoryError
from sparse_tutorial.data.cache import CorpusNotFetchedError
from sparse_tutorial.runs.records import RecordNotStoredError
from sparse_tutorial.runs.runner import (
    ResultsNotWrittenError,
    accepted_profiles,
    available,
    check_arguments,
    grid_status,
    partial_grid_experiments,
    results_dir,
    run_experiment,
    runs_dir,
)
from sparse_tutorial.runs.sweep import RUN_ORDERS, GridIncompleteError, RayMissingError, StaleRecordsError


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value


def _non_negative_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number, got {text!r}") from None
    if not value >= 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a number >= 0, got {text}")
    return value


def _positive_float(text: str) -> float:
    value = _non_negative_float(text)
    if value == 0:
        raise argparse.ArgumentTypeError(f"must be a number > 0, got {text}")
    return value


def _profiles_help() -> str:
    listed = "; ".join(f"{name}: {', '.join(accepted_profiles(name))}" for name in available())
    return f"size of the run (default quick: CPU, minutes; full: paper-style, GPU). Accepted: {listed}"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m sparse_tutorial.experiments",
                                     description="Run a book experiment and write book/results/NAME.json.")
    parser.add_argument("name", choices=available())
    parser.add_argument("--profile", default="quick", help=_profiles_help())
    parser.add_argument("--seeds", type=_positive_int, default=1, help="number of seeds (0, 1, ..., N-1)")
    parser.add_argument("--out", type=Path, default=None, help="directory of the JSON (default book/results)")
    parser.add_argument("--workers", type=_positive_int, default=1,
                        help="runs at a time on this machine, in local Ray workers or, without Ray, local "
                             "processes (default 1: serial)")
    parser.add_argument("--address", default=None,
                        help="run on this Ray cluster instead: 'auto' (a node of it) or 'ray://HOST:10001'")
    parser.add_argument("--threads-per-run", type=_positive_int, default=1,
                        help="torch threads of each run (default 1; run several at once with --workers)")
    parser.add_argument("--gpus-per-run", type=_non_negative_float, default=None,
                        help="GPU share of each run, e.g. 0.25: four runs per GPU (default: GPUs / workers)")
    parser.add_argument("--hours", type=_positive_float, default=None,
                        help="start no run after this many hours and exit with status 3 if runs are left; the same "
                             "command continues (for grids longer than a session, e.g. on Colab with --out on Drive)")
    parser.add_argument("--order", choices=RUN_ORDERS, default="grid",
                        help="the order the runs train in: 'grid', the experiment's (seed 0 of every arm, then "
                             "seed 1, ...; default), or 'arm', every seed of one arm before the next, so that the "
                             "claims about an arm can be judged sooner")
    parser.add_argument("--fresh", action="store_true", help="redo the runs stored by an earlier call")
    parser.add_argument("--stored-only", action="store_true",
                        help="train nothing: write the results of the runs stored so far, naming the missing ones "
                             "(for experiments that judge an unfinished grid or whose missing runs are their "
                             "design's fresh runs: "
                             + ", ".join(partial_grid_experiments()) + ")")
    parser.add_argument("--status", action="store_true",
                        help="only say which runs of the grid are stored and which are still to train, then exit")
    stale = parser.add_mutually_exclusive_group()
    stale.add_argument("--redo-stale", action="store_const", const="redo", dest="on_stale", default="refuse",
                       help="train again the stored runs that other code made (by default they stop the command)")
    stale.add_argument("--accept-stale", action="store_const", const="accept", dest="on_stale",
                       help="reuse the stored runs that other code made (the results list every code fingerprint)")
    args = parser.parse_args(argv)
    try:
        check_arguments(args.name, args.profile, args.seeds, args.workers, args.threads_per_run,
                        args.gpus_per_run, args.on_stale, args.hours, args.stored_only, args.order)
    except ValueError as error:
        parser.error(str(error))
    run_dir = runs_dir(args.name, args.profile, args.out)
    if args.status:
        status = grid_status(args.name, args.profile, args.seeds, args.out)
        print(f"{args.name} --profile {args.profile} --seeds {args.seeds}: "
              + ", ".join(f"{len(keys)} {name}" for name, keys in status.items() if keys) + f" (in {run_dir})")
        for name, keys in status.items():
            for key in keys if name != "valid" else ():
                print(f"  {name}: {key}")
        return 0
    try:
        payload = run_experiment(args.name, profile=args.profile, seeds=args.seeds, directory=args.out,
                                 workers=args.workers, address=args.address, fresh=args.fresh,
                                 threads_per_run=args.threads_per_run, gpus_per_run=args.gpus_per_run,
                                 on_stale=args.on_stale, hours=args.hours, stored_only=args.stored_only,
                                 order=args.order)
    except GridIncompleteError as error:
        print(f"{parser.prog}: {error}", file=sys.stderr)
        return 3
    except (CorpusNotFetchedError, UnwritableDirectoryError, ResultsNotWrittenError, RayMissingError,
            RecordNotStoredError, StaleRecordsError, OSError) as error:
        print(f"{parser.prog}: error: {error}", file=sys.stderr)
        return 2  # argparse's exit status for a command that cannot run as asked
    except KeyboardInterrupt:
        stored = len(list(run_dir.glob("*.json"))) if run_dir.is_dir() else 0
        print(f"\n{parser.prog}: interrupted; {stored} finished run(s) are stored in {run_dir}, and the same "
              f"command resumes from them", file=sys.stderr)
        return 130
    where = args.out if args.out is not None else results_dir()
    print(f"wrote {where / (args.name + '.json')} in {payload['wall_seconds']} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
