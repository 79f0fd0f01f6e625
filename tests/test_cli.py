"""Findings 12 and 13 of issue 19: both command lines check their arguments and output folders before any
work and end a failure with one plain line (exit status 2), never a traceback."""
import sys
import types

import pytest

from sparse_tutorial.runs import runner
from sparse_tutorial.experiments.__main__ import main as experiments_main


@pytest.fixture
def never_runs(monkeypatch):
    """A stand-in experiment ``never`` (profiles quick, medium-cpu) that fails the test if it runs."""
    module = types.ModuleType("sparse_tutorial.experiments.never")
    module.PROFILES = ("quick", "medium-cpu")

    def run(profile, seeds):
        raise AssertionError("the experiment ran although its arguments were bad")

    module.run = run
    monkeypatch.setitem(sys.modules, module.__name__, module)
    monkeypatch.setattr(runner, "available", lambda: ["never"])
    monkeypatch.setattr("sparse_tutorial.experiments.__main__.available", lambda: ["never"])


def _one_line_error(capsys) -> str:
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return err.strip().splitlines()[-1]


@pytest.mark.parametrize("arguments, message", [
    (["--seeds", "0"], "argument --seeds: must be >= 1, got 0"),
    (["--profile", "bogus"], "profile must be one of ('quick', 'medium-cpu') for 'never', got 'bogus'"),
])
def test_experiments_bad_arguments_exit_2_before_running(never_runs, capsys, tmp_path, arguments, message):
    with pytest.raises(SystemExit) as caught:
        experiments_main(["never", "--out", str(tmp_path), *arguments])
    assert caught.value.code == 2
    assert _one_line_error(capsys).endswith(message)


def test_experiments_out_that_is_a_file_fails_before_running(never_runs, capsys, tmp_path):
    a_file = tmp_path / "results.json"
    a_file.write_text("{}")
    assert experiments_main(["never", "--out", str(a_file)]) == 2
    assert _one_line_error(capsys).endswith(f"{a_file} is a file, not a folder")
    assert experiments_main(["never", "--out", str(a_file / "sub")]) == 2
    assert f"cannot write in {a_file / 'sub'}" in _one_line_error(capsys)


def test_experiments_help_lists_each_experiments_profiles(capsys):
    with pytest.raises(SystemExit):
        experiments_main(["--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    assert "nmt: quick, medium, full" in help_text and "data:" not in help_text
    assert "classification: quick, medium, full" in help_text
    assert "summarization: quick, medium, full" in help_text


def test_experiments_missing_corpus_names_the_fetch_command(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("SPARSE_TUTORIAL_CACHE", str(tmp_path / "empty-cache"))
    assert experiments_main(["interpretability", "--out", str(tmp_path / "out")]) == 2
    assert _one_line_error(capsys).endswith(
        "not in the cache " + str(tmp_path / "empty-cache" / "rotten_tomatoes")
        + "; fetch it with: python -m sparse_tutorial.data fetch rotten_tomatoes")
