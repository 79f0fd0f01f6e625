"""The nbval sanitizers mask exactly the volatile text they document, and leave real results alone."""
import configparser
import re
from pathlib import Path

import pytest

CONFIG = Path(__file__).resolve().parent / "nbval_sanitize.cfg"


def sanitize(text: str) -> str:
    """Apply the sanitizers the way nbval does: every section's regex, in file order."""
    parser = configparser.ConfigParser()
    parser.read(CONFIG, encoding="utf-8")
    for section in parser.sections():
        text = re.sub(parser[section]["regex"], parser[section]["replace"], text)
    return text


@pytest.mark.parametrize(
    ("volatile", "masked"),
    [
        ("<Attention object at 0x7f3a2b1c4d50>", "<Attention object at 0xADDRESS>"),
        ("trained in 12.3 s", "trained in TIME"),
        ("epoch took 850ms", "epoch took TIME"),
        ("CPU times: user 1.2 s, sys: 3 ms, total: 1.2 s", "TIME"),
        ("Wall time: 2.51 s", "TIME"),
        ("4.2 ms ± 120 µs per loop (mean ± std. dev. of 7 runs, 100 loops each)", "TIME"),
        ("epoch 1: 100%|██████████| 50/50 [00:03<00:00, 14.2it/s]", "epoch 1: 100%|BAR| 50/50 ELAPSED<REMAINING, RATE]"),
        ("3.7s/it", "RATE"),
        ("loss = 0.123456789", "loss = 0.123456"),
        ("tensor([-0.0000, 0.5000])", "tensor([0.0000, 0.5000])"),
        ("/home/x/.venv/lib/python3.11/site-packages/torch/nn.py:12: UserWarning", "SITE-PACKAGES/torch/nn.py:12: UserWarning"),
    ],
)
def test_volatile_text_is_masked(volatile, masked):
    assert sanitize(volatile) == masked


@pytest.mark.parametrize(
    "result",
    [
        "BLEU = 23.45 (p = 0.0120)",
        "tensor([[0.8000, 0.2000, 0.0000, 0.0000]])",
        "entropy per token: 1.234 nats, -0.5 change",
        "sparsemax keeps 3 of 7 words; 12 heads, batch (32, 17)",
        "accuracy 0.8125 at lambda 0.001",
    ],
)
def test_results_are_left_alone(result):
    assert sanitize(result) == result
