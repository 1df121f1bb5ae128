"""Run plots for MLflow artifacts and the analysis notebook.

Every `*_figure` function takes plain data (lists / dicts, as the notebook reads them back from
MLflow) and returns a `matplotlib.figure.Figure`; `run_figures` builds the four plots of a run from
its `Result` alone (the pool's lineage with the winner starred and labels that never overlap,
validation scores with the winner's row framed, the holdout deltas with the mean's interval);
`trajectory_figure` draws runs side by side in the notebook.
Figures are built with the object-oriented API on an Agg canvas, never through `pyplot`: no global
backend switch, nothing left open between runs, safe in a notebook that uses another backend.
"""

from __future__ import annotations

import io
import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

if TYPE_CHECKING:
    from gepa_lab.core.result import Result

# At most this many labels are tried on a lineage plot (each is measured for overlaps).
MAX_LABELS = 40


def _figure(width: float, height: float, left: float = 0.8, bottom: float = 0.6, right: float = 0.2,
            top: float = 0.4) -> tuple[Figure, Any]:
    """A figure with fixed margins in inches (a layout engine would cost twice the drawing time,
    on the run's critical path; the margins fit the labels these plots draw)."""
    fig = Figure(figsize=(width, height))
    FigureCanvasAgg(fig)
    fig.subplots_adjust(left=left / width, bottom=bottom / height, right=1 - right / width, top=1 - top / height)
    return fig, fig.add_subplot()


def _short(candidate_id: str | None) -> str:
    return (candidate_id or "")[:8]


def lineage_figure(nodes: Sequence[Mapping[str, Any]], best_id: str | None = None,
                   title: str = "Candidate lineage") -> Figure:
    """Pool members as points (x = iteration that created them, seed at -1; y = validation mean)
    with an edge from each parent (two for a merge). `nodes`: dicts with id, parent_id, parents,
    iteration, validation_mean.
    Labels (short ids) are placed winner first, then seed, then by validation mean; a label that
    would overlap another or leave the axes is left out (the point stays)."""
    fig, ax = _figure(9.5, 4.5, right=1.7)  # the legend sits right of the axes, over no point or label
    by_id = {n["id"]: n for n in nodes}

    def x_of(node: Mapping[str, Any]) -> float:
        it = node.get("iteration")
        return -1.0 if it is None else float(it)

    for node in nodes:
        merge = len(node.get("parents") or ()) > 1
        for parent_id in node.get("parents") or [node.get("parent_id")]:
            parent = by_id.get(parent_id or "")
            if parent is not None:
                ax.plot([x_of(parent), x_of(node)], [parent["validation_mean"], node["validation_mean"]],
                        color="tab:green" if merge else "0.6", linestyle="--" if merge else "-", linewidth=1,
                        zorder=1)
    for seeds, color, name in ((True, "tab:orange", "seed"), (False, "tab:blue", "accepted child")):
        group = [n for n in nodes if (n.get("parent_id") is None) == seeds]
        ax.scatter([x_of(n) for n in group], [n["validation_mean"] for n in group], c=color, s=36, zorder=2, label=name)
    if any(len(n.get("parents") or ()) > 1 for n in nodes):
        ax.plot([], [], color="tab:green", linestyle="--", linewidth=1, label="merge (2 parents)")
    if best_id in by_id:
        best = by_id[best_id]
        ax.scatter([x_of(best)], [best["validation_mean"]], marker="*", s=260, facecolors="none",
                   edgecolors="tab:red", linewidths=1.5, zorder=3, label=f"winner {_short(best_id)}")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8)
    ax.margins(x=0.08, y=0.12)
    ax.set(xlabel="iteration (seed = -1)", ylabel="validation mean", title=title)
    ax.grid(alpha=0.3)
    order = sorted(nodes, key=lambda n: (n["id"] != best_id, n.get("parent_id") is not None, -n["validation_mean"]))
    _place_labels(fig, ax, [(_short(n["id"]), x_of(n), n["validation_mean"]) for n in order])
    return fig


def _place_labels(fig: Figure, ax: Any, labels: Sequence[tuple[str, float, float]]) -> None:
    """Annotate points in the given order, dropping every label that would overlap one already
    placed or stick out of the axes (measured on the rendered figure)."""
    renderer = fig.canvas.get_renderer()  # type: ignore[attr-defined]
    ax.autoscale_view()  # final limits before measuring
    inside = ax.get_window_extent(renderer)
    placed: list[Any] = []
    for text, x, y in labels[:MAX_LABELS]:
        label = ax.annotate(text, (x, y), textcoords="offset points", xytext=(4, 4), fontsize=7)
        box = label.get_window_extent(renderer)
        fits = inside.x0 <= box.x0 and box.x1 <= inside.x1 and inside.y0 <= box.y0 and box.y1 <= inside.y1
        if fits and not any(box.overlaps(other) for other in placed):
            placed.append(box)
        else:
            label.remove()


