"""Run plots for MLflow artifacts and the analysis notebook (issue 3, item 5).

Every `*_figure` function takes plain data (lists / dicts, as the notebook reads them back from
MLflow) and returns a `matplotlib.figure.Figure`; `run_figures` builds the four plots of a run from
its `Result` alone (the pool's lineage, validation scores and join points; the holdout cases).
Figures are built with the object-oriented API on an Agg canvas, never through `pyplot`: no global
backend switch, nothing left open between runs, safe in a notebook that uses another backend.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

if TYPE_CHECKING:
    from gepa_lab.core.result import Result

# Above this many points, labels would overlap; the plot stays readable without them.
MAX_LABELS = 30


def _figure(width: float, height: float) -> tuple[Figure, Any]:
    fig = Figure(figsize=(width, height), layout="constrained")
    FigureCanvasAgg(fig)
    return fig, fig.add_subplot()


def _short(candidate_id: str | None) -> str:
    return (candidate_id or "")[:8]


def lineage_figure(nodes: Sequence[Mapping[str, Any]], best_id: str | None = None,
                   title: str = "Candidate lineage") -> Figure:
    """Pool members as points (x = iteration that created them, seed at -1; y = validation mean)
    with an edge from each parent. `nodes`: dicts with id, parent_id, iteration, validation_mean."""
    fig, ax = _figure(8, 4.5)
    by_id = {n["id"]: n for n in nodes}

    def x_of(node: Mapping[str, Any]) -> float:
        it = node.get("iteration")
        return -1.0 if it is None else float(it)

    for node in nodes:
        parent = by_id.get(node.get("parent_id") or "")
        if parent is not None:
            ax.plot([x_of(parent), x_of(node)], [parent["validation_mean"], node["validation_mean"]],
                    color="0.6", linewidth=1, zorder=1)
    xs = [x_of(n) for n in nodes]
    ys = [n["validation_mean"] for n in nodes]
    colors = ["tab:orange" if n.get("parent_id") is None else "tab:blue" for n in nodes]
    ax.scatter(xs, ys, c=colors, s=36, zorder=2)
    if best_id in by_id:
        best = by_id[best_id]
        ax.scatter([x_of(best)], [best["validation_mean"]], marker="*", s=260, facecolors="none",
                   edgecolors="tab:red", linewidths=1.5, zorder=3, label=f"best {_short(best_id)}")
        ax.legend(loc="lower right", fontsize=8)
    if len(nodes) <= MAX_LABELS:
        for n, x, y in zip(nodes, xs, ys, strict=True):
            ax.annotate(_short(n["id"]), (x, y), textcoords="offset points", xytext=(4, 4), fontsize=7)
    ax.set_xlabel("iteration (seed = -1)")
    ax.set_ylabel("validation mean")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    return fig


def heatmap_figure(candidates: Sequence[str], cases: Sequence[str],
                   scores: Sequence[Sequence[float | None]],
                   title: str = "Validation scores (candidates x cases)") -> Figure:
    """`scores[i][j]` = score of candidate i on validation case j (None: not scored)."""
    rows, cols = max(1, len(candidates)), max(1, len(cases))
    fig, ax = _figure(min(16, 3 + 0.45 * cols), min(14, 2 + 0.32 * rows))
    matrix = [[math.nan if v is None else float(v) for v in row] for row in scores] or [[math.nan]]
    image = ax.imshow(matrix, aspect="auto", cmap="viridis", vmin=0.0, vmax=1.0, interpolation="nearest")
    fig.colorbar(image, ax=ax, label="score")
    if len(cases) <= 60:
        ax.set_xticks(range(len(cases)), [str(c) for c in cases], rotation=60, ha="right", fontsize=7)
    if len(candidates) <= 60:
        ax.set_yticks(range(len(candidates)), [_short(c) for c in candidates], fontsize=7)
    ax.set_xlabel("validation case")
    ax.set_ylabel("candidate (pool order)")
    ax.set_title(title)
    return fig


def trajectory_figure(series: Mapping[str, Sequence[tuple[float, float]]],
                      title: str = "Best validation mean vs metric calls") -> Figure:
    """`series`: label -> [(metric calls, best validation mean)], drawn as step lines."""
    fig, ax = _figure(8, 4.5)
    for label, points in series.items():
        pts = sorted(points)
        if pts:
            ax.step([p[0] for p in pts], [p[1] for p in pts], where="post", marker="o", markersize=3,
                    label=label)
    ax.set_xlabel("metric calls")
    ax.set_ylabel("best validation mean")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    if 1 < len(series) <= 20:
        ax.legend(fontsize=7)
    return fig


def holdout_delta_figure(cases: Sequence[Mapping[str, Any]],
                         title: str = "Paired holdout deltas (candidate - baseline)") -> Figure:
    """One bar per holdout case; critical cases are hatched. `cases`: dicts with case_id, delta,
    critical (as in `Result.holdout_cases` and the logged holdout table)."""
    fig, ax = _figure(min(16, 3 + 0.4 * max(1, len(cases))), 4)
    if not cases:
        ax.text(0.5, 0.5, "no holdout split configured", ha="center", va="center", transform=ax.transAxes)
        ax.set_axis_off()
        return fig
    deltas = [float(c["delta"]) for c in cases]
    colors = ["tab:green" if d > 0 else "tab:red" if d < 0 else "0.6" for d in deltas]
    bars = ax.bar(range(len(cases)), deltas, color=colors)
    for bar, case in zip(bars, cases, strict=True):
        if case.get("critical"):
            bar.set_hatch("//")
            bar.set_edgecolor("black")
    ax.axhline(0.0, color="black", linewidth=0.8)
    mean = math.fsum(deltas) / len(deltas)
    ax.axhline(mean, color="tab:blue", linestyle="--", linewidth=1, label=f"mean {mean:+.4f}")
    ax.legend(fontsize=8)
    if len(cases) <= 60:
        ax.set_xticks(range(len(cases)), [str(c["case_id"]) for c in cases], rotation=60, ha="right",
                      fontsize=7)
        for label, case in zip(ax.get_xticklabels(), cases, strict=True):
            if case.get("critical"):  # a zero-height bar shows no hatch
                label.set_fontweight("bold")
    ax.set_xlabel("holdout case (hatched, bold = critical)")
    ax.set_ylabel("delta")
    ax.set_title(title)
    ax.grid(alpha=0.3, axis="y")
    return fig


def best_trajectory(result: Result) -> list[tuple[float, float]]:
    """(metric calls, best validation mean so far) at each pool join, plus the end of the search
    (the run's calls minus its holdout comparison: the baseline always, the winner unless it is the
    seed), so the line runs to where the search stopped."""
    points: list[tuple[float, float]] = []
    best = -math.inf
    for entry in result.pool:
        best = max(best, entry.validation_mean)
        points.append((float(entry.metric_calls), best))
    holdout = result.baseline_holdout.cases + (result.candidate_holdout.cases if result.best_id != result.seed_id else 0)
    if points and result.metric_calls - holdout > points[-1][0]:
        points.append((float(result.metric_calls - holdout), best))
    return points


def run_figures(result: Result, name: str) -> dict[str, Figure]:
    """The four plots of a finished run, by artifact name (`plots/<name>.png`)."""
    nodes = [{"id": e.id, "parent_id": e.parent_id, "iteration": e.iteration, "validation_mean": e.validation_mean}
             for e in result.pool]
    return {
        "lineage": lineage_figure(nodes, result.best_id, title=f"Candidate lineage: {name}"),
        "validation_heatmap": heatmap_figure([e.id for e in result.pool], result.validation_case_ids,
                                             [list(e.validation_scores) for e in result.pool]),
        "best_vs_metric_calls": trajectory_figure({name: best_trajectory(result)}),
        "holdout_deltas": holdout_delta_figure(result.holdout_cases),
    }
