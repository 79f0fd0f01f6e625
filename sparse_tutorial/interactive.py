"""Interactive figures that work in the static book: a knob (τ, λ, α, a system) on a slider, values on hover.

Chapters 4, 5, 7 and 10 draw them with plotly. Each builder returns an :class:`InteractiveFigure`, which a
notebook shows as HTML: a ``<div>`` with a fixed ``div_id`` and a script that draws the figure with plotly.js.
Every slider step holds its data in the page, so the figure needs no kernel; and the output is the same at
every run (fixed id, rounded values, no timestamp), as strict nbval requires.

Where plotly.js comes from: the rendered book serves the copy that the ``plotly`` package ships
(``book/_ext/interactive_figures.py`` puts it into ``_static/`` and loads it on the pages that show a
figure), so the book needs no network. In Jupyter or Colab, where no page has loaded plotly.js, the figure
loads the same version from plotly's CDN.

* :func:`bars_slider` — several weight vectors over the same positions as grouped bars, one step per knob
  value (the interactive twin of :func:`sparse_tutorial.plotting.plot_distributions`);
* :func:`simplex_slider` — 3-way distributions as points of the triangle, coloured by their number of zeros;
* :func:`heatmap_slider` — attention matrices with source word, target word and weight on hover.

plotly is imported when a figure is built, not with the library: ``pip install plotly`` (it is in
``requirements.txt``, and preinstalled on Colab).
"""
from __future__ import annotations

import html
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import seaborn as sns
import torch

from sparse_tutorial.plotting import ATTENTION_CMAP, PALETTE, _as_matrix

__all__ = ["InteractiveFigure", "bars_slider", "simplex_slider", "heatmap_slider", "DECIMALS", "HEIGHT"]

PlotlyFigure = Any
"""A ``plotly.graph_objects.Figure``; plotly is imported only when a figure is built, so it is not named here."""

DECIMALS = 4
"""Weights are stored with this many decimals: enough for the eye and the hover text, and the same on any CPU."""

HEIGHT = 440
"""Height of every interactive figure in pixels; the width follows the page."""

_DIV_ID = re.compile(r"[A-Za-z][A-Za-z0-9_-]*")
_CONFIG = {"responsive": True, "displayModeBar": False}  # the bar would cover the title; drag still zooms
# The figure redraws when its column changes width (a scrollbar appears, a sidebar folds), not only with the
# window (plotly's "responsive"); until it has, it is clipped rather than scrolling sideways.
_HTML = """<div id="{div_id}" class="plotly-graph-div" style="height:{height}px; width:100%; overflow:hidden;"></div>
<script type="text/javascript">
(function () {{
  var figure = {figure};
  function draw() {{
    Plotly.newPlot("{div_id}", figure.data, figure.layout, {config}).then(function (shown) {{
      var width = shown.clientWidth;
      new ResizeObserver(function () {{
        if (shown.clientWidth !== width) {{ width = shown.clientWidth; Plotly.Plots.resize(shown); }}
      }}).observe(shown);
    }});
  }}
  if (window.Plotly) {{ draw(); return; }}
  var script = document.createElement("script");
  script.src = "https://cdn.plot.ly/plotly-{version}.min.js";
  script.onload = draw;
  document.head.appendChild(script);
}})();
</script>"""


def _plotly() -> Any:
    """``plotly.graph_objects``, or an ImportError that says how to install it."""
    try:
        import plotly.graph_objects as go
    except ImportError as error:
        raise ImportError("interactive figures need plotly: pip install plotly") from error
    return go


@dataclass(frozen=True)
class InteractiveFigure:
    """A plotly figure with a fixed element id; a notebook displays it as HTML (``_repr_html_``).

    Attributes:
        figure: the plotly figure; its slider (``figure.layout.sliders[0]``) steps through the knob.
        div_id: id of the figure's ``<div>`` in the page: fixed, so the stored output is the same at every run.
    """

    figure: PlotlyFigure
    div_id: str

    def __post_init__(self) -> None:
        if not isinstance(self.div_id, str) or not _DIV_ID.fullmatch(self.div_id):
            raise ValueError(f"div_id must be a letter followed by letters, digits, '-' or '_', got {self.div_id!r}")

    def _repr_html_(self) -> str:
        from plotly.io import to_json
        from plotly.offline import get_plotlyjs_version

        return _HTML.format(div_id=self.div_id, height=self.figure.layout.height or HEIGHT, figure=to_json(self.figure),
                            config=json.dumps(_CONFIG), version=get_plotlyjs_version())

    def __repr__(self) -> str:
        steps = len(self.figure.layout.sliders[0].steps) if self.figure.layout.sliders else 0
        return f"<InteractiveFigure {self.div_id!r}: {len(self.figure.data)} traces, {steps} slider steps>"