def heatmap_figure(candidates: Sequence[str], cases: Sequence[str],
                   scores: Sequence[Sequence[float | None]], best_id: str | None = None,
                   title: str = "Validation scores (candidates x cases)") -> Figure:
    """`scores[i][j]` = score of candidate i on validation case j (None: not scored). The
    winner's row (`best_id`) is framed in red and its label marked."""
    rows, cols = max(1, len(candidates)), max(1, len(cases))
    longest = max((len(str(c)) for c in cases), default=0) if len(cases) <= 60 else 0
    fig, ax = _figure(min(16, 3.5 + 0.45 * cols), min(14, 2.2 + 0.32 * rows + 0.06 * longest), left=1.5,
                      bottom=0.5 + 0.06 * longest, right=0.1)
    matrix = [[math.nan if v is None else float(v) for v in row] for row in scores] or [[math.nan]]
    image = ax.imshow(matrix, aspect="auto", cmap="viridis", vmin=0.0, vmax=1.0, interpolation="nearest")
    fig.colorbar(image, ax=ax, label="score")
    if len(cases) <= 60:
        ax.set_xticks(range(len(cases)), [str(c) for c in cases], rotation=60, ha="right", fontsize=7)
    if len(candidates) <= 60:
        ax.set_yticks(range(len(candidates)),
                      [("winner " if c == best_id else "") + _short(c) for c in candidates], fontsize=7)
    if best_id is not None and best_id in candidates:
        row = list(candidates).index(best_id)
        ax.add_patch(Rectangle((-0.5, row - 0.5), cols, 1, fill=False, edgecolor="tab:red", linewidth=2))
        if len(candidates) <= 60:
            ax.get_yticklabels()[row].set(color="tab:red", fontweight="bold")
    ax.set(xlabel="validation case", ylabel="candidate (pool order)", title=title)
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
    ax.set(xlabel="metric calls", ylabel="best validation mean", title=title)
    ax.grid(alpha=0.3)
    if 1 < len(series) <= 20:
        ax.legend(fontsize=7)
    return fig


def holdout_delta_figure(cases: Sequence[Mapping[str, Any]], interval: Sequence[float] | None = None,
                         confidence: float | None = None,
                         title: str = "Paired holdout deltas (winner - seed)") -> Figure:
    """One bar per holdout case; critical cases are hatched. `cases`: dicts with case_id, delta,
    critical (as in `Result.holdout_cases` and the logged holdout table). The mean delta is a
    dashed line; its interval (`interval` = [low, high], at `confidence`) a shaded band."""
    longest = max((len(str(c["case_id"])) for c in cases), default=0) if len(cases) <= 60 else 0
    fig, ax = _figure(min(16, 3.5 + 0.4 * max(1, len(cases))), 3.5 + 0.06 * longest, bottom=0.6 + 0.06 * longest,
                      top=0.75)
    if not cases:
        ax.text(0.5, 0.5, "no holdout split configured", ha="center", va="center", transform=ax.transAxes)
        ax.set_axis_off()
        return fig
    deltas = [float(c["delta"]) for c in cases]
    colors = ["tab:green" if d > 0 else "tab:red" if d < 0 else "0.6" for d in deltas]
    bars = ax.bar(range(len(cases)), deltas, color=colors)
    for bar, case in zip(bars, cases, strict=True):
        if case.get("critical"):
            bar.set(hatch="//", edgecolor="black")
    ax.axhline(0.0, color="black", linewidth=0.8)
    mean = math.fsum(deltas) / len(deltas)
    ax.axhline(mean, color="tab:blue", linestyle="--", linewidth=1, label=f"mean {mean:+.4f}")
    if interval is not None:
        level = f"{confidence * 100:g}% " if confidence is not None else ""
        ax.axhspan(interval[0], interval[1], color="tab:blue", alpha=0.15, zorder=0,
                   label=f"{level}interval [{interval[0]:+.4f}, {interval[1]:+.4f}]")
    ax.legend(fontsize=8, loc="lower center", bbox_to_anchor=(0.5, 1.0), ncols=2, frameon=False)  # above the bars
    if len(cases) <= 60:
        ax.set_xticks(range(len(cases)), [str(c["case_id"]) for c in cases], rotation=60, ha="right",
                      fontsize=7)
        for label, case in zip(ax.get_xticklabels(), cases, strict=True):
            if case.get("critical"):  # a zero-height bar shows no hatch
                label.set_fontweight("bold")
    ax.set(xlabel="holdout case (hatched, bold = critical)", ylabel="delta")
    ax.set_title(title, pad=20)
    ax.grid(alpha=0.3, axis="y")
    return fig


def run_figures(result: Result, name: str) -> dict[str, Figure]:
    """The plots of a finished run, by artifact name (`<name>.png`). (Best validation mean
    against the budget is MLflow's own chart of `search/best_validation_mean` over
    `search/metric_calls`.)"""
    nodes = [{"id": e.id, "parent_id": e.parent_id, "parents": list(e.parents), "iteration": e.iteration,
              "validation_mean": e.validation_mean}
             for e in result.pool]
    return {
        "lineage": lineage_figure(nodes, result.best_id, title=f"Candidate lineage: {name}"),
        "validation_heatmap": heatmap_figure([e.id for e in result.pool], result.validation_case_ids,
                                             [list(e.validation_scores) for e in result.pool], result.best_id,
                                             title=f"Validation scores (candidates x cases): {name}"),
        "holdout_deltas": holdout_delta_figure(result.holdout_cases, result.holdout_interval, result.confidence,
                                               title=f"Paired holdout deltas (winner - seed): {name}"),
    }


def png(figure: Figure, dpi: int = 100) -> bytes:
    """The figure as PNG bytes (what the tracker logs)."""
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=dpi)
    return buffer.getvalue()
