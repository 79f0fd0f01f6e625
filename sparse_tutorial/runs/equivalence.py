"""Code equivalence: stored runs stay valid across a change of the code that computes exactly what the old
code computed.

A run record names the code that made it (:func:`~sparse_tutorial.runs.records.code_fingerprint`),
and a sweep refuses records of other code. Any edit of that code (a moved module, a renamed argument, one
host sync fewer per step) gives a new fingerprint, so a grid that takes days would be trained again after
every refactor. This module decides by measurement when two versions of the code compute the same thing:

1. the old commit's ``sparse_tutorial/`` is copied out of git (``git archive``) into a temporary folder, and
   this library's beside it (so that an edit made while the probe runs cannot reach it);
2. each version runs the **probe** in its own process, on the CPU, one thread: the experiment's whole grid
   at one seed, at the profile's sizes shrunk so that each run takes seconds (:data:`SHRINK`), every run's
   result with its timings removed (:func:`untimed`) reduced to a SHA-256;
3. the two probes are compared bit for bit. Equal, the pair of fingerprints is added to
   ``code_equivalence.json`` in the results folder with the commits, the probe's digest, the machine and
   the command; different, nothing is written and the command names the runs whose results differ.

Before probing, each version lists the files its fingerprint reads: when they are the same files with the
same bytes (the fingerprint itself changed, say, or the Python that computed it), the two codes are one,
and the pair is recorded with ``basis: "identical source"`` and no probe.

A sweep then reuses a record whose code is linked to the current code by a chain of such pairs
(:func:`~sparse_tutorial.runs.records.equivalent_codes`). Both versions run on the same machine in one call, so the comparison does not
depend on which CPU made the stored runs. The probe covers what a run executes at the shrunk sizes: every
system, kind of run and code path of the grid, not the full data (a change that acts only on, say, verses
longer than the shrunk corpus keeps is not seen; such a change is not a refactor, and its author says so by
redoing the runs).

    python -m sparse_tutorial.runs.equivalence nmt --against 4b36150   # --profile medium (default)

This file also runs as a script (``equivalence.py --probe ROOT NAME PROFILE``, ``--source``): the probe
(the source listing) of the library found under ``ROOT``. It imports nothing of the library at the top for that reason.
"""
from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
import platform
import shutil
import subprocess
import sys
import tarfile
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

TIMING_RUNS = ("speed",)
"""Kinds of run that only time training (their result is a speed, which no two executions share)."""


def _shrink_tasks(sizes: Any, **fields: Any) -> Any:
    return replace(sizes, tasks={name: replace(task, **fields) for name, task in sizes.tasks.items()})


SHRINK: dict[str, Callable[[Any], Any]] = {
    "nmt": lambda s: replace(
        s, corpus=replace(s.corpus, n_train=400, n_dev=20, n_test=20, vocab_size=300),
        embedding_dim=12, hidden_dim=12, batch_tokens=400, epochs=2, beam_size=2),
    "alignment": lambda s: replace(
        s, corpus=replace(s.corpus, n_train=200, n_dev=20), embedding_dim=12, hidden_dim=12,
        batch_tokens=400, epochs=2, patience=1 if s.patience else None, ibm1_iterations=2),
    "summarization": lambda s: replace(s, n_train=300, n_dev=20, n_test=20, vocab_size=400, embedding_dim=8,
                                       hidden_dim=8, epochs=1, beam_size=2),
    "classification": lambda s: replace(s, n_train=300, epochs=2, patience=1 if s.patience else None),
    "interpretability": lambda s: _shrink_tasks(s, n_train=300, epochs=1, n_test=12, embedding_dim=8,
                                                hidden_dim=8),
    "explanation": lambda s: replace(s, n_train=300, epochs=1, embedding_dim=8, hidden_dim=8, n_test=20),
}
"""Each experiment's profile sizes shrunk for the probe (all other sizes, the systems and λ included, kept).
Alignment keeps its ``n_test``: at the medium and full sizes it takes every test verse that fits, and a
shrunk ``n_test`` would take a sample instead, a path those profiles never run."""


def untimed(value: Any) -> Any:
    """``value`` without the entries that time something (keys containing ``second``: ``seconds``,
    ``tokens_per_second`` ...)."""
    if isinstance(value, dict):
        return {key: untimed(item) for key, item in value.items() if "second" not in str(key)}
    if isinstance(value, (list, tuple)):
        return [untimed(item) for item in value]
    return value


def _digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()


