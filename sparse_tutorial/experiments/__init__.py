"""The book's experiments: one module per experiment, each run by
``python -m sparse_tutorial.experiments NAME --profile {quick,full} [--seeds N]`` and written to
``book/results/NAME.json`` (see :mod:`sparse_tutorial.experiments.runner`)."""
from sparse_tutorial.experiments.runner import available, load_results, run_experiment, write_results

__all__ = ["available", "load_results", "run_experiment", "write_results"]
