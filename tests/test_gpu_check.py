"""Issue 33: the GPU check's stored result and the full-profile cost model the reproducibility appendix
prints from it (the appendix's numbers are generated, and this test keeps them so)."""
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from sparse_tutorial.runs import cost

REPO = Path(__file__).resolve().parent.parent
APPENDIX = REPO / "book" / "appendix" / "reproducibility.md"
sys.path.insert(0, str(REPO / "tools"))
import gpu_check  # noqa: E402


def generated_blocks() -> list[str]:
    return [block.strip() for block in re.findall(r"<!-- generated: python -m sparse_tutorial\.runs\.cost.*?-->"
                                                  r"\n(.*?)<!-- end generated -->", APPENDIX.read_text(), re.S)]


def test_the_appendix_prints_what_the_stored_gpu_check_says():
    check = cost.gpu_check()
    assert generated_blocks() == [cost.check_summary(check), cost.cost_table(check)]
    # chapters 9-14 and the appendix say that no full grid is bounded within one Colab session
    assert not any(cost.full_grid_estimate(name, check)["fits_one_session"] for name in check["one_epoch"])


def test_the_stored_gpu_check_ran_on_a_gpu_and_names_every_failed_test():
    check = cost.gpu_check()
    tests = check["tests"]
    failed = int(re.match(r"(?:(\d+) failed, )?\d+ passed, \d+ deselected", tests["summary"]).group(1) or 0)
    assert check["device"] != "cpu" and tests["device"] != "cpu"
    assert (tests["returncode"] == 0) == (failed == 0) and len(tests.get("failed", [])) == failed
    assert all(name.split("::")[-1] in cost.check_summary(check) for name in tests.get("failed", []))
    assert set(check["one_epoch"]) == set(gpu_check.PIPELINES)
    assert all(run["run_seconds"] > 0 for run in check["one_epoch"].values())


def test_the_bound_is_runs_times_epochs_times_the_measured_epoch():
    check = {"one_epoch": {"explanation": {"run_seconds": 360.0}}}
    row = cost.full_grid_estimate("explanation", check)
    assert row["runs"] == 6 and row["epochs"] == 8 and row["hours_at_most"] == pytest.approx(6 * 8 * 0.1)
    assert not row["fits_one_session"]
    with pytest.raises(KeyError, match="no one-epoch run of 'explanation' \\(stopped after 300 s\\)"):
        cost.full_grid_estimate("explanation", {"one_epoch": {"explanation": {"error": "stopped after 300 s"}}})
    with pytest.raises(FileNotFoundError, match="run `python tools/gpu_check.py` on a GPU machine"):
        cost.gpu_check(Path("/nonexistent/gpu_check.json"))


def test_one_epoch_sizes_cut_every_epoch_count_and_evaluation_set_however_deeply_nested():
    from sparse_tutorial.experiments import interpretability
    from sparse_tutorial.experiments.nmt import training as nmt_training
    cut = gpu_check.one_epoch_sizes(nmt_training.SIZES["full"])
    assert (cut.epochs, cut.corpus.n_test, cut.corpus.n_train) == (1, 200, 60000)
    tasks = gpu_check.one_epoch_sizes(interpretability.SIZES["full"]).tasks
    assert all(t.epochs == 1 and t.n_test == 200 for t in tasks.values())
    assert cost.most_epochs(nmt_training.SIZES["full"]) == 15 and cost.most_epochs(cut) == 1


def test_without_a_gpu_the_check_says_so(capsys):
    if gpu_check.torch.cuda.is_available():
        pytest.skip("a GPU is present")
    assert gpu_check.main(["--out", "/tmp/unused"]) == 2
    assert "no CUDA device here" in capsys.readouterr().err


def test_the_stored_file_is_json_with_its_command():
    stored = json.loads((REPO / "book" / "results" / "gpu_check.json").read_text())
    assert "tools/gpu_check.py" in stored["command"]


@pytest.mark.parametrize("chapter,name", [("part2/09_nmt_model", "nmt"), ("part2/10_sparse_nmt", "nmt"),
                                          ("part2/11_summarization", "summarization"),
                                          ("part3/12_attention_text_classification", "classification"),
                                          ("part3/13_sparse_interpretability", "interpretability"),
                                          ("part3/14_attention_as_explanation", "explanation")])
def test_each_chapter_states_its_full_grids_bound_as_the_cost_model_gives_it(chapter, name):
    cells = json.loads((REPO / "book" / f"{chapter}.ipynb").read_text())["cells"]
    text = " ".join(" ".join("".join(cell["source"]) for cell in cells if cell["cell_type"] == "markdown").split())
    hours = cost.full_grid_estimate(name, cost.gpu_check())["hours_at_most"]
    assert f"at most {hours:.1f} h on one H200" in text


