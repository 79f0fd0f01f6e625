"""One plot style for the whole book, and the attention heatmap every chapter draws.

Chapters call :func:`set_style` once in their setup cell, so every figure of the book shares fonts, sizes
and colours; :func:`attention_heatmap` draws a ``(tgt_len, src_len)`` weight matrix with the tokens on
the axes (chapter 1 introduces it, chapters 10–13 use it on trained models); :func:`plot_distributions`
draws several attention vectors over the same positions side by side (chapters 3 and 8); :func:`mark_links`
outlines the cells of gold alignment links on a heatmap (chapter 10); :func:`attention_diagram` draws the
book's map of the mechanism, the box a chapter changes coloured (chapters 1–8); :func:`claim_family_plot`
draws one family of a paper's claims, seed by seed, with the interval that decided each (chapters 10–14).
"""
from __future__ import annotations

import textwrap
from collections.abc import Collection, Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np
import seaborn as sns
import torch
from matplotlib.axes import Axes
from matplotlib.patches import Rectangle

__all__ = ["set_style", "attention_heatmap", "mark_links", "plot_distributions", "attention_diagram",
           "claim_family_plot", "ATTENTION_CMAP", "PALETTE", "MECHANISM_PARTS"]

PALETTE = "colorblind"
"""Colour palette of every figure, static (seaborn) and interactive (:mod:`sparse_tutorial.interactive`)."""

ATTENTION_CMAP = "Blues"
"""Colour map of every attention heatmap; white is zero weight, so exact zeros of sparse maps stand out."""


def set_style() -> None:
    """Apply the book's plot style: seaborn's white grid, readable sizes, a colour-blind-safe palette."""
    sns.set_theme(
        context="notebook",
        style="whitegrid",
        palette=PALETTE,
        rc={
            "figure.figsize": (6.4, 4.0),
            "figure.dpi": 100,
            "savefig.dpi": 100,
            "savefig.bbox": "tight",
            "axes.titlesize": "medium",
            "axes.titleweight": "bold",
            "axes.spines.top": False,
            "axes.spines.right": False,
            "legend.frameon": False,
        },
    )


def _as_matrix(weights: torch.Tensor | np.ndarray, name: str) -> np.ndarray:
    """Return ``weights`` as a float numpy array, with a batch dimension of size 1 squeezed away."""
    if isinstance(weights, torch.Tensor):
        weights = weights.detach().to("cpu", torch.float32).numpy()
    matrix = np.asarray(weights, dtype=float)
    if matrix.ndim == 3 and matrix.shape[0] == 1:
        matrix = matrix[0]
    if matrix.ndim == 1:
        matrix = matrix[None, :]
    if matrix.ndim != 2:
        raise ValueError(f"{name} must have shape (tgt_len, src_len), got {tuple(matrix.shape)}")
    return matrix


