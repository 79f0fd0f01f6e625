"""Issue 20: an experiment's runs give the same numbers serially, in Ray workers and in local processes, are
stored as they finish, and a rerun resumes where an interrupted sweep stopped."""
import functools
import json
from dataclasses import replace

import pytest

from sparse_tutorial import training
from sparse_tutorial.experiments import alignment, nmt
from sparse_tutorial.runs import runner, sweep
from sparse_tutorial.experiments.__main__ import main
from sparse_tutorial.runs.sweep import Run, RayMissingError, run_sweep


TOY_RUNS = [nmt.system_run("quick", nmt.SYSTEMS[name], seed) for name in ("NMT", "+Sparsemax") for seed in (0, 1)]


def without_timings(result: dict) -> dict:
    """A run's result without wall-clock measurements, which no two executions share."""
    return {key: without_timings(value) if isinstance(value, dict) else value for key, value in result.items()
            if key not in ("tokens_per_second", "train_seconds", "seconds")}


def test_runs_give_the_same_numbers_serially_and_in_two_ray_workers(tmp_path, toy_translation):
    ray = pytest.importorskip("ray")
    data, sizes = toy_translation
    execute = functools.partial(nmt.execute, data=data, device="cpu", sizes=sizes)
    serial = run_sweep(TOY_RUNS, execute, threads_per_run=1, progress=False)
    try:
        parallel = run_sweep(TOY_RUNS, execute, workers=2, threads_per_run=1, run_dir=tmp_path, progress=False)
        assert ray.cluster_resources()["CPU"] == 2
    finally:
        ray.shutdown()
    assert [without_timings(r) for r in parallel] == [without_timings(r) for r in serial]
    assert serial[0]["metrics"]["bleu"] != serial[1]["metrics"]["bleu"] or serial[0]["outputs"] != serial[1]["outputs"]
    stored = [json.loads((tmp_path / f"{run.key}.json").read_text()) for run in TOY_RUNS]
    assert {record["threads"] for record in stored} == {1} and all(r["worker_max_rss_mb"] > 0 for r in stored)
    assert [record["result"] for record in stored] == parallel


def counting_execute(calls: list, fail_on: Run | None = None):
    def execute(run: Run) -> dict:
        calls.append(run)
        if run == fail_on:
            raise RuntimeError("preempted")
        print(f"training {run.key}")
        return {"seed": run["seed"], "score": run["seed"] / 3, "undefined": float("nan")}
    return execute


GRID = [Run.of("system", name=name, seed=seed) for name in ("a", "b") for seed in range(3)]


def test_an_interrupted_sweep_resumes_where_it_stopped(tmp_path):
    calls: list = []
    with pytest.raises(RuntimeError, match="preempted"):
        run_sweep(GRID, counting_execute(calls, fail_on=GRID[4]), run_dir=tmp_path, progress=False)
    assert calls == GRID[:5] and len(list(tmp_path.glob("*.json"))) == 4
    assert (tmp_path / f"{GRID[0].key}.log").read_text() == f"training {GRID[0].key}\n"
    calls.clear()
    results = run_sweep(GRID, counting_execute(calls), run_dir=tmp_path, progress=False)
    assert calls == GRID[4:]  # the four stored runs were not redone
    assert results == [{"seed": run["seed"], "score": run["seed"] / 3, "undefined": None} for run in GRID]
    calls.clear()
    assert run_sweep(GRID, counting_execute(calls), run_dir=tmp_path, fresh=True, progress=False) == results
    assert calls == GRID


class Preempted(Exception):
    """The session ended."""


@pytest.mark.parametrize("experiment", ["nmt", "alignment"])
def test_a_run_killed_mid_training_resumes_from_its_last_epoch(tmp_path, monkeypatch, toy_translation,
                                                              toy_alignment, experiment):
    """A run whose training is killed after its first epoch continues from that epoch's checkpoint when the
    sweep runs again, and stores the record the uninterrupted run stores; the nmt run resumes under new code
    shown equivalent to the code that wrote the checkpoint."""
    if experiment == "nmt":
        data, sizes = toy_translation
        run = nmt.system_run("quick", nmt.SYSTEMS["+Sparsemax"], 0)
        execute = functools.partial(nmt.execute, data=data, device="cpu", sizes=replace(sizes, epochs=3))
    else:
        data, sizes = toy_alignment
        run = alignment.runs_of("quick", 1)[1]
        execute = functools.partial(alignment.execute, alignment=data, device="cpu",
                                    sizes=replace(sizes, epochs=3, patience=None))
    straight = run_sweep([run], execute, progress=False)
    save = training.save_checkpoint
    saves = []

    def killed_after_one_epoch(path, state):
        if saves:
            raise Preempted
        saves.append(path)
        save(path, state)

    monkeypatch.setattr(training, "save_checkpoint", killed_after_one_epoch)
    with pytest.raises(Preempted):
        run_sweep([run], execute, run_dir=tmp_path, progress=False, identity={"code": "abc"})
    assert [p.name for p in saves] == [f"{run.key}.code-abc.train0.ckpt"] and saves[0].exists()
    monkeypatch.setattr(training, "save_checkpoint", save)
    identity = {"code": "abc"} if experiment == "alignment" else {"code": "def", "equivalent_codes": ["abc"]}
    resumed = run_sweep([run], execute, run_dir=tmp_path, progress=False, identity=identity)
    assert without_timings(resumed[0]) == without_timings(straight[0])
    record = json.loads((tmp_path / f"{run.key}.json").read_text())
    assert record["resumed_checkpoints"] == [f"{run.key}.code-{identity['code']}.train0.ckpt"]
    assert not list(tmp_path.glob("*.ckpt"))  # deleted once the record is stored