def _round(values: np.ndarray) -> np.ndarray:
    """``values`` as floats with :data:`DECIMALS` decimals, and ``-0.0`` as ``0.0``."""
    return np.round(np.asarray(values, dtype=float), DECIMALS) + 0.0


def _rounded(values: np.ndarray) -> list:
    """``values`` as (nested) lists of floats with :data:`DECIMALS` decimals: plain JSON, not base64."""
    return _round(values).tolist()


def _step_titles(steps: Mapping, titles: Sequence[str] | None, knob: str, active: int) -> list[str]:
    """Check ``steps`` and ``active``; return one title per step (``knob`` for each when ``titles`` is None)."""
    if not isinstance(steps, Mapping) or not steps:
        raise ValueError(f"steps must map each slider label to its data, got {steps!r}")
    if not isinstance(active, int) or not 0 <= active < len(steps):
        raise ValueError(f"active must index one of the {len(steps)} steps, got {active!r}")
    if titles is None:
        return [knob] * len(steps)
    if len(titles) != len(steps):
        raise ValueError(f"titles has {len(titles)} entries but there are {len(steps)} steps")
    return list(titles)


def _figure(traces: list, title: str, xaxis_title: str, yaxis_title: str) -> PlotlyFigure:
    """A figure in the book's style: white background, light grid, the palette of
    :func:`~sparse_tutorial.plotting.set_style`."""
    go = _plotly()
    grid = {"gridcolor": "#e5e5e5", "zeroline": False}
    style = {"font": {"size": 13}, "plot_bgcolor": "white", "paper_bgcolor": "white",
             "colorway": sns.color_palette(PALETTE).as_hex(), "xaxis": grid, "yaxis": grid}
    return go.Figure(traces, layout={
        "template": {"layout": style},
        "title": {"text": title, "font": {"size": 15}},
        "xaxis": {"title": {"text": xaxis_title}},
        "yaxis": {"title": {"text": yaxis_title}},
        "height": HEIGHT,
        "margin": {"t": 60},  # the bottom margin leaves room for the slider (_with_slider)
        "legend": {"orientation": "h", "y": 1.0, "yanchor": "bottom", "x": 1.0, "xanchor": "right"},
    })


def _with_slider(figure: PlotlyFigure, knob: str, updates: Mapping[str, tuple[dict, dict]], active: int,
                 div_id: str, gap: int = 50) -> InteractiveFigure:
    """Add a slider, ``gap`` pixels below the plot, whose step ``label`` runs
    ``Plotly.update(trace_update, layout_update, traces)`` with ``updates[label] = (trace_update, layout_update)``:
    each key of ``trace_update`` holds one value per trace it updates, for the first traces (the others, such
    as a fixed outline, keep theirs)."""
    steps = []
    for label, (traces, layout) in updates.items():
        updated = list(range(max((len(values) for values in traces.values()), default=0)))
        steps.append({"label": label, "method": "update", "args": [traces, layout, updated]})
    slider = {"active": active, "currentvalue": {"prefix": f"{knob} = "}, "steps": steps, "pad": {"t": gap}}
    figure.update_layout(sliders=[slider], margin_b=gap + 70)
    return InteractiveFigure(figure, div_id)


