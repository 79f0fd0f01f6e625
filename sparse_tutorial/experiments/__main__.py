"""``python -m sparse_tutorial.experiments NAME --profile {quick,full} [--seeds N] [--out DIR]``."""
from __future__ import annotations

import argparse
from pathlib import Path
from typing import Sequence

from sparse_tutorial.experiments.runner import available, results_dir, run_experiment


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m sparse_tutorial.experiments",
                                     description="Run a book experiment and write book/results/NAME.json.")
    parser.add_argument("name", choices=available())
    parser.add_argument("--profile", default="quick", help="quick (CPU, minutes) or full (paper-style, GPU)")
    parser.add_argument("--seeds", type=int, default=1, help="number of seeds (0, 1, ..., N-1)")
    parser.add_argument("--out", type=Path, default=None, help="directory of the JSON (default book/results)")
    args = parser.parse_args(argv)
    payload = run_experiment(args.name, profile=args.profile, seeds=args.seeds, directory=args.out)
    where = args.out if args.out is not None else results_dir()
    print(f"wrote {where / (args.name + '.json')} in {payload['wall_seconds']} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
