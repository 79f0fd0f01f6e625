"""Claims that a chapter checks at its default knobs and only reports when a reader has turned them.

Every chapter states claims about what it computes ("the entropy falls as λ grows") and checks them, so
the book fails its tests when the science stops holding. A reader who changes a knob of the chapter's
``parameters`` cell (a λ, a temperature, the systems to train) is running a new experiment, in which a
claim may fairly fail; an ``AssertionError`` would stop the notebook there. :class:`ClaimChecker` makes
the difference:

* at the chapter's default knobs (and always under CI, where ``CI`` is set) a claim that does not hold
  raises :class:`AssertionError`, naming the claim;
* at other knob values it warns (:class:`ClaimWarning`), naming the claim and the knobs that changed, and
  the notebook goes on.

Example::

    LAMBDA = 0.5  # in the parameters cell
    check = ClaimChecker(LAMBDA=(LAMBDA, 0.5))  # (current value, default value) of every knob
    check(entropy[-1] < entropy[0], "a larger λ gives sharper attention")
"""
from __future__ import annotations

import os
import warnings
from typing import Any


class ClaimWarning(UserWarning):
    """A chapter's claim did not hold at the knob values a reader chose."""


class ClaimChecker:
    """Checks a chapter's claims: strict at the default knobs or under CI, a warning otherwise.

    Args:
        **knobs: ``NAME=(current, default)`` for every knob of the chapter's parameters cell.
    """

    def __init__(self, **knobs: tuple[Any, Any]) -> None:
        for name, pair in knobs.items():
            if not (isinstance(pair, tuple) and len(pair) == 2):
                raise TypeError(f"knob {name} must be given as (current, default), got {pair!r}")
        self.knobs = knobs

    @property
    def changed(self) -> dict[str, Any]:
        """``{name: current}`` of the knobs whose current value differs from the default."""
        return {name: current for name, (current, default) in self.knobs.items() if current != default}

    @property
    def strict(self) -> bool:
        """``True`` when a failing claim raises (every knob at its default, or ``CI`` set)."""
        return not self.changed or bool(os.environ.get("CI"))

    def __call__(self, holds: bool, claim: str) -> None:
        """Check that ``claim`` ``holds`` (returns nothing, so a check on a cell's last line prints nothing).

        Raises:
            AssertionError: if the claim does not hold and :attr:`strict`.
        """
        if bool(holds):
            return
        if self.strict:
            raise AssertionError(f"claim does not hold: {claim}")
        defaults = ", ".join(f"{name}={default!r}" for name, (_, default) in self.knobs.items())
        turned = ", ".join(f"{name}={value!r}" for name, value in self.changed.items())
        warnings.warn(f"at {turned} this claim does not hold: {claim} (the chapter checks it at its default "
                      f"knobs, {defaults})", ClaimWarning, stacklevel=2)
