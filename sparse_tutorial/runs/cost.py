"""What an experiment's ``full`` profile costs on a GPU: the cost model of the reproducibility appendix.

``tools/gpu_check.py`` ran on a GPU machine writes ``book/results/gpu_check.json``. Besides the CUDA tests and
timed full-size training steps, it executes one epoch of each experiment's first full-profile run through
the experiment's own code (corpus, training on the GPU, decoding or importance measures, metrics), with the
evaluation sets cut to 200 items, the experiments side by side. A full run trains at most the profile's
epochs, so

    grid hours ≤ runs × epochs × (seconds of that one-epoch run) / 3600,

one run at a time. It is an upper bound: the evaluation is counted once per epoch, where a run evaluates its
test set once, and early stopping ends runs sooner; it is also a bound for one GPU only (runs differ: a
20 Newsgroups post is longer than a movie-review sentence, and the first run is what was timed).

    python -m sparse_tutorial.runs.cost     # the appendix's table, from book/results/gpu_check.json
"""
from __future__ import annotations

import dataclasses
import importlib
import json
import re
from pathlib import Path
from typing import Any

from sparse_tutorial.runs.runner import results_dir

SEEDS = 3
"""Seeds of the full grids whose cost is estimated (the book's ``--seeds 3``)."""
SESSION_HOURS = 1.0
"""What one chapter's full run should take at most, so that it fits one Colab session (issue 33's target)."""


def gpu_check(path: Path | None = None) -> dict[str, Any]:
    """The stored GPU check (``book/results/gpu_check.json`` by default).

    Raises:
        FileNotFoundError: there is none: run ``python tools/gpu_check.py`` on a GPU machine first.
    """
    path = path if path is not None else results_dir() / "gpu_check.json"
    if not path.is_file():
        raise FileNotFoundError(f"no GPU check at {path}: run `python tools/gpu_check.py` on a GPU machine")
    return json.loads(path.read_text())


def most_epochs(sizes: Any) -> int:
    """The largest ``epochs`` field in ``sizes``, through nested dataclasses and dicts."""
    if isinstance(sizes, dict):
        return max((most_epochs(value) for value in sizes.values()), default=0)
    if not dataclasses.is_dataclass(sizes):
        return 0
    found = [getattr(sizes, f.name) for f in dataclasses.fields(sizes) if f.name == "epochs"]
    nested = [most_epochs(getattr(sizes, f.name)) for f in dataclasses.fields(sizes)]
    return max([value for value in found if isinstance(value, int)] + nested + [0])


def full_grid_estimate(name: str, check: dict[str, Any], seeds: int = SEEDS) -> dict[str, Any]:
    """The cost model's bound for experiment ``name``'s full grid with ``seeds``: ``runs``, ``epochs`` (the most
    a run trains), ``one_epoch_seconds`` (measured), ``hours_at_most`` (one run at a time) and whether that
    fits :data:`SESSION_HOURS`.

    Raises:
        KeyError: the GPU check has no one-epoch run of ``name`` (naming it).
    """
    measured = check.get("one_epoch", {}).get(name, {})
    if "run_seconds" not in measured:
        raise KeyError(f"the GPU check has no one-epoch run of {name!r} ({measured.get('error', 'not run')})")
    module = importlib.import_module(f"sparse_tutorial.experiments.{name}")
    sizes = module.SIZES["full"]
    runs, epochs = len(dict.fromkeys(module.grid("full", seeds))), most_epochs(sizes)
    hours = runs * epochs * measured["run_seconds"] / 3600
    return {"runs": runs, "epochs": epochs, "one_epoch_seconds": measured["run_seconds"],
            "hours_at_most": round(hours, 1), "fits_one_session": hours <= SESSION_HOURS}


def cost_table(check: dict[str, Any], names: tuple[str, ...] | None = None) -> str:
    """The appendix's Markdown table of :func:`full_grid_estimate` for every experiment the check timed."""
    names = names if names is not None else tuple(check.get("one_epoch", {}))
    lines = [f"| experiment | runs ({SEEDS} seeds) | epochs at most | one epoch, measured (s) | grid, at most (h) |",
             "| --- | ---: | ---: | ---: | ---: |"]
    for name in names:
        row = full_grid_estimate(name, check)
        lines.append(f"| {name} | {row['runs']} | {row['epochs']} | {row['one_epoch_seconds']:.0f} | "
                     f"{row['hours_at_most']:.1f} |")
    return "\n".join(lines)


def _plain(line: str) -> str:
    """``line`` without the terminal's colour codes (a traceback's last line, as Jupyter prints it)."""
    return re.sub(r"\x1b\[[0-9;]*m", "", line).strip()


def _tests_summary(check: dict[str, Any]) -> str:
    """The CUDA tests' outcome: the counts, the tests that failed, and their own date when they ran apart."""
    tests = check["tests"]
    text = f"the CUDA tests {tests['summary'].split(' in ')[0]}"
    if tests.get("failed"):
        text += f" ({', '.join(name.split('::')[-1] for name in tests['failed'])})"
    if tests.get("date", check.get("date")) != check.get("date"):
        text += f" on {tests['date']}"
    return text


def check_summary(check: dict[str, Any]) -> str:
    """What the GPU check found, in the appendix's words: the machine, the CUDA tests, the full-size step
    times in float32 and with mixed precision, the training loop's gain from reading the GPU less often, the
    chapters executed on the GPU, and the one-epoch runs."""
    steps = "; ".join(f"{name} {t['float32']['seconds_per_step']:.3f} s in float32 and "
                      f"{t['amp']['seconds_per_step']:.3f} s with mixed precision"
                      for name, t in check["timings"].items())
    text = (f"Measured on one {check['device']} (torch {check['torch']}, {check.get('date', 'date not recorded')}): "
            f"{_tests_summary(check)}; a full-size training step took {steps}.")
    loop = check.get("loop")
    if loop:
        every = loop["read_every"]
        text += " The training loop reading its values from the GPU every step, then every {} steps: {}.".format(
            every, "; ".join(f"{profile} size {loop[profile]['seconds_per_step_read_every_step']:.4f} s and "
                             f"{loop[profile][f'seconds_per_step_read_every_{every}']:.4f} s per step "
                             f"(× {loop[profile]['speed_up']:.2f})" for profile in ("medium", "full") if profile in loop))
    chapters = check.get("chapters")
    if chapters:
        outcome = {name: run["returncode"] for name, run in chapters["chapters"].items()}
        passed = sorted(name for name, code in outcome.items() if code == 0)
        failed = [f"{name} ({_plain(chapters['chapters'][name]['error'][-1])})"
                  for name, code in outcome.items() if code not in (0, None, -9)]
        stopped = [name for name, code in outcome.items() if code == -9]
        text += (f" Chapters executed in their quick profile on the GPU ({chapters['date']}): {len(passed)} of "
                 f"{chapters['of']} passed ({', '.join(passed) or 'none'}); failed: {', '.join(failed) or 'none'}; "
                 f"stopped at the time limit: {', '.join(stopped) or 'none'}; "
                 f"not started: {sum(code is None for code in outcome.values())}.")
    finished = [name for name, run in check.get("one_epoch", {}).items() if "run_seconds" in run]
    return text + (f" The one-epoch runs of {', '.join(finished)} finished on the GPU "
                   f"({check.get('one_epoch_date', check.get('date', 'date not recorded'))}).")


def main() -> None:
    check = gpu_check()
    print(check_summary(check))
    print()
    print(cost_table(check))


if __name__ == "__main__":
    main()
