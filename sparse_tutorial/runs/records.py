"""Run records: what one finished run of a sweep stores, how it is checked before it is reused, and how a
record that cannot be stored is rescued.

A record is ``runs/NAME-PROFILE/KEY.json`` (beside it ``KEY.log``, what the run printed). It holds the run
(kind and config), the result, what the run cost, and the run's **identity**:

* ``sizes``: a SHA-256 of the profile's sizes (the experiment's ``SIZES[profile]``);
* ``code``: :func:`code_fingerprint`, a SHA-256 of the library's source that the run executes (its own
  experiment's modules and the rest of the library, less the modules that only assemble, judge, store or
  show results: :data:`NOT_RUN_CODE` and every experiment's ``NAME/results.py`` and ``NAME/claims.py``; a
  Python file counts by its syntax tree without docstrings, written out the same way on every Python
  version, so an edited comment or docstring does not make the code new, nor does the Python that runs it).

and ``sha256``, a checksum of all the rest. :func:`read_record` reuses a record only when it parses, its
checksum holds, and it names the same run, sizes and code, or code shown to compute the same results
(the identity's ``equivalent_codes``: :mod:`~sparse_tutorial.runs.equivalence`). The rule (README,
"Stored runs"):

* a record that does not parse or fails its checksum, or that was made with other sizes, is **redone**,
  with a one-line warning naming it;
* a record made by other code is **refused**: the sweep stops before training anything and names the
  records, unless told to redo them (``--redo-stale``) or to reuse them (``--accept-stale``, and the
  results then list every code fingerprint they were made with);
* a missing or changed ``.log`` is named in a warning; the record is kept (no number comes from the log).
"""
from __future__ import annotations

import ast
import hashlib
import json
import logging
import shutil
import tempfile
from dataclasses import asdict, is_dataclass
from enum import Enum
from pathlib import Path
from typing import Any, Iterable, NamedTuple

from sparse_tutorial.atomic import atomic_write_text

LOG = logging.getLogger("sparse_tutorial.experiments")
RECORD_FORMAT = "sparse_tutorial run record v2"
PACKAGE = Path(__file__).resolve().parents[1]
EXPERIMENTS = ("nmt", "alignment", "summarization", "classification", "interpretability", "explanation")
"""The experiments whose packages (``experiments/NAME/``) are told apart by :func:`code_fingerprint`."""
NOT_RUN_PACKAGES = ("runs", "stats", "pretrained")
"""Library packages that never change what a run of a grid computes: :mod:`sparse_tutorial.runs` trains,
stores and reuses runs, :mod:`sparse_tutorial.stats` judges their results, :mod:`sparse_tutorial.pretrained`
loads models that runs' configurations trained."""
NOT_RUN_CODE = ("experiments/__init__.py", "experiments/__main__.py", "experiments/nmt/checkpoints.py",
                *(f"experiments/{name}/design.py" for name in ("nmt", "summarization", "classification",
                                                               "interpretability", "explanation")),
                "plotting.py", "interactive.py", "hardware.py", "lookup.py", "which_method.py")
"""Other library files that never change what a run computes: the experiments' command and index, their
confirmatory designs (which claims, seeds and tests: ``NAME/design.py``), code no run calls
(``nmt/checkpoints.py``: the chapters' quick systems; ``lookup.py`` and ``which_method.py``: Part I's running
example and its closing table), and what only shows results (as do the experiments' ``results.py`` and
``claims.py``)."""
EQUIVALENCE_FILE = "code_equivalence.json"
EQUIVALENCE_FORMAT = "sparse_tutorial code equivalence v1"
"""The file in a results folder that lists the pairs of code shown to compute the same results
(:mod:`~sparse_tutorial.runs.equivalence` adds them), and its format."""


def _digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()


def sizes_digest(sizes: Any) -> str:
    """SHA-256 of a profile's sizes (a dataclass, or any JSON value)."""
    return _digest(asdict(sizes) if is_dataclass(sizes) else sizes)


def _syntax(node: Any) -> str:
    """The text of a syntax tree, the same on every Python version: each node with its non-empty fields only.
    (``ast.dump`` is not: Python 3.12 prints ``type_params=[]`` on every function and class, 3.13 leaves empty
    fields out, so the same file had three fingerprints.)"""
    if isinstance(node, ast.AST):
        fields = ((name, _syntax(getattr(node, name, None))) for name in node._fields)
        kept = ", ".join(f"{name}={text}" for name, text in fields if text not in ("None", "[]"))
        return f"{type(node).__name__}({kept})"
    if isinstance(node, list):
        return f"[{', '.join(_syntax(item) for item in node)}]"
    return repr(node)


