"""Findings 8, 12 and 14 of issue 19 on the results side: a results JSON is never lost or broken, it is
strict JSON, and a bad results folder fails before the experiment runs."""
import json
import math
import shutil
import sys
import types
from pathlib import Path

import pytest

from sparse_tutorial.atomic import UnwritableDirectoryError
from sparse_tutorial.experiments import write_results
from sparse_tutorial.runs import runner


def _strict_loads(text: str):
    def refuse(constant: str):
        raise ValueError(f"not strict JSON: {constant}")

    return json.loads(text, parse_constant=refuse)


@pytest.fixture
def counted_experiment(monkeypatch):
    """A stand-in experiment ``counted`` whose ``runs`` list records every call of its ``run``."""
    module = types.ModuleType("sparse_tutorial.experiments.counted")
    module.runs = []

    def run(profile, seeds):
        module.runs.append((profile, seeds))
        return {"corpus": {"name": "toy"}, "score": float("nan"), "curve": [1.0, float("inf"), -float("inf")]}

    module.run = run
    monkeypatch.setitem(sys.modules, module.__name__, module)
    monkeypatch.setattr(runner, "available", lambda: ["counted"])
    return module


def test_disk_full_keeps_the_previous_results(tmp_path, fill_disk_mid_write):
    write_results("exp", {"bleu": 30.1}, tmp_path)
    fill_disk_mid_write()
    with pytest.raises(OSError, match="No space left"):
        write_results("exp", {"bleu": 31.0, "curve": list(range(5000))}, tmp_path)
    assert json.loads((tmp_path / "exp.json").read_text()) == {"bleu": 30.1}
    assert [p.name for p in tmp_path.iterdir()] == ["exp.json"]


def test_two_concurrent_writers_leave_one_whole_file(tmp_path, interrupt_next_write):
    first = {"writer": "first", "curve": list(range(3000))}
    second = {"writer": "second", "curve": list(range(2000))}
    interrupt_next_write(lambda: write_results("exp", second, tmp_path))
    write_results("exp", first, tmp_path)
    assert json.loads((tmp_path / "exp.json").read_text()) == first


def test_results_are_strict_json_with_null_for_non_finite(tmp_path):
    path = write_results("exp", {"dev": [0.5, float("nan")], "nested": {"x": (math.inf,)}, "n": 3}, tmp_path)
    assert _strict_loads(path.read_text()) == {"dev": [0.5, None], "nested": {"x": [None]}, "n": 3}


def test_results_folder_is_checked_before_the_experiment_runs(counted_experiment, tmp_path):
    a_file = tmp_path / "out.json"
    a_file.write_text("{}")
    with pytest.raises(UnwritableDirectoryError, match="is a file, not a folder"):
        runner.run_experiment("counted", directory=a_file)
    assert counted_experiment.runs == []


def test_results_are_rescued_when_the_disk_fills_after_the_run(counted_experiment, tmp_path, fill_disk_mid_write):
    fill_disk_mid_write()
    with pytest.raises(runner.ResultsNotWrittenError, match="saved to") as caught:
        runner.run_experiment("counted", directory=tmp_path)
    rescued = Path(str(caught.value).rsplit("saved to ", 1)[1].removesuffix(" instead"))
    stored = _strict_loads(rescued.read_text())
    shutil.rmtree(rescued.parent)
    assert stored["experiment"] == "counted" and stored["score"] is None and stored["curve"] == [1.0, None, None]
    assert not (tmp_path / "counted.json").exists()


class _InstalledFromGit:
    """A stand-in for ``importlib.metadata.distribution`` of a package pip installed from a repository."""

    def read_text(self, name: str) -> str | None:
        return json.dumps({"url": "https://example.org/repo.git", "vcs_info": {"vcs": "git", "commit_id": "abc123"}}) \
            if name == "direct_url.json" else None


def test_results_from_a_pip_install_record_the_commit_pip_installed(monkeypatch):
    """Outside a clone ``git rev-parse`` fails; the commit comes from pip's ``direct_url.json`` (was ``null``)."""
    def no_git(*args, **kwargs):
        raise OSError("not a git repository")

    monkeypatch.setattr(runner.subprocess, "run", no_git)
    monkeypatch.setattr(runner.metadata, "distribution", lambda name: _InstalledFromGit())
    assert runner._git_commit() == "abc123"
    monkeypatch.setattr(runner.metadata, "distribution", lambda name: types.SimpleNamespace(read_text=lambda n: None))
    assert runner._git_commit() is None  # installed from a wheel or an index: no commit to record
    assert runner._git_dirty() is None  # and no clone whose changes could be seen