def probe(root: Path, name: str, profile: str) -> dict[str, Any]:
    """Run experiment ``name``'s grid at ``profile`` (one seed, :data:`SHRINK`'s sizes) with the library
    under ``root``; returns that library's ``fingerprint`` of ``name`` and the SHA-256 of each run's
    :func:`untimed` result (``digests``, by run key)."""
    sys.path.insert(0, str(root))
    import importlib

    import torch
    from tqdm.auto import tqdm

    torch.set_num_threads(1)
    module = importlib.import_module(f"sparse_tutorial.experiments.{name}")
    if not Path(module.__file__).resolve().is_relative_to(root.resolve()):
        raise RuntimeError(f"the probe of {root} imported {module.__file__}")
    fingerprint = _records_module(root).code_fingerprint(name)
    module.SIZES[profile] = SHRINK[name](module.SIZES[profile])
    runs = [run for run in module.grid(profile, 1) if run.kind not in TIMING_RUNS]
    digests = {run.key: _digest(untimed(module.execute(run)))
               for run in tqdm(runs, desc=f"probe of {root.name}", leave=False)}
    return {"fingerprint": fingerprint, "digests": digests}


def _records_module(root: Path) -> Any:
    """The run-records module of the library under ``root``: ``sparse_tutorial.runs.records``, or, in a
    library from before the statistics and the run machinery left ``experiments/``, the module of the same
    name there (so that a probe can compare this code with an older commit's)."""
    import importlib

    moved = (root / "sparse_tutorial" / "runs" / "records.py").exists()
    return importlib.import_module("sparse_tutorial.runs.records" if moved else "sparse_tutorial.experiments.records")


def source(root: Path, name: str) -> dict[str, Any]:
    """The library under ``root``: its ``fingerprint`` of ``name`` and the SHA-256 (``source``) of the files that
    fingerprint reads, their paths and bytes."""
    sys.path.insert(0, str(root))
    records = _records_module(root)
    if not Path(records.__file__).resolve().is_relative_to(root.resolve()):
        raise RuntimeError(f"the source listing of {root} imported {records.__file__}")
    digest = hashlib.sha256()
    for path in records.code_files(name):
        digest.update(path.relative_to(root.resolve()).as_posix().encode())
        digest.update(path.read_bytes())
    return {"fingerprint": records.code_fingerprint(name), "source": digest.hexdigest()}


