"""Run profiles and device choice shared by every chapter and experiment.

One ladder for every experiment: ``quick`` is what the committed notebooks execute (small corpus slices and
models that run on two CPU cores in minutes; CI executes it); ``medium`` is the stored run of each
experiment, sized for a shared 2-core CPU (an hour or two of background time, ``--workers 2``); ``full`` is
the paper-style size, meant for a GPU (e.g. Colab). Each experiment module maps these names to its sizes.

The profile comes from the environment variable ``SPARSE_TUTORIAL_PROFILE`` (or its short alias ``PROFILE``),
so ``PROFILE=full jupyter nbconvert --execute ...`` switches a whole run; a notebook may also pass the name
explicitly from its parameter cell.
"""
from __future__ import annotations

import os
import random

import numpy as np
import torch

PROFILES = ("quick", "medium", "full")
"""The run profiles, smallest first: ``quick`` (CPU, what the notebooks execute), ``medium`` (CPU, the stored
runs) and ``full`` (paper-style, GPU)."""


def profile(name: str | None = None) -> str:
    """Return the active profile name: ``name`` if given, else the environment, else ``"quick"``.

    Raises:
        ValueError: if the requested profile is not one of :data:`PROFILES`.
    """
    chosen = name or os.environ.get("SPARSE_TUTORIAL_PROFILE") or os.environ.get("PROFILE") or "quick"
    chosen = chosen.strip().lower()
    if chosen not in PROFILES:
        raise ValueError(f"profile must be one of {PROFILES}, got {chosen!r}")
    return chosen


def default_device() -> torch.device:
    """The GPU when one is visible (Colab, a workstation), else the CPU."""
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def training_device(profile_name: str) -> torch.device:
    """Where the Part III experiments train at ``profile_name``: :func:`default_device` for ``"full"``; the
    CPU for the smaller profiles, so that the stored quick and medium numbers do not depend on the hardware."""
    profile(profile_name)   # refuses a name off the ladder
    return default_device() if profile_name == "full" else torch.device("cpu")


def seed_everything(seed: int) -> None:
    """Seed Python, NumPy and PyTorch (all devices) so a run is repeatable on the same hardware."""
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
