"""Tests of sparse_tutorial.data.batching: padding, mask polarity, length bucketing, Batch."""
import pytest
import torch

from sparse_tutorial.data.batching import Batch, bucket_batches, iterate_batches, pad_sequences


def test_pad_sequences_shapes_values_and_mask_polarity():
    ids, mask = pad_sequences([[5, 6, 7], [8], []], pad_id=0)
    assert ids.dtype == torch.long and mask.dtype == torch.bool
    assert ids.tolist() == [[5, 6, 7], [8, 0, 0], [0, 0, 0]]
    assert mask.tolist() == [[True, True, True], [True, False, False], [False, False, False]]
    assert torch.equal(ids[~mask], torch.zeros(5, dtype=torch.long))


def test_pad_sequences_truncates_and_validates():
    ids, mask = pad_sequences([[1, 2, 3, 4], [5]], pad_id=9, max_len=2)
    assert ids.tolist() == [[1, 2], [5, 9]] and mask.sum().item() == 3
    with pytest.raises(ValueError, match="sequences"):
        pad_sequences([])
    with pytest.raises(ValueError, match="max_len"):
        pad_sequences([[1]], max_len=0)


def test_bucket_batches_cover_every_index_once_with_similar_lengths():
    lengths = [7, 1, 5, 3, 9, 2, 8, 4, 6, 10]
    batches = bucket_batches(lengths, batch_size=3, seed=1)
    assert sorted(i for b in batches for i in b) == list(range(10))
    assert sorted(len(b) for b in batches) == [1, 3, 3, 3]
    for batch in batches:  # sorted by length, so a batch spans consecutive lengths
        assert max(lengths[i] for i in batch) - min(lengths[i] for i in batch) <= 2


def test_bucket_batches_are_deterministic_per_seed():
    lengths = [len(str(i)) for i in range(200)]
    assert bucket_batches(lengths, 16, seed=3) == bucket_batches(lengths, 16, seed=3)
    assert bucket_batches(lengths, 16, seed=3) != bucket_batches(lengths, 16, seed=4)
    assert bucket_batches([3, 1, 2], 2, seed=None) == [[1, 2], [0]]
    assert bucket_batches([3, 1, 2], 2, seed=None, drop_last=True) == [[1, 2]]
    with pytest.raises(ValueError, match="batch_size"):
        bucket_batches([1], 0)


def test_iterate_batches_aligns_sources_targets_and_labels():
    sources = [[1, 2, 3], [4], [5, 6], [7, 8, 9, 10]]
    targets = [[11], [12, 13], [14], [15, 16]]
    labels = [0, 1, 0, 1]
    batches = list(iterate_batches(sources, 2, targets=targets, labels=labels, seed=0))
    assert sorted(i for b in batches for i in b.indices) == [0, 1, 2, 3]
    for batch in batches:
        for row, index in enumerate(batch.indices):
            assert batch.source[row][batch.source_mask[row]].tolist() == sources[index]
            assert batch.target[row][batch.target_mask[row]].tolist() == targets[index]
            assert batch.labels[row].item() == labels[index]
        assert batch.source_lengths.tolist() == [len(sources[i]) for i in batch.indices]
    with pytest.raises(ValueError, match="targets"):
        list(iterate_batches(sources, 2, targets=targets[:2]))


def test_batch_to_moves_tensors_and_keeps_indices():
    batch = Batch([0, 1], *pad_sequences([[1], [2, 3]]))
    moved = batch.to("cpu")
    assert moved.indices == [0, 1] and moved.target is None and moved.size == 2
    assert torch.equal(moved.source, batch.source)