def bars_slider(
    steps: Mapping[str, Mapping[str, torch.Tensor | np.ndarray]],
    div_id: str,
    knob: str,
    labels: Sequence[str] | None = None,
    titles: Sequence[str] | None = None,
    active: int = 0,
) -> InteractiveFigure:
    """Grouped bars of several weight vectors, one slider step per knob value.

    Args:
        steps: slider label (e.g. ``"0.5"``) → {series name → ``(src_len,)`` weights}; every step has the
            same series, in the same order, over the same positions.
        div_id: the figure's element id (see :class:`InteractiveFigure`).
        knob: the knob's name, shown before the slider's value (``"τ"``).
        labels: ``src_len`` position labels (tokens); ``None`` numbers the positions from 1.
        titles: one title per step (say what the step shows); ``None`` titles the figure ``knob``.
        active: the step shown first.

    Returns:
        The figure, with one bar trace per series; hovering a bar shows its weight.
    """
    titles = _step_titles(steps, titles, knob, active)
    vectors = {label: {name: _as_matrix(vector, f"steps[{label!r}][{name!r}]") for name, vector in step.items()}
               for label, step in steps.items()}
    names = {tuple(step) for step in vectors.values()}
    shapes = {matrix.shape for step in vectors.values() for matrix in step.values()}
    if len(names) != 1 or len(shapes) != 1 or next(iter(shapes))[0] != 1:
        raise ValueError(f"every step needs the same series of vectors of one length, got series {names} of "
                         f"shapes {shapes}")
    src_len = next(iter(shapes))[1]
    labels = [str(position + 1) for position in range(src_len)] if labels is None else list(labels)
    if len(labels) != src_len:
        raise ValueError(f"labels has {len(labels)} entries but the vectors have length {src_len}")
    heights = {label: [_rounded(matrix[0]) for matrix in step.values()] for label, step in vectors.items()}
    go = _plotly()
    bars = [go.Bar(x=labels, y=y, name=name, hovertemplate="%{y:.4f}")
            for name, y in zip(next(iter(names)), list(heights.values())[active])]
    figure = _figure(bars, titles[active], "position", "weight")
    figure.update_layout(barmode="group", yaxis_range=[0, 1.05])
    updates = {label: ({"y": y}, {"title.text": title}) for (label, y), title in zip(heights.items(), titles)}
    return _with_slider(figure, knob, updates, active, div_id)


_ZERO_CLASSES = ("inside", "on an edge", "at a corner")
"""Where a distribution over 3 outcomes lies in the triangle when 0, 1 or 2 of its weights are zero."""
_CORNERS = np.array([[0.0, 0.0], [1.0, 0.0], [0.5, np.sqrt(3) / 2]])


def simplex_slider(
    steps: Mapping[str, torch.Tensor | np.ndarray],
    div_id: str,
    knob: str,
    titles: Sequence[str] | None = None,
    active: int = 0,
) -> InteractiveFigure:
    """Distributions over 3 outcomes as points of the triangle (the 2-simplex), one slider step per knob value.

    The corners are the one-hot distributions (``p₁ = 1`` …); the closer a point lies to a corner, the more
    weight that outcome has. Points are coloured by how many of their weights are zero at the
    :data:`DECIMALS` shown on hover (so a weight found by bisection counts as zero, whichever side of 0 its
    last bit fell); the legend counts them at each step.

    Args:
        steps: slider label → ``(n_points, 3)`` weights (rows on the simplex).
        div_id: the figure's element id (see :class:`InteractiveFigure`).
        knob: the knob's name, shown before the slider's value (``"λ"``).
        titles: one title per step; ``None`` titles the figure ``knob``.
        active: the step shown first.

    Returns:
        The figure, with a trace per number of zeros (0, 1, 2) and the triangle; hovering a point shows its
        weights.
    """
    titles = _step_titles(steps, titles, knob, active)
    classes = {}
    for label, weights in steps.items():
        matrix = _as_matrix(weights, f"steps[{label!r}]")
        if matrix.shape[1] != 3:
            raise ValueError(f"steps[{label!r}] must have shape (n_points, 3), got {matrix.shape}")
        rounded = _round(matrix)
        zeros = (rounded == 0).sum(1)
        classes[label] = [_points(rounded[zeros == count], f"{name}: {int((zeros == count).sum())}")
                          for count, name in enumerate(_ZERO_CLASSES)]
    go = _plotly()
    hover = "p = (%{customdata[0]}, %{customdata[1]}, %{customdata[2]})<extra></extra>"
    traces = [go.Scatter(mode="markers", marker={"size": 5 + 4 * count}, hovertemplate=hover, **points)
              for count, points in enumerate(list(classes.values())[active])]
    outline = np.vstack([_CORNERS, _CORNERS[:1]])
    traces.append(go.Scatter(x=outline[:, 0].tolist(), y=outline[:, 1].tolist(), mode="lines+text",
                             text=["p₁ = 1", "p₂ = 1", "p₃ = 1", ""],
                             textposition=["bottom left", "bottom right", "top center", "top center"],
                             line={"color": "black", "width": 1}, hoverinfo="skip", showlegend=False))
    figure = _figure(traces, titles[active], "", "")
    figure.update_layout(xaxis={"visible": False, "range": [-0.1, 1.1]},
                         yaxis={"visible": False, "range": [-0.12, 0.93], "scaleanchor": "x"})
    updates = {label: ({key: [points[key] for points in by_zeros] for key in ("x", "y", "customdata", "name")},
                       {"title.text": title})
               for (label, by_zeros), title in zip(classes.items(), titles)}
    return _with_slider(figure, knob, updates, active, div_id)