def attention_heatmap(
    weights: torch.Tensor | np.ndarray,
    src_tokens: Sequence[str],
    tgt_tokens: Sequence[str] | None = None,
    ax: Axes | None = None,
    title: str | None = None,
    annotate: bool | None = None,
    vmax: float | None = 1.0,
    colorbar: bool = True,
) -> Axes:
    """Draw attention weights as a heatmap, source tokens on the x axis and target tokens on the y axis.

    Args:
        weights: ``(tgt_len, src_len)`` attention weights (a ``(1, tgt_len, src_len)`` batch of one or a
            single ``(src_len,)`` vector is accepted too); a tensor or an array.
        src_tokens: ``src_len`` labels of the columns.
        tgt_tokens: ``tgt_len`` labels of the rows; ``None`` numbers the rows from 1.
        ax: axes to draw on; a new figure is created when ``None``.
        title: axes title — state the finding, e.g. ``"sparsemax keeps 2 of 7 words"``.
        annotate: write each weight in its cell; by default only when the matrix has at most 12 columns
            and 12 rows. Exact zeros are written as ``0`` so sparsity is visible.
        vmax: top of the colour scale (weights lie in [0, 1]); ``None`` scales to the largest weight.
        colorbar: draw the colour bar; turn it off in a grid of heatmaps that share ``vmax`` (one bar,
            e.g. ``fig.colorbar(axes[0].collections[0], ax=axes)``, then serves them all).

    Returns:
        The axes drawn on.
    """
    matrix = _as_matrix(weights, "weights")
    tgt_len, src_len = matrix.shape
    if len(src_tokens) != src_len:
        raise ValueError(f"src_tokens has {len(src_tokens)} labels but weights has {src_len} columns")
    if tgt_tokens is None:
        tgt_tokens = [str(i + 1) for i in range(tgt_len)]
    if len(tgt_tokens) != tgt_len:
        raise ValueError(f"tgt_tokens has {len(tgt_tokens)} labels but weights has {tgt_len} rows")
    if annotate is None:
        annotate = src_len <= 12 and tgt_len <= 12
    if ax is None:
        width = min(12.0, 1.2 + 0.55 * src_len)
        height = min(10.0, 1.0 + 0.45 * tgt_len)
        _, ax = plt.subplots(figsize=(width, height))
    labels = np.vectorize(lambda w: "0" if w == 0 else f"{w:.2f}")(matrix) if annotate else False
    sns.heatmap(
        matrix,
        ax=ax,
        cmap=ATTENTION_CMAP,
        vmin=0.0,
        vmax=vmax,
        annot=labels,
        fmt="",
        annot_kws={"fontsize": "small"},
        xticklabels=list(src_tokens),
        yticklabels=list(tgt_tokens),
        linewidths=0.5,
        linecolor="white",
        square=False,
        cbar=colorbar,
        cbar_kws={"label": "attention weight"} if colorbar else None,
    )
    ax.set_xlabel("source")
    ax.set_ylabel("target")
    ax.tick_params(axis="x", labelrotation=90)
    ax.tick_params(axis="y", labelrotation=0)
    if title is not None:
        ax.set_title(title)
    return ax


def mark_links(
    ax: Axes,
    links: Collection[tuple[int, int]],
    linestyle: str = "-",
    color: str = "tab:red",
    label: str | None = None,
) -> Axes:
    """Outline the cells of alignment links on a heatmap drawn by :func:`attention_heatmap`, so a reader
    sees whether the attention falls on them.

    Args:
        ax: axes holding a ``(tgt_len, src_len)`` heatmap.
        links: ``(source j, target i)`` pairs, the order of ``sparse_tutorial.metrics.Alignment``
            (e.g. the sure links of a manual alignment).
        linestyle: outline style; e.g. ``"-"`` for sure links and ``":"`` for possible ones.
        color: outline colour.
        label: legend entry of the outlines (one entry, however many links).

    Returns:
        The axes drawn on.
    """
    src_len, tgt_len = round(max(ax.get_xlim())), round(max(ax.get_ylim()))
    for k, (j, i) in enumerate(sorted(links)):
        if not (0 <= j < src_len and 0 <= i < tgt_len):
            raise ValueError(f"link (source {j}, target {i}) lies outside the heatmap's "
                             f"{tgt_len} rows and {src_len} columns")
        ax.add_patch(Rectangle((j, i), 1, 1, fill=False, edgecolor=color, linestyle=linestyle, linewidth=1.5,
                               label=label if k == 0 else None))
    return ax


