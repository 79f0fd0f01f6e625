"""Tests of the interactive figures (sparse_tutorial.interactive) and of the Sphinx extension that serves
plotly.js with the book (book/_ext/interactive_figures.py). tests/test_browser.py checks them drawn in a page."""
import json
import re
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from plotly.offline import get_plotlyjs_version

from sparse_tutorial.interactive import InteractiveFigure, bars_slider, heatmap_slider, simplex_slider

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "book" / "_ext"))
import interactive_figures  # noqa: E402

ROWS = {"softmax": torch.tensor([0.5, 0.3, 0.2]), "sparsemax": torch.tensor([0.6, 0.4, 0.0])}
SHARP = {"softmax": torch.tensor([0.8, 0.15, 0.05]), "sparsemax": torch.tensor([1.0, 0.0, 0.0])}


def figure_json(html: str, div_id: str) -> dict:
    """The figure that the HTML's script draws into ``div_id``."""
    found = re.search(r"var figure = (\{.*\});\n", html)
    assert found and f'Plotly.newPlot("{div_id}"' in html, html[:500]
    return json.loads(found.group(1))


def test_bars_slider_steps_hold_each_knob_values_bars():
    shown = bars_slider({"1": ROWS, "0.1": SHARP}, "temperature", "T", labels=["a", "b", "c"],
                        titles=["T = 1", "T = 0.1"], active=1)
    figure = shown.figure
    assert [trace.name for trace in figure.data] == ["softmax", "sparsemax"]
    assert [list(trace.y) for trace in figure.data] == [[0.8, 0.15, 0.05], [1.0, 0.0, 0.0]]  # the active step
    assert list(figure.data[0].x) == ["a", "b", "c"] and figure.layout.title.text == "T = 0.1"
    slider = figure.layout.sliders[0]
    assert slider.active == 1 and slider.currentvalue.prefix == "T = "
    assert [step.label for step in slider.steps] == ["1", "0.1"]
    first = slider.steps[0]
    assert first.method == "update"
    assert list(first.args) == [{"y": [[0.5, 0.3, 0.2], [0.6, 0.4, 0.0]]}, {"title.text": "T = 1"}, (0, 1)]


def test_figure_html_is_the_same_at_every_run_and_plain_json():
    make = lambda: bars_slider({"1": ROWS}, "same-id", "T")._repr_html_()  # noqa: E731
    html = make()
    assert html == make()
    assert html.startswith('<div id="same-id" class="plotly-graph-div" style="height:440px; width:100%; overflow:hidden;"></div>')
    figure = figure_json(html, "same-id")
    assert figure["data"][0]["y"] == [0.5, 0.3, 0.2]  # numbers nbval's sanitizers can read, not base64
    assert "bdata" not in html


def test_figure_loads_plotly_only_where_the_page_has_none():
    html = bars_slider({"1": ROWS}, "loader", "T")._repr_html_()
    assert "if (window.Plotly) { draw(); return; }" in html
    assert f'script.src = "https://cdn.plot.ly/plotly-{get_plotlyjs_version()}.min.js"' in html


def test_weights_are_rounded_so_that_float_noise_does_not_reach_the_page():
    shown = bars_slider({"1": {"p": torch.tensor([1 / 3, 2 / 3 + 1e-12])}}, "rounded", "T")
    assert list(shown.figure.data[0].y) == [0.3333, 0.6667]


def test_repr_names_the_figure_and_its_steps():
    shown = bars_slider({"1": ROWS, "2": SHARP}, "named", "T")
    assert repr(shown) == "<InteractiveFigure 'named': 2 traces, 2 slider steps>"


@pytest.mark.parametrize("div_id", ["", "1st", "has space", 'quote"', None])
def test_element_id_must_be_a_plain_html_id(div_id):
    with pytest.raises(ValueError, match="div_id must be"):
        bars_slider({"1": ROWS}, div_id, "T")


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"steps": {}}, "steps must map each slider label"),
        ({"steps": {"1": ROWS, "2": {"softmax": ROWS["softmax"]}}}, "same series"),
        ({"steps": {"1": {"p": torch.ones(3) / 3, "q": torch.ones(4) / 4}}}, "same series of vectors of one length"),
        ({"steps": {"1": ROWS}, "labels": ["a"]}, "labels has 1 entries but the vectors have length 3"),
        ({"steps": {"1": ROWS}, "titles": ["a", "b"]}, "titles has 2 entries but there are 1 steps"),
        ({"steps": {"1": ROWS}, "active": 1}, "active must index one of the 1 steps"),
    ],
)
def test_bars_slider_rejects_bad_input_by_name(kwargs, message):
    with pytest.raises(ValueError, match=message):
        bars_slider(div_id="bad", knob="T", **kwargs)


def test_simplex_slider_puts_each_point_by_its_zeros_and_counts_them():
    weights = torch.tensor([[0.5, 0.25, 0.25], [0.5, 0.5, 0.0], [0.0, 0.0, 1.0], [0.0, 1.0, 0.0]])
    figure = simplex_slider({"0": weights, "0.9": torch.eye(3)}, "simplex", "λ").figure
    inside, edge, corner, outline = figure.data
    assert [trace.name for trace in (inside, edge, corner)] == ["inside: 1", "on an edge: 1", "at a corner: 2"]
    assert (inside.x[0], inside.y[0]) == (0.375, 0.2165)  # 0.25 * (1, 0) + 0.25 * (0.5, √3/2)
    assert list(corner.customdata) == [[0.0, 0.0, 1.0], [0.0, 1.0, 0.0]]
    assert (corner.x, corner.y) == ((0.5, 1.0), (0.866, 0.0))
    assert outline.hoverinfo == "skip" and not outline.showlegend
    traces, _, updated = figure.layout.sliders[0].steps[1].args
    assert [len(x) for x in traces["x"]] == [0, 0, 3]  # the identity: three one-hot points
    assert traces["name"] == ["inside: 0", "on an edge: 0", "at a corner: 3"]
    assert updated == (0, 1, 2)  # not the outline, which a step would otherwise overwrite with points