def _points(weights: np.ndarray, name: str) -> dict:
    """A trace's data: ``weights: (n, 3)`` placed in the triangle, the weights for the hover text, its name."""
    xy = weights @ _CORNERS
    return {"x": _rounded(xy[:, 0]), "y": _rounded(xy[:, 1]), "customdata": weights.tolist(), "name": name}


def heatmap_slider(
    steps: Mapping[str, tuple[torch.Tensor | np.ndarray, Sequence[str], Sequence[str]]],
    div_id: str,
    knob: str,
    titles: Sequence[str] | None = None,
    active: int = 0,
) -> InteractiveFigure:
    """Attention heatmaps, one slider step per system (or λ), with source word, target word and weight on hover.

    Source words run along the x axis and target words down the y axis, as in
    :func:`~sparse_tutorial.plotting.attention_heatmap`; a word that occurs twice keeps its own column.

    Args:
        steps: slider label → ``(weights, src_tokens, tgt_tokens)`` with ``weights: (tgt_len, src_len)``.
        div_id: the figure's element id (see :class:`InteractiveFigure`).
        knob: the knob's name, shown before the slider's value (``"system"``).
        titles: one title per step; ``None`` titles the figure ``knob``.
        active: the step shown first.

    Returns:
        The figure, with one heatmap trace on the colour scale of the book's heatmaps, white at zero.
    """
    titles = _step_titles(steps, titles, knob, active)
    maps = {}
    for label, (weights, src_tokens, tgt_tokens) in steps.items():
        matrix = _as_matrix(weights, f"steps[{label!r}] weights")
        if matrix.shape != (len(tgt_tokens), len(src_tokens)):
            raise ValueError(f"steps[{label!r}]: weights of shape {matrix.shape} need as many target and source "
                             f"tokens, got {len(tgt_tokens)} and {len(src_tokens)}")
        sources, targets = _as_text(src_tokens), _as_text(tgt_tokens)
        words = [[[source, target] for source in sources] for target in targets]
        axes = {"xaxis.tickvals": list(range(len(sources))), "xaxis.ticktext": sources,
                "yaxis.tickvals": list(range(len(targets))), "yaxis.ticktext": targets}
        maps[label] = ({"z": _rounded(matrix), "customdata": words}, axes)
    go = _plotly()
    from plotly.colors import sequential

    data, axes = list(maps.values())[active]
    heatmap = go.Heatmap(**data, colorscale=getattr(sequential, ATTENTION_CMAP), zmin=0, zmax=1, xgap=1, ygap=1,
                         colorbar={"title": {"text": "weight"}},
                         hovertemplate="source: %{customdata[0]}<br>target: %{customdata[1]}<br>"
                                       "weight: %{z:.3f}<extra></extra>")
    figure = _figure([heatmap], titles[active], "source", "target")
    figure.update_layout(axes | {"yaxis.autorange": "reversed", "xaxis.tickangle": -45, "yaxis.automargin": True,
                                 "xaxis.automargin": True})
    updates = {label: ({key: [value] for key, value in data.items()}, axes | {"title.text": title})
               for (label, (data, axes)), title in zip(maps.items(), titles)}
    return _with_slider(figure, knob, updates, active, div_id, gap=110)


def _as_text(tokens: Sequence[str]) -> list[str]:
    """Tokens as plotly shows them literally: it reads ``<…>`` in text as markup, so ``</s>`` would vanish."""
    return [html.escape(str(token), quote=False) for token in tokens]