def test_the_check_refuses_an_unknown_part(capsys):
    with pytest.raises(SystemExit):
        gpu_check.main(["--parts", "tests,bogus"])
    assert "--parts: unknown bogus" in capsys.readouterr().err


def test_a_partial_check_keeps_the_parts_it_did_not_run(tmp_path, monkeypatch):
    (tmp_path / "gpu_check.json").write_text(json.dumps({"one_epoch": {"nmt": {"run_seconds": 1.0}}, "date": "then"}))
    monkeypatch.setattr(gpu_check, "run_tests", lambda out: {"returncode": 0, "summary": "1 passed", "seconds": 0.1})
    assert gpu_check.main(["--allow-cpu", "--out", str(tmp_path), "--parts", "tests"]) == 0
    stored = json.loads((tmp_path / "gpu_check.json").read_text())
    assert stored["one_epoch"] == {"nmt": {"run_seconds": 1.0}} and stored["tests"]["summary"] == "1 passed"
    assert stored["date"] == "then" and stored["tests"]["date"] != "then"   # the timings' date stays theirs
    assert "--parts tests" in stored["command"]


def test_chapters_past_the_time_limit_are_stopped_or_not_started(tmp_path):
    chapters = [REPO / "book" / "part1" / "02_l1_fails.ipynb", REPO / "book" / "part1" / "03_linf.ipynb"]
    report = gpu_check.chapters(tmp_path, seconds=1.0, workers=1, paths=chapters)
    assert report["passed"] == 0 and report["of"] == 2
    assert report["chapters"]["part1/02_l1_fails.ipynb"]["returncode"] not in (0, None)
    assert report["chapters"]["part1/03_linf.ipynb"] == {"returncode": None, "error": ["not started"]}
    assert "02_l1_fails" in (tmp_path / "gpu_check_chapters.log").read_text()


def test_chapter_keeps_the_other_chapters_results_each_with_its_date(tmp_path, monkeypatch):
    before = {"date": "then", "passed": 1, "of": 2, "chapters": {"a.ipynb": {"returncode": 0, "seconds": 1.0},
                                                                  "b.ipynb": {"returncode": 1, "seconds": 2.0}}}
    (tmp_path / "gpu_check.json").write_text(json.dumps({"chapters": before}))
    monkeypatch.setattr(gpu_check, "chapters", lambda *args: {"chapters": {"b.ipynb": {"returncode": 0, "seconds": 3.0}}})
    gpu_check.main(["--allow-cpu", "--out", str(tmp_path), "--parts", "chapters", "--chapter", "b.ipynb"])  # 1: no tests
    stored = json.loads((tmp_path / "gpu_check.json").read_text())["chapters"]
    assert stored["passed"] == 2 and stored["of"] == 2
    assert stored["chapters"]["a.ipynb"] == {"date": "then", "returncode": 0, "seconds": 1.0}
    assert stored["chapters"]["b.ipynb"]["seconds"] == 3.0 and stored["chapters"]["b.ipynb"]["date"] != "then"


def test_chapter_10s_quick_systems_are_trained_side_by_side_only_when_it_runs(tmp_path, monkeypatch):
    started = []
    monkeypatch.setattr(gpu_check, "start_quick_systems", lambda environment, log: started.append(log) or [])
    gpu_check.chapters(tmp_path, seconds=1.0, workers=1, paths=[REPO / "book" / "part1" / "03_linf.ipynb"])
    assert started == []
    gpu_check.chapters(tmp_path, seconds=0.0, workers=1, paths=[REPO / "book" / "part2" / gpu_check.QUICK_SYSTEMS_CHAPTER])
    assert started == [tmp_path / "gpu_check_quick_systems.log"]


def test_the_tests_part_names_the_tests_that_failed(tmp_path, monkeypatch):
    printed = ("..F.\nFAILED tests/test_cuda.py::test_one - RuntimeError: cudnn RNN backward\n"
               "1 failed, 3 passed, 200 deselected in 9.1s\n")
    monkeypatch.setattr(gpu_check.subprocess, "run",
                        lambda *args, **kwargs: subprocess.CompletedProcess(args, 1, stdout=printed, stderr=""))
    report = gpu_check.run_tests(tmp_path)
    assert report["failed"] == ["tests/test_cuda.py::test_one"] and report["returncode"] == 1
    assert report["summary"].startswith("1 failed, 3 passed")


def test_every_chapter_the_gpu_check_names_is_in_the_tree():
    """Chapters renamed since the check ran are renamed in the file too (it says so), so a reader who follows
    a name from it finds the chapter."""
    chapters = json.loads((REPO / "book" / "results" / "gpu_check.json").read_text())["chapters"]
    assert chapters["chapters"] and all((REPO / "book" / name).is_file() for name in chapters["chapters"])