def plot_distributions(
    distributions: Mapping[str, torch.Tensor | np.ndarray],
    labels: Sequence[str] | None = None,
    ax: Axes | None = None,
    title: str | None = None,
) -> Axes:
    """Draw several attention vectors over the same positions as grouped bars.

    Args:
        distributions: name → ``(src_len,)`` weights, e.g. ``{"softmax": ..., "sparsemax": ...}``; every
            vector must have the same length.
        labels: ``src_len`` position labels (tokens); ``None`` numbers the positions from 1.
        ax: axes to draw on; a new figure is created when ``None``.
        title: axes title.

    Returns:
        The axes drawn on.
    """
    if not distributions:
        raise ValueError("distributions must hold at least one vector")
    rows = {name: _as_matrix(vector, f"distributions[{name!r}]") for name, vector in distributions.items()}
    lengths = {name: matrix.shape[1] for name, matrix in rows.items()}
    if any(matrix.shape[0] != 1 for matrix in rows.values()) or len(set(lengths.values())) != 1:
        raise ValueError(f"distributions must be vectors of one common length, got lengths {lengths}")
    src_len = next(iter(lengths.values()))
    if labels is None:
        labels = [str(i + 1) for i in range(src_len)]
    if len(labels) != src_len:
        raise ValueError(f"labels has {len(labels)} entries but the vectors have length {src_len}")
    if ax is None:
        _, ax = plt.subplots()
    positions = np.arange(src_len)
    width = 0.8 / len(rows)
    for k, (name, matrix) in enumerate(rows.items()):
        ax.bar(positions + (k - (len(rows) - 1) / 2) * width, matrix[0], width=width, label=name)
    ax.set_xticks(positions, list(labels))
    ax.set_xlabel("position")
    ax.set_ylabel("weight")
    ax.legend()
    if title is not None:
        ax.set_title(title)
    return ax


MECHANISM_PARTS = {
    "score": ("score\n$e_{ij} = \\mathrm{score}(s_i, h_j)$", "ch. 1"),
    "projection": ("projection\n$\\boldsymbol{\\alpha}_i = \\phi(\\mathbf{e}_i)$", "ch. 5–7"),
    "context": ("context\n$c_i = \\sum_j \\alpha_{ij} h_j$", "ch. 1"),
    "penalty": ("penalty on the weights\n$+\\lambda R(\\boldsymbol{\\alpha}_i)$ in the loss", "ch. 2–4"),
    "coverage": ("coverage\n$C_{i+1} = C_i + \\boldsymbol{\\alpha}_i$", "ch. 8"),
}
"""The boxes of :func:`attention_diagram`: name → (text, the chapters that change it)."""


def attention_diagram(highlight: str | None = None, ax: Axes | None = None) -> Axes:
    """The book's map of attention at decoder step ``i``: the decoder state and the encoder states are scored,
    a projection turns the scores into weights on the simplex, the weights average the encoder states into
    the context; a penalty on the weights enters the training loss, and coverage carries the weights to the
    next step's scores. ``highlight`` (a key of :data:`MECHANISM_PARTS`) draws the box a chapter changes in the
    accent colour. White boxes with dark text, so the figure reads in a light or a dark theme."""
    if highlight is not None and highlight not in MECHANISM_PARTS:
        raise ValueError(f"highlight must be None or one of {sorted(MECHANISM_PARTS)}, got {highlight!r}")
    if ax is None:
        _, ax = plt.subplots(figsize=(10, 3.4))
    ax.set_xlim(0, 10)
    ax.set_ylim(0, 3.5)
    ax.axis("off")
    centres = {"score": (2.9, 2.6), "projection": (5.3, 2.6), "context": (7.9, 2.6), "penalty": (5.3, 0.7),
               "coverage": (2.9, 0.7)}
    inputs = {"decoder state $s_i$": (0.7, 3.2), "encoder states\n$h_1, \\dots, h_n$": (0.7, 1.9)}
    box = {"boxstyle": "round,pad=0.35", "linewidth": 1.2}
    for name, (x, y) in centres.items():
        text, chapters = MECHANISM_PARTS[name]
        colour = sns.color_palette(PALETTE)[1] if name == highlight else "#ffffff"
        ax.text(x, y, text, ha="center", va="center", fontsize=10, color="#1a1a1a",
                bbox={**box, "facecolor": colour, "edgecolor": "#333333"})
        ax.text(x, y + 0.58 if y > 1.5 else y - 0.52, chapters, ha="center", va="center", fontsize=8,
                color="#555555")
    for text, (x, y) in inputs.items():
        ax.text(x, y, text, ha="center", va="center", fontsize=10, color="#1a1a1a",
                bbox={**box, "facecolor": "#f2f2f2", "edgecolor": "#999999"})
    arrow = {"arrowstyle": "-|>", "color": "#333333", "linewidth": 1.3}
    for start, end, style in [((1.45, 3.1), (1.95, 2.75), "-"), ((1.45, 2.0), (1.95, 2.45), "-"),
                              ((3.85, 2.6), (4.35, 2.6), "-"), ((6.25, 2.6), (6.85, 2.6), "-"),
                              ((5.3, 2.2), (5.3, 1.2), "-"), ((5.3, 2.2), (3.6, 1.15), "-"),
                              ((2.9, 1.2), (2.9, 2.15), "--"), ((8.95, 2.6), (9.7, 2.6), "-")]:
        ax.annotate("", xy=end, xytext=start, arrowprops={**arrow, "linestyle": style})
    ax.text(9.75, 2.95, "decoder", ha="right", va="center", fontsize=9, color="#555555")
    ax.text(2.8, 1.68, "next step", ha="right", va="center", fontsize=8, color="#555555")
    return ax