def _without_docstrings(source: str) -> str:
    """:func:`_syntax` of ``source`` with every docstring removed."""
    tree = ast.parse(source)
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if (isinstance(body, list) and body and isinstance(body[0], ast.Expr)
                and isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str)):
            node.body = body[1:] or [ast.Pass()]
    return _syntax(tree)


def _owner(relative: str) -> str | None:
    """The experiment whose package holds the module ``relative`` (``experiments/NAME/PART.py``)."""
    parts = Path(relative).parts
    return parts[1] if len(parts) == 3 and parts[0] == "experiments" and parts[1] in EXPERIMENTS else None


def _module_file(dotted: str) -> str | None:
    """The file of module ``sparse_tutorial.X.Y`` relative to the package (``X/Y.py`` or ``X/Y/__init__.py``)."""
    relative = "/".join(dotted.split(".")[1:])
    return next((f for f in (f"{relative}.py", f"{relative}/__init__.py") if (PACKAGE / f).is_file()), None)


def _imported_files(module: str, names: Iterable[str]) -> list[str]:
    """The files that ``from module import names`` reads: each submodule named in ``names``, or else
    ``module``'s own file (a package's ``__init__.py``)."""
    names = list(names)
    submodules = [f for f in (_module_file(f"{module}.{name}") for name in names) if f is not None]
    own = _module_file(module) if len(submodules) < len(names) else None
    return submodules + ([own] if own is not None else [])


