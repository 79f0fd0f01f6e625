"""Issue 21: a chapter's claims fail at its default knobs (and under CI) and only warn when a reader has
turned a knob."""
import pytest

from sparse_tutorial.stats.claims import ClaimChecker, ClaimWarning


def test_a_failing_claim_raises_at_the_default_knobs(monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    check = ClaimChecker(LAMBDA=(0.5, 0.5))
    assert check(True, "holds") is None  # nothing to display on a cell's last line
    with pytest.raises(AssertionError, match="claim does not hold: entropy falls"):
        check(False, "entropy falls")


def test_a_failing_claim_only_warns_when_a_knob_was_turned(monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    check = ClaimChecker(LAMBDA=(2.0, 0.5), TEMPERATURE=(1.0, 1.0))
    assert check.changed == {"LAMBDA": 2.0} and not check.strict
    with pytest.warns(ClaimWarning, match=r"at LAMBDA=2.0 this claim does not hold: entropy falls .*LAMBDA=0.5"):
        check(False, "entropy falls")


def test_ci_is_always_strict(monkeypatch):
    monkeypatch.setenv("CI", "true")
    with pytest.raises(AssertionError):
        ClaimChecker(LAMBDA=(2.0, 0.5))(False, "entropy falls")


def test_knobs_must_be_pairs():
    with pytest.raises(TypeError, match="knob LAMBDA must be given as \\(current, default\\)"):
        ClaimChecker(LAMBDA=0.5)
