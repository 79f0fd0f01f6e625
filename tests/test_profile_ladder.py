"""One profile ladder (quick / medium / full) that every experiment honours (sparse_tutorial.profiles)."""
import pytest

from sparse_tutorial.runs.runner import accepted_profiles, available
from sparse_tutorial.profiles import PROFILES, profile, training_device


def test_the_ladder_is_quick_medium_full():
    assert PROFILES == ("quick", "medium", "full")
    assert [profile(name) for name in PROFILES] == list(PROFILES)


@pytest.mark.parametrize("name", ["medium-cpu", "bogus"])
def test_a_name_off_the_ladder_is_refused(name):
    with pytest.raises(ValueError, match="profile must be one of"):
        profile(name)
    with pytest.raises(ValueError, match="profile must be one of"):
        training_device(name)


@pytest.mark.parametrize("experiment", available())
def test_every_experiment_accepts_exactly_the_ladder(experiment):
    assert accepted_profiles(experiment) == PROFILES
