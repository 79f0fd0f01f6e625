"""Tests of the shared plot style and the attention plots (drawn off-screen with the Agg backend)."""
import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
import pytest
import torch
from matplotlib.patches import Rectangle

from sparse_tutorial.plotting import (ATTENTION_CMAP, MECHANISM_PARTS, attention_diagram, attention_heatmap, mark_links,
                                      plot_distributions, set_style)


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


def test_set_style_sets_the_book_theme():
    set_style()
    assert matplotlib.rcParams["axes.titleweight"] == "bold"
    assert matplotlib.rcParams["axes.spines.top"] is False
    assert matplotlib.rcParams["figure.figsize"] == [6.4, 4.0]


def test_heatmap_puts_source_on_x_and_target_on_y():
    weights = torch.tensor([[0.7, 0.3, 0.0], [0.0, 0.0, 1.0]])
    ax = attention_heatmap(weights, ["a", "b", "c"], ["x", "y"], title="two rows")
    assert [t.get_text() for t in ax.get_xticklabels()] == ["a", "b", "c"]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["x", "y"]
    assert ax.get_title() == "two rows"
    assert ax.get_xlabel() == "source" and ax.get_ylabel() == "target"
    mesh = ax.collections[0]
    np.testing.assert_allclose(np.asarray(mesh.get_array()).reshape(2, 3), weights.numpy())
    assert mesh.get_cmap().name == ATTENTION_CMAP
    assert mesh.get_clim() == (0.0, 1.0)


def test_heatmap_writes_exact_zeros_as_0():
    ax = attention_heatmap(np.array([[0.25, 0.0, 0.75]]), ["a", "b", "c"])
    assert [t.get_text() for t in ax.texts] == ["0.25", "0", "0.75"]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["1"]


def test_heatmap_accepts_a_batch_of_one_and_draws_on_given_axes():
    _, given = plt.subplots()
    ax = attention_heatmap(torch.full((1, 2, 4), 0.25), list("abcd"), ["p", "q"], ax=given, annotate=False)
    assert ax is given
    assert len(ax.texts) == 0
    assert np.asarray(ax.collections[0].get_array()).size == 8


def test_heatmap_colour_bar_can_be_left_out_for_grids():
    fig, (left, right) = plt.subplots(1, 2)
    attention_heatmap(torch.ones(2, 2) / 2, ["a", "b"], ax=left)
    attention_heatmap(torch.ones(2, 2) / 2, ["a", "b"], ax=right, colorbar=False)
    assert len(fig.axes) == 3
    assert fig.axes[2].get_ylabel() == "attention weight"


def test_heatmap_names_mismatched_labels():
    with pytest.raises(ValueError, match="src_tokens"):
        attention_heatmap(torch.ones(2, 3) / 3, ["a", "b"], ["x", "y"])
    with pytest.raises(ValueError, match="tgt_tokens"):
        attention_heatmap(torch.ones(2, 3) / 3, ["a", "b", "c"], ["x"])
    with pytest.raises(ValueError, match="weights"):
        attention_heatmap(torch.ones(2, 2, 3), ["a", "b", "c"])


def test_mark_links_outlines_source_column_and_target_row_of_each_link():
    ax = attention_heatmap(torch.ones(2, 3) / 3, ["a", "b", "c"], ["x", "y"])
    mark_links(ax, {(2, 0), (0, 1)}, linestyle=":", label="sure")
    outlines = [patch for patch in ax.patches if isinstance(patch, Rectangle)]
    assert sorted((patch.get_x(), patch.get_y()) for patch in outlines) == [(0, 1), (2, 0)]
    assert all(not patch.get_fill() and patch.get_linestyle() == ":" for patch in outlines)
    assert [patch.get_label() for patch in outlines].count("sure") == 1  # one legend entry


def test_mark_links_names_a_link_outside_the_heatmap():
    ax = attention_heatmap(torch.ones(2, 3) / 3, ["a", "b", "c"], ["x", "y"])
    with pytest.raises(ValueError, match=r"link \(source 3, target 0\)"):
        mark_links(ax, {(3, 0)})
    with pytest.raises(ValueError, match=r"link \(source 0, target 2\)"):
        mark_links(ax, {(0, 2)})


def test_plot_distributions_draws_one_bar_group_per_vector():
    distributions = {"softmax": torch.tensor([0.5, 0.3, 0.2]), "sparsemax": np.array([0.6, 0.4, 0.0])}
    ax = plot_distributions(distributions, labels=["the", "cat", "sat"], title="sparsemax drops one")
    heights = [patch.get_height() for patch in ax.patches]
    np.testing.assert_allclose(heights, [0.5, 0.3, 0.2, 0.6, 0.4, 0.0], rtol=1e-6)
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["softmax", "sparsemax"]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["the", "cat", "sat"]


def test_plot_distributions_rejects_vectors_of_different_lengths():
    with pytest.raises(ValueError, match="common length"):
        plot_distributions({"a": np.ones(3) / 3, "b": np.ones(2) / 2})


def test_attention_diagram_draws_every_part_and_colours_the_one_asked_for():
    for highlight in (None, *MECHANISM_PARTS):
        ax = attention_diagram(highlight)
        boxes = {text.get_text(): text.get_bbox_patch().get_facecolor() for text in ax.texts
                 if text.get_bbox_patch() is not None}
        for name, (label, _) in MECHANISM_PARTS.items():
            white = boxes[label] == (1.0, 1.0, 1.0, 1.0)
            assert white == (name != highlight), (highlight, name)
        plt.close(ax.figure)
    with pytest.raises(ValueError, match="highlight"):
        attention_diagram("softmax")
