"""Input checks and the entropy exist once (issue 21): every module checks masks, shapes and attention weights
with sparse_tutorial._validation and computes entropy with sparse_tutorial.regularizers.entropy, so the
same wrong input gets the same clear error everywhere."""
from __future__ import annotations

import ast
import math
import re
from pathlib import Path

import pytest
import torch

from sparse_tutorial._validation import check_mask, check_shape
from sparse_tutorial.coverage import NeuralCoverage, coverage_loss
from sparse_tutorial.interpret import normalized_entropy
from sparse_tutorial.metrics import attention_entropy_per_token
from sparse_tutorial.regularizers import entropy

LIBRARY = Path(__file__).resolve().parent.parent / "sparse_tutorial"
CHECK_NAME = re.compile(r"_?check_\w*(mask|shape|weights|query|keys)\w*$")


def functions(path: Path) -> list[ast.FunctionDef]:
    return [node for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
            if isinstance(node, ast.FunctionDef)]


def test_mask_shape_and_weight_checks_are_defined_once():
    defined = sorted(f"{path.relative_to(LIBRARY)}:{function.name}" for path in LIBRARY.rglob("*.py")
                     for function in functions(path) if CHECK_NAME.match(function.name))
    assert defined and all(place.startswith("_validation.py:") for place in defined), defined


def test_only_regularizers_entropy_computes_p_log_p():
    """A function about entropy multiplies a probability by a logarithm only in regularizers.entropy."""
    def multiplies_by_a_log(node: ast.AST) -> bool:
        return any(isinstance(sub, ast.BinOp) and isinstance(sub.op, ast.Mult) and any(
            isinstance(side, ast.Call) and isinstance(side.func, ast.Attribute) and side.func.attr == "log"
            for side in (sub.left, sub.right)) for sub in ast.walk(node))

    computing = sorted(f"{path.relative_to(LIBRARY)}:{function.name}" for path in LIBRARY.rglob("*.py")
                       for function in functions(path) if "entropy" in function.name and multiplies_by_a_log(function))
    assert computing == ["regularizers.py:entropy"]


def test_check_shape_names_the_layout_or_the_sizes():
    mask = torch.ones(2, 4, dtype=torch.bool)
    with pytest.raises(ValueError, match=r"^mask must have shape \(batch, src_len\) = \(2, 5\), got \(2, 4\)$"):
        check_mask(mask, "mask", batch=2, src_len=5)
    with pytest.raises(ValueError, match=r"^mask must have shape \(\?, 5\), got \(2, 4\)$"):
        check_shape(mask, "mask", None, 5)
    with pytest.raises(TypeError, match="by position or by name"):
        check_shape(mask, "mask", 2, src_len=4)
    check_mask(mask, "mask", 2, 4)


def test_coverage_loss_refuses_integer_weights():
    with pytest.raises(TypeError, match="weights must be a floating-point tensor"):
        coverage_loss(torch.ones(1, 2, 3, dtype=torch.long))


def test_entropy_per_token_refuses_an_integer_mask_instead_of_indexing_with_it():
    weights = torch.full((1, 2, 4), 0.25)
    with pytest.raises(TypeError, match="target_mask must be a boolean tensor"):
        attention_entropy_per_token(weights, torch.tensor([[1, 0]]))


def test_neural_coverage_names_keys_of_the_wrong_rank():
    update = NeuralCoverage(query_dim=4, key_dim=5, coverage_dim=3)
    with pytest.raises(ValueError, match=r"keys must have shape \(batch, src_len, key_dim\) = \(\?, \?, 5\)"):
        update(torch.zeros(2, 6, 3), torch.zeros(2, 6), torch.zeros(2, 4), torch.zeros(6, 5))


def test_normalized_entropy_is_entropy_over_log_n():
    torch.manual_seed(0)
    distribution = torch.softmax(torch.randn(3, 6), -1)
    mask = torch.tensor([[True] * 6, [True] * 4 + [False] * 2, [True] + [False] * 5])
    kept = distribution.masked_fill(~mask, 0.0)
    expected = torch.stack([entropy(kept[0]) / math.log(6), entropy(kept[1]) / math.log(4), torch.tensor(0.0)])
    torch.testing.assert_close(normalized_entropy(distribution, mask), expected)