VERDICT_COLOURS = {"✓": "tab:green", "✗": "tab:red", "?": "tab:grey"}
"""The colour of a claim's interval in :func:`claim_family_plot`, by verdict."""


def claim_family_plot(evidence: Sequence, unit: str, title: str, ax: Axes | None = None) -> Axes:
    """One family of claims, a row each: every seed's difference as a point, the interval of the test that
    made the verdict as a bar (coloured by verdict) around its estimate, the paper's effect as a diamond
    where it states one, zero as a line, and the margin of an "on par" or "no better" claim shaded.

    Args:
        evidence: :class:`~sparse_tutorial.stats.verdicts.ClaimEvidence` rows, drawn top to bottom.
        unit: what the differences are measured in (``"BLEU"``, ``"AER"``), for the x label.
        title: the figure's title; it should state the finding.
    """
    if ax is None:
        _, ax = plt.subplots(figsize=(9, 0.9 + 0.75 * len(evidence)))
    finite = [value for row in evidence for value in (*row.differences, *(row.interval or ()), row.paper or 0.0)
              if value is not None and np.isfinite(value)]
    span = (max(finite) - min(finite)) if finite else 1.0
    for y, row in enumerate(evidence):
        if row.margin:
            ax.fill_betweenx([y - 0.35, y + 0.35], -row.margin, row.margin, color="0.9", zorder=0)
        ax.scatter(row.differences, np.full(len(row.differences), y + 0.18), s=14, color="0.35", zorder=2,
                   label="one run" if y == 0 else None)
        if row.interval is not None:
            low, high = (np.clip(bound, min(finite) - span, max(finite) + span) for bound in row.interval)
            ax.plot([low, high], [y, y], color=VERDICT_COLOURS.get(row.verdict, "black"), linewidth=3, zorder=3)
        if row.estimate is not None:
            ax.scatter([row.estimate], [y], color="black", s=22, zorder=4, label="estimate, its interval" if y == 0 else None)
        if row.paper is not None:
            ax.scatter([row.paper], [y], marker="D", color="tab:orange", s=40, zorder=5,
                       label="the paper's effect" if not any(r.paper is not None for r in evidence[:y]) else None)
    ax.axvline(0, color="black", linewidth=0.8)
    ax.set_yticks(range(len(evidence)), [textwrap.fill(f"{row.verdict}  {row.claim}", 48) for row in evidence])
    ax.set_ylim(len(evidence) - 0.5, -0.5)
    ax.set(xlabel=f"difference a − b ({unit})", title=title)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8)
    return ax
