"""The stored outputs hold on another CPU: strict nbval of the chapters that train under another back end.

`make book` stores each chapter's outputs from the machine that executed it; CI, a contributor or a reader
may have another CPU. Trained numbers then move in the 2nd-3rd digit (ATen, oneDNN and MKL pick other
vector kernels, other thread counts reduce in another order), so the chapters tag the cells that print
them ``machine-dependent`` (nbval ignores their text, their asserts still run) and compare the rest digit
for digit. This test proves the split is right: it re-executes every chapter of Parts I, II and III (Part I
trains its running example, the lookup, in chapters 3-8) under an imitation of another CPU
(tools/imitate_cpu.py: AVX2 kernels on an AVX-512 machine, scalar kernels on an AVX2 one, one thread either
way; the library's own kernel is compiled for that CPU too) and runs strict nbval against the stored
outputs. The closing part and the appendix train nothing; the main nbval run compares them on the CI machine
itself. Part I is also re-executed on the eager PyTorch code instead of the compiled kernel (a reader without
a C++ compiler): its printed projections must not depend on which path ran.

Takes about as long as the chapters themselves (8-10 minutes on a 2-core CPU).
"""
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT / "tools"))
from imitate_cpu import capability_under, environment_for, other_than_native  # noqa: E402

TRAINING_CHAPTERS = sorted((REPO_ROOT / "book").glob("part[123]/*.ipynb"))
PART_ONE = REPO_ROOT / "book" / "part1"


def _strict_nbval(target: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "--no-header", str(target)]
    return subprocess.run(command, cwd=REPO_ROOT, env=env, capture_output=True, text=True)


@pytest.fixture(scope="module")
def imitation() -> str:
    name = other_than_native()
    assert capability_under(name)[0] != capability_under("native")[0], f"{name} changes nothing on this CPU"
    return name


def test_every_chapter_that_trains_is_checked():
    assert len(TRAINING_CHAPTERS) >= 14 and any(path.parent.name == "part1" for path in TRAINING_CHAPTERS)


@pytest.mark.parametrize("chapter", TRAINING_CHAPTERS, ids=lambda path: path.stem)
def test_stored_outputs_hold_on_another_cpu(chapter, imitation):
    result = _strict_nbval(chapter, environment_for(imitation))
    report = (result.stdout + result.stderr)[-6000:]
    assert result.returncode == 0, f"{chapter.name} under {imitation} ({capability_under(imitation)}):\n{report}"


def test_part_one_prints_the_same_on_the_eager_code():
    result = _strict_nbval(PART_ONE, environment_for("native", {**os.environ, "SPARSE_TUTORIAL_KERNEL": "0"}))
    assert result.returncode == 0, (result.stdout + result.stderr)[-6000:]