def _experiment_closure(experiment: str) -> set[str]:
    """The experiments' modules that ``experiment``'s own modules import, directly or through each other
    (read from their ``import`` statements): chapter 14's runs execute classification's training loop."""
    folder = PACKAGE / "experiments" / experiment
    todo = [p.relative_to(PACKAGE).as_posix() for p in folder.glob("*.py")]
    seen: set[str] = set()
    while todo:
        relative = todo.pop()
        if relative in seen:
            continue
        seen.add(relative)
        for node in ast.walk(ast.parse((PACKAGE / relative).read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("sparse_tutorial.experiments."):
                todo += _imported_files(node.module, (alias.name for alias in node.names))
    return seen


def code_files(experiment: str) -> list[Path]:
    """The source files :func:`code_fingerprint` hashes for ``experiment``, in a fixed order: the library
    outside ``experiments/``, and the experiments' modules that ``experiment``'s modules import, less
    :data:`NOT_RUN_PACKAGES`, :data:`NOT_RUN_CODE` and every experiment's ``claims.py`` and ``results.py``."""
    files = sorted(p for p in PACKAGE.rglob("*") if p.suffix in (".py", ".cpp") and "stored_results" not in p.parts)
    closure = _experiment_closure(experiment)
    chosen = []
    for path in files:
        relative = path.relative_to(PACKAGE).as_posix()
        owner = _owner(relative)
        if (relative in NOT_RUN_CODE or relative.split("/")[0] in NOT_RUN_PACKAGES
                or (owner is not None and path.stem in ("claims", "results"))):
            continue
        if owner is not None and relative not in closure:
            continue
        chosen.append(path)
    return chosen


def code_fingerprint(experiment: str) -> str:
    """SHA-256 (first 16 hex digits) of the code a run of ``experiment`` executes; see the module docstring."""
    digest = hashlib.sha256()
    for path in code_files(experiment):
        text = path.read_text(encoding="utf-8")
        digest.update(path.relative_to(PACKAGE).as_posix().encode())
        digest.update((_without_docstrings(text) if path.suffix == ".py" else text).encode())
    return digest.hexdigest()[:16]


def checksum(record: dict[str, Any]) -> str:
    """SHA-256 of a record's content, its ``sha256`` field left out."""
    return _digest({key: value for key, value in record.items() if key != "sha256"})


class Status(Enum):
    """What :func:`read_record` found."""

    VALID = "valid"
    MISSING = "missing"
    CORRUPT = "corrupt"        # unreadable, not a record of this run, or its checksum fails: redone
    OTHER_SIZES = "other sizes"  # redone
    OTHER_CODE = "other code"    # refused unless told (redo or accept)


class Found(NamedTuple):
    """A stored record as read: its :class:`Status`, the record (``None`` unless it parsed as one) and why."""

    status: Status
    record: dict[str, Any] | None
    why: str = ""


def read_record(path: Path, run: dict[str, Any], identity: dict[str, str]) -> Found:
    """Read and check the record at ``path`` of ``run`` (``Run.as_dict()``) against ``identity``."""
    if not path.exists():
        return Found(Status.MISSING, None)
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        return Found(Status.CORRUPT, None, f"it does not parse ({error})")
    if not isinstance(record, dict) or "result" not in record or "run" not in record:
        return Found(Status.CORRUPT, None, "it is not a run record")
    if record.get("run") != run:
        return Found(Status.CORRUPT, None, "it records another run")
    if record.get("format") != RECORD_FORMAT:
        return Found(Status.OTHER_CODE, record, "it was written before records named their code")
    if record.get("sha256") != checksum(record):
        return Found(Status.CORRUPT, None, "its checksum fails (changed after it was written)")
    stored = record.get("identity", {})
    if stored.get("sizes") != identity.get("sizes"):
        return Found(Status.OTHER_SIZES, record, "it was made with other sizes of the profile")
    if stored.get("code") != identity.get("code") and stored.get("code") not in identity.get("equivalent_codes", ()):
        return Found(Status.OTHER_CODE, record, f"it was made by other code ({stored.get('code')}, now "
                                                f"{identity.get('code')})")
    log = path.with_suffix(".log")
    if not log.exists() or hashlib.sha256(log.read_bytes()).hexdigest() != record.get("log_sha256"):
        LOG.warning("run record %s: its log %s is missing or changed; the record is kept", path.name, log.name)
    return Found(Status.VALID, record)


def sealed(record: dict[str, Any], identity: dict[str, str]) -> dict[str, Any]:
    """``record`` (as :func:`~sparse_tutorial.runs.sweep.execute_logged` returns it, ``log`` included)
    ready to store: the format, ``identity``, the log's SHA-256 in place of the log, and its checksum."""
    stored = {"format": RECORD_FORMAT, "identity": {k: v for k, v in identity.items() if k != "equivalent_codes"},
              **{key: value for key, value in record.items() if key != "log"},
              "log_sha256": hashlib.sha256(record["log"].encode()).hexdigest()}
    return {**stored, "sha256": checksum(stored)}


class RecordNotStoredError(OSError):
    """A finished run's record could not be written to the runs folder; the message says where it went."""


def store_record(run_dir: Path, key: str, record: dict[str, Any], log: str) -> None:
    """Write ``KEY.log`` and ``KEY.json`` (the sealed ``record``) in ``run_dir``, each all at once. When that
    fails (a full disk), write both to a new folder in the system's temporary folder instead and raise
    :class:`RecordNotStoredError` naming it: a finished run is never lost."""
    text = json.dumps(record, indent=1, allow_nan=False) + "\n"
    try:
        atomic_write_text(run_dir / f"{key}.log", log)
        atomic_write_text(run_dir / f"{key}.json", text)
    except OSError as error:
        rescue = Path(tempfile.mkdtemp(prefix="sparse_tutorial-run-"))
        (rescue / f"{key}.log").write_text(log, encoding="utf-8")
        (rescue / f"{key}.json").write_text(text, encoding="utf-8")
        raise RecordNotStoredError(f"could not store run {key} in {run_dir} ({error.strerror or error}); it was "
                                   f"saved to {rescue / (key + '.json')}: copy it and its .log into {run_dir} "
                                   f"and run the same command again") from error


MIN_FREE_BYTES = 1 << 20


def check_free_space(run_dir: Path, records: Iterable[Path] = ()) -> None:
    """Raise :class:`OSError` (ENOSPC) before a run trains unless ``run_dir`` has room for its record: twice
    the largest record already there, and at least 1 MiB."""
    largest = max((p.stat().st_size for p in records if p.exists()), default=0)
    needed = max(MIN_FREE_BYTES, 2 * largest)
    free = shutil.disk_usage(run_dir).free
    if free < needed:
        raise OSError(28, f"the runs folder {run_dir} has {free} bytes free, a record needs about {needed}; "
                          f"free some space and run the same command again (the stored runs are kept)")


def equivalence_pairs(directory: Path) -> list[dict[str, Any]]:
    """The established pairs of equivalent code in ``directory/code_equivalence.json`` (none when there is no
    such file).

    Raises:
        ValueError: the file does not parse or is not an equivalence file (named).
    """
    path = Path(directory) / EQUIVALENCE_FILE
    if not path.exists():
        return []
    try:
        stored = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ValueError(f"{path}: does not parse ({error})") from error
    if (not isinstance(stored, dict) or stored.get("format") != EQUIVALENCE_FORMAT
            or not isinstance(stored.get("pairs"), list)):
        raise ValueError(f"{path}: not a code equivalence file ({EQUIVALENCE_FORMAT!r} with a list of 'pairs')")
    return stored["pairs"]


def equivalent_codes(name: str, code: str, directory: Path) -> list[str]:
    """The fingerprints of experiment ``name``'s code linked to ``code`` by a chain of established pairs
    (``code`` itself left out), sorted."""
    links = [set(pair["codes"]) for pair in equivalence_pairs(directory) if pair["experiment"] == name]
    found, grew = {code}, True
    while grew:
        grew = False
        for link in links:
            if link & found and not link <= found:
                found |= link
                grew = True
    return sorted(found - {code})