def _in_process(mode: str, root: Path, name: str, profile: str) -> dict[str, Any]:
    """:func:`probe` (``mode`` ``--probe``) or :func:`source` (``--source``) in a fresh process (on the CPU,
    one thread)."""
    environment = {**os.environ, "CUDA_VISIBLE_DEVICES": "", "OMP_NUM_THREADS": "1"}
    done = subprocess.run([sys.executable, str(Path(__file__).resolve()), mode, str(root), name, profile],
                          capture_output=True, text=True, env=environment, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"the {mode[2:]} of {root} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def _export(repository: Path, commit: str, folder: Path) -> str:
    """Copy ``sparse_tutorial/`` at ``commit`` of ``repository`` into ``folder``; returns the full commit."""
    def git(*args: str) -> bytes:
        done = subprocess.run(["git", "-C", str(repository), *args], capture_output=True, check=False)
        if done.returncode != 0:
            raise ValueError(f"git {' '.join(args)} failed: {done.stderr.decode().strip()}")
        return done.stdout
    full = git("rev-parse", "--verify", f"{commit}^{{commit}}").decode().strip()
    with tarfile.open(fileobj=io.BytesIO(git("archive", full, "sparse_tutorial"))) as archive:
        archive.extractall(folder, **({"filter": "data"} if hasattr(tarfile, "data_filter") else {}))
    return full


# ------------------------------------------------------------------------------------ the equivalence file
def add(directory: Path, pair: dict[str, Any]) -> Path:
    """Append ``pair`` to ``directory/code_equivalence.json`` (both created when missing); returns its path."""
    from sparse_tutorial.atomic import atomic_write_text, writable_directory
    from sparse_tutorial.runs.records import EQUIVALENCE_FILE, EQUIVALENCE_FORMAT, equivalence_pairs

    path = writable_directory(directory, "the results folder") / EQUIVALENCE_FILE
    pairs = equivalence_pairs(directory) + [pair]
    atomic_write_text(path, json.dumps({"format": EQUIVALENCE_FORMAT, "pairs": pairs}, indent=1) + "\n")
    return path


def establish(name: str, against: str, profile: str = "medium", directory: Path | None = None,
              repository: Path | None = None) -> dict[str, Any]:
    """Probe the library at commit ``against`` of ``repository`` and the library this module belongs to (the
    two side by side); when every run's result is the same, record the pair in ``directory`` (the results
    folder) and return it. When the two read the same source files, byte for byte, the pair is recorded
    without a probe (``basis: "identical source"``).

    Raises:
        ValueError: an unknown experiment or profile, or a commit git does not know.
        CodeDiffersError: some run's result differs (named), or the grids differ; nothing is recorded.
    """
    from sparse_tutorial.runs.runner import _git_commit, _git_dirty, available, results_dir
    from sparse_tutorial.hardware import cpu_backend, describe_cpu_backend

    if name not in available():
        raise ValueError(f"name must be one of {available()}, got {name!r}")
    if profile not in ("medium", "full"):
        raise ValueError(f"profile must be 'medium' or 'full' (the stored grids), got {profile!r}")
    library = Path(__file__).resolve().parents[2]
    repository = Path(repository) if repository is not None else library
    directory = Path(directory) if directory is not None else results_dir()
    with tempfile.TemporaryDirectory(prefix="sparse_tutorial-equivalence-") as folder:
        old_root, new_root = Path(folder) / "old", Path(folder) / "new"
        old_commit = _export(repository, against, old_root)
        shutil.copytree(library / "sparse_tutorial", new_root / "sparse_tutorial",   # edits during the run
                        ignore=shutil.ignore_patterns("__pycache__"))                 # cannot reach the probe
        with ThreadPoolExecutor(2) as pool:
            old, new = pool.map(lambda root: _in_process("--source", root, name, profile), (old_root, new_root))
            identical = old["source"] == new["source"]
            if not identical:
                old, new = pool.map(lambda root: _in_process("--probe", root, name, profile), (old_root, new_root))
    if identical:
        evidence = {"basis": "identical source", "source_digest": new["source"]}
    else:
        if old["digests"].keys() != new["digests"].keys():
            raise CodeDiffersError(f"the grids of {name} differ: runs only at {against}: "
                                   f"{sorted(old['digests'].keys() - new['digests'].keys())}, only now: "
                                   f"{sorted(new['digests'].keys() - old['digests'].keys())}")
        differ = [key for key in old["digests"] if old["digests"][key] != new["digests"][key]]
        if differ:
            raise CodeDiffersError(f"{len(differ)} of {len(old['digests'])} probe runs of {name} compute other "
                                   f"results than at {against} (first: {differ[0]}); the stored runs of "
                                   f"{old['fingerprint']} are not valid for {new['fingerprint']}")
        evidence = {"basis": "probe", "probe_runs": len(old["digests"]), "probe_digest": _digest(old["digests"]),
                    "machine": describe_cpu_backend(cpu_backend()), "torch": __import__("torch").__version__}
    pair = {"experiment": name, "profile": profile, "codes": [old["fingerprint"], new["fingerprint"]],
            "commits": [old_commit, _git_commit() + ("+changes" if _git_dirty() else "")], **evidence,
            "python": platform.python_version(), "date_utc": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "command": f"python -m sparse_tutorial.runs.equivalence {name} --against {against} "
                       f"--profile {profile}"}
    if old["fingerprint"] != new["fingerprint"]:
        add(directory, pair)
    return pair


class CodeDiffersError(RuntimeError):
    """Two versions of the code compute different results for some run of the probe."""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m sparse_tutorial.runs.equivalence",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("name", help="the experiment whose stored runs should stay valid")
    parser.add_argument("--against", required=True, help="the commit that made (or shares the code of) the runs")
    parser.add_argument("--profile", default="medium", help="the stored grid's profile (default: medium)")
    parser.add_argument("--out", type=Path, default=None, help="the results folder (default: book/results)")
    args = parser.parse_args(argv)
    try:
        pair = establish(args.name, args.against, args.profile, args.out)
    except (ValueError, CodeDiffersError) as error:
        print(f"equivalence: {error}", file=sys.stderr)
        return 1
    old, new = pair["codes"]
    evidence = ("are the same source files" if pair["basis"] == "identical source"
                else f"give the same results in all {pair['probe_runs']} probe runs")
    print(f"{args.name}: the code of {args.against} ({old}) and this code ({new}) {evidence}"
          + ("; recorded" if old != new else " (the same fingerprint)"))
    return 0


if __name__ == "__main__":
    if sys.argv[1:2] in (["--probe"], ["--source"]):
        sys.path.pop(0)   # this file's folder: its modules must come from the probed library
        found = (probe if sys.argv[1] == "--probe" else lambda root, name, _: source(root, name))(
            Path(sys.argv[2]), sys.argv[3], sys.argv[4])
        print(json.dumps(found))
    else:
        sys.exit(main())
