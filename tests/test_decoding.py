"""Tests for sparse_tutorial.decoding against brute-force search over a toy Markov "decoder"."""
import itertools
import math

import pytest
import torch

from sparse_tutorial.decoding import beam_search, greedy_decode, index_state

BOS, EOS, V = 0, 1, 5


def markov(seed: int) -> torch.Tensor:
    """A random transition table (V, V) of log-probabilities; BOS is never generated."""
    g = torch.Generator().manual_seed(seed)
    logits = torch.randn(V, V, generator=g) * 2
    logits[:, BOS] = float("-inf")
    return logits.log_softmax(-1)


def make_step(tables: torch.Tensor, src_len: int = 3):
    """State = (sentence index, step counter); attention = one-hot on counter mod src_len."""

    def step(tokens, state):
        sent, t = state
        log_probs = tables[sent, tokens]
        attention = torch.nn.functional.one_hot(t % src_len, src_len).float()
        return log_probs, (sent, t + 1), attention

    return step


def brute_force(table: torch.Tensor, max_len: int, alpha: float) -> tuple[list[int], float]:
    best, best_score = None, -math.inf
    for length in range(1, max_len + 1):
        for seq in itertools.product(range(V), repeat=length):
            if EOS in seq[:-1] or (length < max_len and seq[-1] != EOS):
                continue
            prev, total = BOS, 0.0
            for tok in seq:
                total += table[prev, tok].item()
                prev = tok
            ranked = total / length ** alpha
            if ranked > best_score:
                best, best_score = list(seq), ranked
    return ([t for t in best if t != EOS]), best_score


def init_state(batch: int):
    return torch.arange(batch), torch.zeros(batch, dtype=torch.long)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("alpha", [0.0, 1.0])
def test_wide_beam_finds_the_exact_best(seed, alpha):
    tables = markov(seed).unsqueeze(0)
    out = beam_search(make_step(tables), init_state(1), 1, BOS, EOS, max_len=4, beam_size=V ** 4, alpha=alpha)
    expected, _ = brute_force(tables[0], 4, alpha)
    assert out.tokens[0] == expected


def test_beam_never_worse_than_greedy_in_raw_log_prob():
    tables = torch.stack([markov(s) for s in range(20)])
    step = make_step(tables)
    greedy = greedy_decode(step, init_state(20), 20, BOS, EOS, max_len=6)
    beam = beam_search(step, init_state(20), 20, BOS, EOS, max_len=6, beam_size=4, alpha=0.0)
    assert bool((beam.scores >= greedy.scores - 1e-5).all())
    assert bool((beam.scores > greedy.scores + 1e-3).any())  # the toy chains make greedy miss sometimes


def test_beam_one_equals_greedy():
    tables = torch.stack([markov(s) for s in range(8)])
    step = make_step(tables)
    greedy = greedy_decode(step, init_state(8), 8, BOS, EOS, max_len=7)
    beam = beam_search(step, init_state(8), 8, BOS, EOS, max_len=7, beam_size=1, alpha=0.0)
    assert greedy.tokens == beam.tokens
    assert torch.allclose(greedy.scores, beam.scores)


def test_batched_equals_one_by_one():
    tables = torch.stack([markov(s) for s in range(5)])
    step = make_step(tables)
    batched = beam_search(step, init_state(5), 5, BOS, EOS, max_len=6, beam_size=3)
    for b in range(5):
        single = beam_search(make_step(tables[b:b + 1]), init_state(1), 1, BOS, EOS, max_len=6, beam_size=3)
        assert single.tokens[0] == batched.tokens[b]
        assert torch.equal(single.attention[0], batched.attention[b])


def test_attention_rows_follow_the_hypothesis():
    tables = torch.stack([markov(s) for s in range(4)])
    for out in (greedy_decode(make_step(tables), init_state(4), 4, BOS, EOS, max_len=5),
                beam_search(make_step(tables), init_state(4), 4, BOS, EOS, max_len=5, beam_size=3)):
        for tokens, attn in zip(out.tokens, out.attention):
            rows = len(tokens) + 1 if len(tokens) < 5 else 5
            assert attn.shape == (rows, 3)
            # step t attends to position t mod 3: the state was reordered along with the beams
            assert attn.argmax(-1).tolist() == [t % 3 for t in range(rows)]


def test_max_len_cuts_without_eos():
    table = torch.full((V, V), -10.0)
    table[:, 2] = 0.0  # always "2", never </s>
    out = greedy_decode(make_step(table.unsqueeze(0)), init_state(1), 1, BOS, EOS, max_len=4)
    assert out.tokens == [[2, 2, 2, 2]] and out.attention[0].shape == (4, 3)


def test_index_state_nested():
    state = {"h": (torch.arange(4), [torch.arange(4) * 10]), "n": 7}
    out = index_state(state, torch.tensor([3, 3, 0]))
    assert out["h"][0].tolist() == [3, 3, 0] and out["h"][1][0].tolist() == [30, 30, 0] and out["n"] == 7


@pytest.mark.parametrize("kwargs, name", [({"beam_size": 0}, "beam_size"), ({"max_len": 0}, "max_len")])
def test_bad_arguments(kwargs, name):
    args = dict(batch_size=1, bos=BOS, eos=EOS, max_len=3) | kwargs
    with pytest.raises(ValueError, match=name):
        beam_search(make_step(markov(0).unsqueeze(0)), init_state(1), **args)
