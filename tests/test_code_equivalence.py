"""Stored runs stay valid across a refactor that computes the same results (issues 29 and 33): the
equivalence of two versions of the code is measured by the probe, recorded, and honoured by the sweep;
a change of what the code computes is refused."""
import json
import shutil
import subprocess
from pathlib import Path

import pytest

from sparse_tutorial.runs import equivalence, records, runner
from sparse_tutorial.runs.equivalence import CodeDiffersError, establish
from sparse_tutorial.runs.records import Status, code_fingerprint, equivalent_codes, read_record, sealed
from sparse_tutorial.runs.sweep import Run

PACKAGE = Path(equivalence.__file__).resolve().parents[1]
REPOSITORY = PACKAGE.parent


def pair(experiment: str, old: str, new: str) -> dict:
    return {"experiment": experiment, "codes": [old, new]}


def test_equivalent_codes_follow_chains_of_pairs_within_one_experiment(tmp_path):
    for link in (pair("nmt", "a", "b"), pair("nmt", "c", "b"), pair("summarization", "b", "z"),
                 pair("nmt", "x", "y")):
        equivalence.add(tmp_path, link)
    assert equivalent_codes("nmt", "a", tmp_path) == ["b", "c"]
    assert equivalent_codes("nmt", "y", tmp_path) == ["x"]
    assert equivalent_codes("nmt", "new", tmp_path) == []
    assert equivalent_codes("summarization", "b", tmp_path) == ["z"]
    assert equivalent_codes("nmt", "a", tmp_path / "no such folder") == []


@pytest.mark.parametrize("text", ["{not json", json.dumps([1, 2]), json.dumps({"format": "other", "pairs": []})])
def test_a_broken_equivalence_file_is_named(tmp_path, text):
    (tmp_path / records.EQUIVALENCE_FILE).write_text(text)
    with pytest.raises(ValueError, match="code_equivalence.json"):
        equivalent_codes("nmt", "a", tmp_path)


def test_a_record_of_equivalent_code_is_valid_and_of_other_code_is_not(tmp_path):
    run = Run.of("system", seed=0)
    made = {"sizes": "s", "code": "old"}
    path = tmp_path / "r.json"
    record = sealed({"run": run.as_dict(), "result": {"bleu": 1.0}, "log": ""}, made)
    path.write_text(json.dumps(record))
    (tmp_path / "r.log").write_text("")
    now = {"sizes": "s", "code": "new"}
    assert read_record(path, run.as_dict(), now).status is Status.OTHER_CODE
    assert read_record(path, run.as_dict(), {**now, "equivalent_codes": ["old"]}).status is Status.VALID
    resealed = sealed({"run": run.as_dict(), "result": {}, "log": ""}, {**now, "equivalent_codes": ["old"]})
    assert resealed["identity"] == now


def test_the_grid_identity_reads_the_results_folder_equivalences(tmp_path):
    code = code_fingerprint("explanation")
    equivalence.add(tmp_path, pair("explanation", "made-earlier", code))
    assert runner.grid_identity("explanation", "medium", tmp_path)["equivalent_codes"] == ["made-earlier"]
    assert runner.grid_identity("explanation", "medium", tmp_path / "empty")["equivalent_codes"] == []


def git(repository: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repository), "-c", "user.name=t", "-c", "user.email=t@t", *args],
                          check=True, capture_output=True, text=True).stdout.strip()


@pytest.fixture(scope="module")
def old_library(tmp_path_factory) -> Path:
    """A git repository holding a copy of this library, committed."""
    return committed_copy(tmp_path_factory.mktemp("old"))


def committed_copy(repository: Path) -> Path:
    """``repository``, a new git repository holding a copy of this library, committed."""
    shutil.copytree(PACKAGE, repository / "sparse_tutorial",
                    ignore=shutil.ignore_patterns("__pycache__", "*.so", "*.pyc", "stored_results"))
    git(repository, "init", "-q")
    git(repository, "add", "sparse_tutorial")
    git(repository, "commit", "-q", "-m", "copy")
    return repository


def commit_edit(repository: Path, relative: str, old: str, new: str) -> str:
    path = repository / "sparse_tutorial" / relative
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new))
    git(repository, "commit", "-q", "-am", f"edit {relative}")
    return git(repository, "rev-parse", "HEAD")


