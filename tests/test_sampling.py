"""Evaluation subsets: seeded, label-stratified, the same on every call, refused when unrepresentative."""
import pytest

from sparse_tutorial.data.sampling import SHARE_TOLERANCE, UnrepresentativeSubsetError, stratified_sample

SORTED_SPLIT = [1] * 536 + [0] * 521  # a test split stored sorted by label, as Rotten Tomatoes' nearly is


def test_a_label_sorted_split_gives_a_subset_with_its_shares():
    subset = stratified_sample(SORTED_SPLIT, 80, seed=0)
    assert len(subset.indices) == 80 and list(subset.indices) == sorted(set(subset.indices))
    assert abs(subset.label_shares[1] - subset.split_shares[1]) <= SHARE_TOLERANCE
    first_80 = SORTED_SPLIT[:80]
    assert sum(first_80) / 80 == 1.0  # what the first rows would have given
    assert min(subset.indices) < 100 and max(subset.indices) > 1000  # drawn from the whole split


def test_the_same_seed_gives_the_same_subset_and_another_seed_another():
    first, again = stratified_sample(SORTED_SPLIT, 200, seed=3), stratified_sample(SORTED_SPLIT, 200, seed=3)
    assert first == again and first.index_sha256 == again.index_sha256
    assert stratified_sample(SORTED_SPLIT, 200, seed=4).indices != first.indices


def test_the_record_names_size_shares_and_index_hash():
    record = stratified_sample(SORTED_SPLIT, 500, seed=0, split="rotten_tomatoes test").record()
    assert record["size"] == 500 and record["split"] == "rotten_tomatoes test"
    assert set(record["label_shares"]) == set(record["split_shares"]) == {"0", "1"}
    assert len(record["index_sha256"]) == 64


def test_a_count_at_least_the_split_is_the_whole_split():
    subset = stratified_sample([0, 1, 1], 10)
    assert subset.indices == (0, 1, 2) and subset.label_shares == subset.split_shares


def test_an_unrepresentative_subset_is_refused_naming_the_split_and_shares():
    with pytest.raises(UnrepresentativeSubsetError, match=r"split 'newsgroups test' .*label shares"):
        stratified_sample([0] * 50 + [1] * 30 + [2] * 20, 3, split="newsgroups test")


@pytest.mark.parametrize("labels,count", [([], 5), ([0, 1], 0)])
def test_an_empty_split_or_count_is_a_clear_error(labels, count):
    with pytest.raises(ValueError, match="cannot draw"):
        stratified_sample(labels, count)