def test_only_checkpoints_of_equivalent_code_are_adopted_and_own_ones_come_first(tmp_path):
    run = GRID[0]
    for code in ("old", "other"):
        (tmp_path / f"{run.key}.code-{code}.train0.ckpt").write_text(code)
    sweep._adopt_checkpoints(tmp_path, run, "new", ["unrelated"])
    assert not sweep._checkpoints(tmp_path, run, "new")
    sweep._adopt_checkpoints(tmp_path, run, "new", ["old"])
    assert [p.read_text() for p in sweep._checkpoints(tmp_path, run, "new")] == ["old"]
    sweep._adopt_checkpoints(tmp_path, run, "new", ["other"])  # "new" has its own now
    assert [p.read_text() for p in sweep._checkpoints(tmp_path, run, "new")] == ["old"]
    assert sweep._checkpoints(tmp_path, run, "other")


def test_a_run_is_named_by_its_whole_config():
    assert Run.of("system", seed=0, name="a") == Run.of("system", name="a", seed=0)
    keys = {run.key for run in GRID} | {Run.of("system", name="a/b", seed=0).key, Run.of("system", name="a_b", seed=0).key}
    assert len(keys) == len(GRID) + 2 and all("/" not in key for key in keys)
    assert Run.of("lambda", lam=[1, 2])["lam"] == (1, 2)
    with pytest.raises(TypeError):
        Run.of("system", data=object())


def test_bad_sweep_arguments_are_named():
    with pytest.raises(ValueError, match="workers"):
        run_sweep(GRID, counting_execute([]), workers=0)


def test_without_ray_the_command_line_runs_serially_and_says_how_to_parallelise(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(sweep, "ray_available", lambda: False)
    monkeypatch.setattr(runner, "ray_available", lambda: False)
    module = type(sweep)("sparse_tutorial.experiments.fake")
    module.grid = lambda profile, seeds: [Run.of("seed", seed=seed) for seed in range(seeds)]
    module.execute = lambda run: {"seed": run["seed"]}
    module.assemble = lambda profile, seeds, runs, results: {"corpus": {"name": "toy"}, "seeds_seen": results}
    monkeypatch.setitem(__import__("sys").modules, "sparse_tutorial.experiments.fake", module)
    monkeypatch.setattr(runner, "available", lambda: ["fake"])
    monkeypatch.setattr("sparse_tutorial.experiments.__main__.available", lambda: ["fake"])
    assert main(["fake", "--seeds", "2", "--out", str(tmp_path)]) == 0
    assert "pip install 'sparse_tutorial[ray]'" in capsys.readouterr().err
    written = json.loads((tmp_path / "fake.json").read_text())
    assert written["seeds_seen"] == [{"seed": 0}, {"seed": 1}]
    assert len(list((tmp_path / "runs" / "fake-quick").glob("*.json"))) == 2
    # what the runs cost is kept when a second call only reassembles the stored runs
    assert written["runs_compute"]["runs"] == 2 and written["runs_compute"]["threads"] == [1]
    assert main(["fake", "--seeds", "2", "--out", str(tmp_path)]) == 0
    assert json.loads((tmp_path / "fake.json").read_text())["runs_compute"] == written["runs_compute"]
    assert isinstance(written["git_dirty"], bool)  # this test runs in a clone
    assert main(["fake", "--address", "auto", "--out", str(tmp_path)]) == 2
    assert "needs Ray" in capsys.readouterr().err
    with pytest.raises(RayMissingError):
        run_sweep(GRID, counting_execute([]), address="auto")


def test_without_ray_local_processes_give_the_serial_numbers(tmp_path, toy_translation, monkeypatch):
    """``workers=2`` without Ray: two spawned processes share the grid and store the same records."""
    monkeypatch.setattr(sweep, "ray_available", lambda: False)
    data, sizes = toy_translation
    execute = functools.partial(nmt.execute, data=data, device="cpu", sizes=sizes)
    serial = run_sweep(TOY_RUNS[:3], execute, threads_per_run=1, progress=False)
    parallel = run_sweep(TOY_RUNS[:3], execute, workers=2, threads_per_run=1, run_dir=tmp_path, progress=False)
    assert [without_timings(r) for r in parallel] == [without_timings(r) for r in serial]
    assert len({json.loads((tmp_path / f"{run.key}.json").read_text())["host"] for run in TOY_RUNS[:3]}) == 1
    assert len(list(tmp_path.glob("*.json"))) == 3