def test_a_refactor_is_recorded_and_a_change_of_results_refused(old_library, tmp_path):
    """The old version differs from this one by a function no run calls (another fingerprint, the same
    results): the pair is recorded. With another learning rate besides: refused, nothing recorded."""
    refactor = commit_edit(old_library, "experiments/explanation/__init__.py", "\n\ndef grid(",
                           "\n\ndef _moved_away() -> None:\n    pass\n\n\ndef grid(")
    recorded = establish("explanation", refactor, directory=tmp_path, repository=old_library)
    assert recorded["codes"][1] == code_fingerprint("explanation") != recorded["codes"][0]
    assert recorded["probe_runs"] == 2 and recorded["commits"][0] == refactor
    assert equivalent_codes("explanation", code_fingerprint("explanation"), tmp_path) == [recorded["codes"][0]]

    retrained = commit_edit(old_library, "experiments/explanation/__init__.py", "LR, OPTIMIZER = 1e-3", "LR, OPTIMIZER = 2e-3")
    with pytest.raises(CodeDiffersError, match="2 of 2 probe runs of explanation compute other results"):
        establish("explanation", retrained, directory=tmp_path / "refused", repository=old_library)
    assert not (tmp_path / "refused").exists()


def test_an_unknown_commit_or_experiment_is_named(tmp_path):
    with pytest.raises(ValueError, match="no-such-commit"):
        establish("explanation", "no-such-commit", directory=tmp_path, repository=REPOSITORY)
    with pytest.raises(ValueError, match="'verdicts'"):
        establish("verdicts", "HEAD", directory=tmp_path)


@pytest.mark.parametrize("folder", sorted((runner.results_dir() / "runs").glob("*-*")), ids=lambda p: p.name)
def test_every_committed_run_record_is_reusable_by_this_code(folder):
    """An edit of the code a stored grid runs either computes the same (and says so by the probe) or its
    author redoes the runs: a stored record is never left stale by accident."""
    name, profile = folder.name.rsplit("-", 1)
    identity = runner.grid_identity(name, profile)
    accepted = {identity["code"], *identity["equivalent_codes"]}
    stale = sorted({json.loads(p.read_text())["identity"]["code"] for p in folder.glob("*.json")} - accepted)
    assert not stale, (f"{folder.name}: records of code {stale} are not valid for this code ({identity['code']}); "
                       f"run `python -m sparse_tutorial.runs.equivalence {name} --against COMMIT` with "
                       f"a commit of that code, or redo the runs")


def test_the_same_source_fingerprinted_another_way_is_linked_without_a_probe(tmp_path):
    """An old version whose fingerprint was computed differently (here: ``ast.dump``, which differs between
    Python versions) but which runs the same source files: recorded as identical source, no probe run."""
    old_library = committed_copy(tmp_path / "old")
    other_scheme = commit_edit(old_library, "runs/records.py", "    return _syntax(tree)\n",
                               "    return ast.dump(tree)\n")
    recorded = establish("explanation", other_scheme, directory=tmp_path / "results", repository=old_library)
    assert recorded["basis"] == "identical source" and "probe_runs" not in recorded
    assert recorded["codes"][1] == code_fingerprint("explanation") != recorded["codes"][0]
    linked = equivalent_codes("explanation", code_fingerprint("explanation"), tmp_path / "results")
    assert linked == [recorded["codes"][0]]


@pytest.mark.parametrize("name", sorted(equivalence.SHRINK))
def test_every_probe_shrinks_sizes_that_exist(name):
    """The probe of each experiment shrinks its profiles' sizes by field name: a field renamed in the sizes
    must be renamed here too (interpretability's probe still said ``dim`` after issue 21 named it
    ``embedding_dim`` and ``hidden_dim``, and could not run)."""
    import importlib

    from sparse_tutorial.runs.records import EXPERIMENTS

    assert set(equivalence.SHRINK) == set(EXPERIMENTS)
    sizes = importlib.import_module(f"sparse_tutorial.experiments.{name}").SIZES
    for profile, profile_sizes in sizes.items():
        assert equivalence.SHRINK[name](profile_sizes) != profile_sizes, profile