def test_simplex_slider_counts_a_weight_as_zero_when_it_shows_as_zero():
    bisected = torch.tensor([[0.6, 0.4 - 1e-12, 1e-12], [0.6, 0.4 + 1e-12, -0.0]])  # the same point, twice
    edge = simplex_slider({"3": bisected}, "simplex", "α").figure.data[1]
    assert edge.name == "on an edge: 2" and list(edge.customdata) == [[0.6, 0.4, 0.0], [0.6, 0.4, 0.0]]
    assert "-0.0" not in simplex_slider({"3": bisected}, "simplex", "α")._repr_html_()


def test_simplex_slider_needs_three_outcomes():
    with pytest.raises(ValueError, match=r"steps\['0'\] must have shape \(n_points, 3\)"):
        simplex_slider({"0": torch.ones(2, 4) / 4}, "simplex", "λ")


def test_heatmap_slider_hovers_source_target_and_weight_and_keeps_repeated_words_apart():
    nmt = (np.array([[0.5, 0.25, 0.25], [0.0, 1.0, 0.0]]), ["und", "es", "und"], ["and", "it"])
    sharp = (torch.eye(2), ["a", "b"], ["x", "y"])
    figure = heatmap_slider({"NMT": nmt, "+Entropy": sharp}, "heatmaps", "system").figure
    (heatmap,) = figure.data
    assert [list(row) for row in heatmap.z] == [[0.5, 0.25, 0.25], [0.0, 1.0, 0.0]]
    assert list(figure.layout.xaxis.ticktext) == ["und", "es", "und"]
    assert list(figure.layout.xaxis.tickvals) == [0, 1, 2]
    assert list(heatmap.customdata[1][2]) == ["und", "it"]  # row = target word, column = source word
    assert "source: %{customdata[0]}" in heatmap.hovertemplate and "weight: %{z:.3f}" in heatmap.hovertemplate
    assert (heatmap.zmin, heatmap.zmax) == (0, 1) and heatmap.colorscale[0][1] == "rgb(247,251,255)"  # white at 0
    traces, layout, updated = figure.layout.sliders[0].steps[1].args
    assert traces["z"] == [[[1.0, 0.0], [0.0, 1.0]]] and updated == (0,)
    assert layout["xaxis.ticktext"] == ["a", "b"] and layout["yaxis.ticktext"] == ["x", "y"]


def test_heatmap_slider_shows_tokens_in_angle_brackets_literally():
    figure = heatmap_slider({"NMT": (torch.eye(2), ["<unk>", "a&b"], ["x", "</s>"])}, "heatmaps", "system").figure
    assert list(figure.layout.xaxis.ticktext) == ["&lt;unk&gt;", "a&amp;b"]
    assert list(figure.layout.yaxis.ticktext) == ["x", "&lt;/s&gt;"]
    assert list(figure.data[0].customdata[1][0]) == ["&lt;unk&gt;", "&lt;/s&gt;"]


def test_heatmap_slider_needs_a_token_per_row_and_column():
    with pytest.raises(ValueError, match=r"steps\['NMT'\]: weights of shape \(2, 3\) need as many target and source "
                                         r"tokens, got 2 and 2"):
        heatmap_slider({"NMT": (torch.ones(2, 3) / 3, ["a", "b"], ["x", "y"])}, "heatmaps", "system")


def test_interactive_figure_checks_its_id_when_built_directly():
    figure = bars_slider({"1": ROWS}, "ok", "T").figure
    with pytest.raises(ValueError, match="div_id must be"):
        InteractiveFigure(figure, "not ok")


def test_building_a_figure_without_plotly_says_how_to_install_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "plotly.graph_objects", None)  # what a missing package looks like to import
    with pytest.raises(ImportError, match="interactive figures need plotly: pip install plotly"):
        bars_slider({"1": ROWS}, "no-plotly", "T")


class FakeApp:
    """What the extension uses of a Sphinx application."""

    def __init__(self, outdir: Path):
        self.outdir = outdir
        self.builder = SimpleNamespace(format="html")
        self.js_files: list[str] = []

    def add_js_file(self, filename: str) -> None:
        self.js_files.append(filename)


def test_extension_loads_plotly_on_pages_with_a_figure_only(tmp_path):
    app = FakeApp(tmp_path)
    figure_page = {"body": bars_slider({"1": ROWS}, "page-figure", "T")._repr_html_()}
    interactive_figures._load_on_pages_with_figures(app, "book/part1/05", "page.html", {"body": "<p>text</p>"}, None)
    assert app.js_files == []
    interactive_figures._load_on_pages_with_figures(app, "book/part1/05", "page.html", figure_page, None)
    assert app.js_files == ["plotly.min.js"]


def test_extension_serves_the_plotly_js_of_the_installed_package(tmp_path):
    app = FakeApp(tmp_path)
    interactive_figures._copy_plotly_js(app, None)
    served = (tmp_path / "_static" / "plotly.min.js").read_text(encoding="utf-8")
    assert f"plotly.js v{get_plotlyjs_version()}" in served[:500]
    failed = FakeApp(tmp_path / "failed")
    interactive_figures._copy_plotly_js(failed, RuntimeError("the build failed"))
    assert not (tmp_path / "failed").exists()
