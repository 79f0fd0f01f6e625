"""Tests of sparse_tutorial.projections.fused, the compiled CPU kernel behind sparsemax and entmax15.

tests/test_projections.py runs every projection test on the kernel and on the eager code; here: the
kernel against the eager code on both of its layouts, its builds for other CPUs, threads and fork,
compilation and its fallback.
"""
from __future__ import annotations

import logging
import multiprocessing
import os
import platform
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
import torch

from sparse_tutorial import Attention, entmax15, sparsegen_lin, sparsemax
from sparse_tutorial.projections import fused
from sparse_tutorial.hardware import cpu_backend

PROJECTIONS = {"sparsemax": sparsemax, "entmax15": entmax15}


def _scores(*shape: int, scale: float = 1.0, seed: int = 0, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=dtype) * scale


def _weights_and_gradient(projection, scores: torch.Tensor, upstream: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    leaf = scores.clone().requires_grad_(True)
    weights = projection(leaf)
    return weights.detach(), torch.autograd.grad(weights, leaf, upstream)[0]


def _assert_kernel_matches_eager(name: str, scores: torch.Tensor, upstream: torch.Tensor, atol: float = 1e-6) -> None:
    """The kernel's weights and input gradient equal the eager code's (both are exact; rounding differs)."""
    assert fused.KERNEL.ready(), fused.KERNEL.failure
    kernel = _weights_and_gradient(PROJECTIONS[name], scores, upstream)
    with fused.eager():
        eager = _weights_and_gradient(PROJECTIONS[name], scores, upstream)
    torch.testing.assert_close(kernel[0], eager[0], atol=atol, rtol=0)
    torch.testing.assert_close(kernel[1], eager[1], atol=10 * atol, rtol=0)


@pytest.fixture
def fresh_kernel(monkeypatch, tmp_path):
    """A kernel not yet built, in place of the process's (e.g. to build it for another target), with an empty
    kernel cache."""
    kernel = fused.Kernel()
    monkeypatch.setattr(fused, "KERNEL", kernel)
    monkeypatch.setenv("SPARSE_TUTORIAL_CACHE", str(tmp_path / "cache"))
    return kernel


@pytest.mark.parametrize("name", PROJECTIONS)
@pytest.mark.parametrize("length", [1, 2, 7, 8, 9, 16, 17, 64, 127, 128, 129, 300, 5000])
@pytest.mark.parametrize("rows", [1, 7, 8, 9, 16, 17, 33])
def test_both_layouts_with_partial_blocks_and_vectors(name, rows, length):
    """Rows up to 128 long go one per lane in blocks of 8 or 16 rows, longer ones in vectors of 8 or 16
    scores; neither blocks nor vectors need fill up."""
    _assert_kernel_matches_eager(name, _scores(rows, length, scale=3), _scores(rows, length, seed=1))


@pytest.mark.parametrize("name", PROJECTIONS)
@pytest.mark.parametrize("length", [40, 1024])
def test_flat_rows_that_need_many_steps_are_exact(name, length):
    scores = _scores(64, length, scale=0.001)  # a large support: many steps, a different count per row
    assert (PROJECTIONS[name](scores) > 0).sum(1).min() > length // 2
    _assert_kernel_matches_eager(name, scores, _scores(64, length, seed=1))


@pytest.mark.parametrize("name", PROJECTIONS)
def test_double_precision_rows(name):
    _assert_kernel_matches_eager(name, _scores(20, 300, scale=2, dtype=torch.float64),
                                 _scores(20, 300, seed=1, dtype=torch.float64), atol=1e-12)


def test_sparsegen_uses_the_kernel_too():
    scores, upstream = _scores(9, 50, scale=2), _scores(9, 50, seed=1)
    kernel = _weights_and_gradient(lambda s: sparsegen_lin(s, 0.6), scores, upstream)
    with fused.eager():
        eager = _weights_and_gradient(lambda s: sparsegen_lin(s, 0.6), scores, upstream)
    torch.testing.assert_close(kernel, eager, atol=1e-6, rtol=0)


def test_the_portable_build_gives_the_same_results(fresh_kernel, monkeypatch):
    """Without -march and OpenMP (the second flag set, for compilers that lack them): 16-byte vectors."""
    monkeypatch.setattr(fused, "compiler_flags", lambda: [["-O3", "-std=c++17"]])
    for name in PROJECTIONS:
        for shape in [(33, 20), (5, 300)]:
            _assert_kernel_matches_eager(name, _scores(*shape, scale=3), _scores(*shape, seed=1))
    assert fused.describe_kernel()["vector_bytes"] == 16


_X86 = platform.machine() in ("x86_64", "AMD64")


@pytest.mark.skipif(not _X86, reason="x86-64 targets")
@pytest.mark.parametrize("march, flag, vector_bytes", [("x86-64-v3", "avx2", 32), ("x86-64-v4", "avx512f", 64)])
def test_builds_for_avx2_and_avx512_cpus_give_the_same_results(fresh_kernel, monkeypatch, march, flag, vector_bytes):
    """The kernel's vectors are as wide as the target's registers (a kernel for wider ones loses to eager)."""
    if flag not in cpu_backend()["vector_flags"]:
        pytest.skip(f"this CPU cannot run {march} code")
    monkeypatch.setenv("SPARSE_TUTORIAL_MARCH", march)
    for name in PROJECTIONS:
        for shape in [(33, 20), (40, 128), (5, 300)]:
            _assert_kernel_matches_eager(name, _scores(*shape, scale=3), _scores(*shape, seed=1))
    description = fused.describe_kernel()
    assert description["march"] == march and description["vector_bytes"] == vector_bytes
    assert f"-march={march}" in description["flags"]


def test_threads_change_nothing():
    scores = _scores(2048, 48)  # enough scores for the kernel to use every thread
    threads = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        alone = {name: projection(scores) for name, projection in PROJECTIONS.items()}
        torch.set_num_threads(max(2, threads))
        for name, projection in PROJECTIONS.items():
            assert torch.equal(projection(scores), alone[name])
    finally:
        torch.set_num_threads(threads)


def _kernel_weights_in_child(scores: torch.Tensor) -> float:
    """Run in a forked child: the kernel only (torch's own parallel ops would hang here, see below)."""
    weights, _, _ = fused.KERNEL.forward("sparsemax", scores)
    return float(weights.numpy().sum(dtype="float64"))


@pytest.mark.skipif("fork" not in multiprocessing.get_all_start_methods(), reason="needs fork")
def test_a_forked_child_runs_the_kernel_after_the_parent_used_threads():
    """GNU OpenMP waits forever in a child forked after the parent ran a parallel region (torch's own
    operations too, unless the child calls torch.set_num_threads(1) as DataLoader workers do); the kernel
    runs on one thread there, without OpenMP. Without that guard this child hangs."""
    scores = _scores(4096, 48)
    threads = torch.get_num_threads()
    try:
        torch.set_num_threads(2)
        fused.KERNEL.forward("sparsemax", scores)  # a parallel region in the parent
        with multiprocessing.get_context("fork").Pool(1) as pool:
            total = pool.apply_async(_kernel_weights_in_child, (scores,)).get(timeout=60)
    finally:
        torch.set_num_threads(threads)
    assert total == pytest.approx(4096, rel=1e-6)


def test_compilation_happens_once_and_is_logged(fresh_kernel, caplog):
    with caplog.at_level(logging.INFO, logger="sparse_tutorial.projections.fused"):
        sparsemax(_scores(4, 5))
        entmax15(_scores(4, 6, dtype=torch.float64))
    assert sum("compiling" in r.getMessage() for r in caplog.records) == 1


_FIRST_CALL = """import logging, sys, time
logging.basicConfig(level=logging.INFO, stream=sys.stdout, format="%(message)s")
import torch
from sparse_tutorial import sparsemax
scores = torch.randn(4, 6)
tic = time.perf_counter()
sparsemax(scores)
print(f"first call {time.perf_counter() - tic:.3f} s")
"""


def _first_call(cache: Path) -> str:
    """What a new process logs and prints when it first calls sparsemax, with the kernel cache in ``cache``."""
    return subprocess.run([sys.executable, "-c", _FIRST_CALL], env={**os.environ, "SPARSE_TUTORIAL_CACHE": str(cache)},
                          capture_output=True, text=True, check=True).stdout


def test_the_kernel_is_compiled_once_per_machine_and_a_later_process_loads_it(tmp_path):
    first, later = _first_call(tmp_path), _first_call(tmp_path)
    assert "compiling the projection kernel" in first and "compiling" not in later
    assert "loaded the cached kernel" in later
    assert float(later.split("first call ")[1].split()[0]) < 1.0
    assert len(list((tmp_path / "kernels").glob("fused_sparsemax-*.so"))) == 1


def test_a_broken_cached_kernel_is_built_again(tmp_path):
    _first_call(tmp_path)
    (cached,) = (tmp_path / "kernels").glob("fused_sparsemax-*.so")
    cached.unlink()  # a new file (no process maps the old one), as a truncated copy would be
    cached.write_bytes(b"not a shared library")
    assert "compiling the projection kernel" in _first_call(tmp_path)


def test_other_flags_build_another_cached_kernel(fresh_kernel, monkeypatch):
    sparsemax(_scores(4, 5))
    monkeypatch.setattr(fused, "KERNEL", fused.Kernel())
    monkeypatch.setattr(fused, "compiler_flags", lambda: [["-O2", "-std=c++17"]])
    torch.testing.assert_close(sparsemax(_scores(4, 5)), _eager(sparsemax, _scores(4, 5)))
    assert len(list(fused.kernel_cache_dir().glob("fused_sparsemax-*.so"))) == 2


@pytest.mark.parametrize("compiler, message", [(None, "no C.. compiler found"), ("false", "false failed")])
def test_without_a_working_compiler_it_is_eager_with_one_warning(fresh_kernel, monkeypatch, compiler, message):
    monkeypatch.setattr(fused, "_compiler", lambda: compiler)
    scores = _scores(8, 9)
    with pytest.warns(RuntimeWarning, match=message):
        weights = sparsemax(scores)
    with warnings.catch_warnings():  # the second call is quiet
        warnings.simplefilter("error")
        torch.testing.assert_close(entmax15(scores), _eager(entmax15, scores))
    torch.testing.assert_close(weights, _eager(sparsemax, scores))
    assert not fused.describe_kernel()["compiled"]


def _eager(projection, scores: torch.Tensor) -> torch.Tensor:
    with fused.eager():
        return projection(scores)


def test_environment_variable_turns_the_kernel_off(monkeypatch):
    monkeypatch.setenv("SPARSE_TUTORIAL_KERNEL", "0")
    kernel = fused.Kernel()
    assert not kernel.ready() and not kernel.describe()["compiled"] and kernel.library is None


def test_eager_context_restores_the_kernel():
    assert fused.KERNEL.ready()
    with fused.eager():
        assert not fused.KERNEL.ready()
    assert fused.KERNEL.ready()


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU")
def test_on_a_gpu_the_eager_code_runs():
    scores = _scores(8, 40).cuda()
    torch.testing.assert_close(sparsemax(scores).cpu(), _eager(sparsemax, scores.cpu()), atol=1e-6, rtol=0)


def test_use_in_attention_equals_the_eager_code():
    attention = Attention("dot", projection="sparsemax")
    query, keys = _scores(2, 4), _scores(2, 9, 4, seed=1)
    mask = torch.ones(2, 9, dtype=torch.bool)
    weights = attention(query, keys, mask=mask)[1]
    with fused.eager():
        torch.testing.assert_close(weights, attention(query, keys, mask=mask)[1], atol=1e-6, rtol=0)
