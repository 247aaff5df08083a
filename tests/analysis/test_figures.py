"""The figures read as a reader would read them: their artists, not just that a PNG exists. Loss-vs-LR panels keep
every bowl in range and mark what they clip, LR* sits on its curve at the best loss, censored and diverged points
are drawn where they are, legends cover no data, every colour is readable on white; compare.png and verify.png
draw every legend entry and every promised marker, each as the panel draws it; several runs share the LR axis down
a column and keep a loss axis per row."""

from __future__ import annotations

import math
from typing import Any

import matplotlib
import numpy as np
import pandas as pd
import pytest

matplotlib.use("Agg")

from mutransfer.analysis.colors import MIN_CONTRAST, contrast_ratio, ordered_colors  # noqa: E402
from mutransfer.analysis.compare import compare  # noqa: E402
from mutransfer.analysis.drift import SearchSettings  # noqa: E402
from mutransfer.analysis.optimum import fit_halfwidth  # noqa: E402
from mutransfer.analysis.compare_plot import compare_figure  # noqa: E402
from mutransfer.analysis.plots import FITTED_BOWL, curves_figure, drift_figure, transfer_figure  # noqa: E402
from mutransfer.analysis.verify_plot import verify_figure  # noqa: E402
from mutransfer.analysis.result import Summary  # noqa: E402
from mutransfer.analysis.summary import axis_table, summarize  # noqa: E402
from mutransfer.schema import LR_COLUMN, LR_KEY, axis_named  # noqa: E402
from mutransfer.simulation.calibration import real_truth  # noqa: E402
from mutransfer.simulation.simulate import Design, SimulatedPoint, sweep_point  # noqa: E402

GRID = SearchSettings(step=1.0, low=-8.0, high=-2.0)


def simulated_trials(optima: dict[str, dict[int, float]], seed: int = 0, extend: bool = False) -> pd.DataFrame:
    """A sweep's trials.csv rows from the real-curve simulator: per setup, per width, a true optimum; the bowl
    diverges 2.5 octaves above it, and the grid's low end lies far up the bowl (a loss to clip)."""
    rng = np.random.default_rng(seed)
    truth = real_truth(diverge_after=2.5)
    rows: list[dict[str, Any]] = []
    for setup, widths in optima.items():
        design = Design(widths=tuple(widths), extend=extend)
        for width, x0 in widths.items():
            point = SimulatedPoint(truth, x0, rng)
            sweep_point(point, design, fit_halfwidth(1.0, True))
            rows += [{"search_key": LR_KEY, "setup": setup, "width": width, "seed": s, LR_COLUMN: x, "val_loss": loss,
                      "status": status, "trial": len(rows) + i} for i, (x, s, loss, status) in enumerate(point.points)]
    return pd.DataFrame(rows)


def settings_of(trials: pd.DataFrame) -> dict[str, dict[str, SearchSettings]]:
    return {LR_KEY: {s: GRID for s in trials["setup"].unique()}}


def summary_of(trials: pd.DataFrame) -> Summary:
    return summarize(trials, settings_of(trials))


def tidy(trials: pd.DataFrame) -> pd.DataFrame:
    """The learning rate's tidy rows along width (setup, point, seed, x, loss, status), as the figures read them."""
    return axis_table(trials, LR_KEY, settings_of(trials), axis_named("width"))


def data_points(fig: Any) -> np.ndarray:
    """Every plotted data point of every line, in display coordinates."""
    points = [line.get_transform().transform(np.column_stack(line.get_data()))
              for ax in fig.axes for line in ax.get_lines() if len(line.get_xdata())]
    return np.vstack(points) if points else np.empty((0, 2))


def assert_legends_cover_no_data(fig: Any) -> None:
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    points = data_points(fig)
    for ax in fig.axes:
        legend = ax.get_legend()
        if legend is None:
            continue
        box = legend.get_window_extent(renderer)
        inside = (points[:, 0] > box.x0) & (points[:, 0] < box.x1) & (points[:, 1] > box.y0) & (points[:, 1] < box.y1)
        assert not inside.any(), f"the legend of {ax.get_title()!r} covers {int(inside.sum())} data points"


def assert_colours_readable(fig: Any) -> None:
    for ax in fig.axes:
        for line in ax.get_lines():
            rgb = matplotlib.colors.to_rgb(line.get_color())
            if len(set(rgb)) > 1:
                assert contrast_ratio(rgb) >= MIN_CONTRAST, f"{line.get_label()} {rgb} on white"


@pytest.fixture(scope="module")
def sweep() -> tuple[pd.DataFrame, Summary]:
    trials = simulated_trials({"drifting": {32: -4.0, 64: -4.6, 128: -5.2}, "edge": {32: -4.0, 64: -1.2}})
    return trials, summary_of(trials)


def test_the_loss_axis_is_set_by_the_bowls_and_marks_what_it_clips(sweep: tuple[pd.DataFrame, Summary]) -> None:
    trials, summary = sweep
    fig = transfer_figure([("run", tidy(trials), summary.setups())])
    for ax in (a for a in fig.axes if a.get_visible()):
        setup = ax.get_title().split(":")[0]
        low, high = ax.get_ylim()
        ok = trials[(trials["setup"] == setup) & (trials["status"] == "ok")]
        span = high - low
        for width, opt in summary.setups()[setup].line.points.items():
            assert opt.best_loss is not None and low + 0.02 * span < opt.best_loss < high - 0.02 * span, (setup, width)
        assert ok["val_loss"].max() > high, "the far end of the grid is clipped, not the bowl flattened"
        tops = [line for line in ax.get_lines() if line.get_marker() == "^"]
        assert tops and all(np.allclose(line.get_ydata(), high) for line in tops), "clipped losses marked at the top"


def test_lr_star_sits_on_its_curve_and_censored_and_diverged_points_where_they_are(
        sweep: tuple[pd.DataFrame, Summary]) -> None:
    trials, summary = sweep
    fig = transfer_figure([("run", tidy(trials), summary.setups())])
    for ax in (a for a in fig.axes if a.get_visible()):
        setup = ax.get_title().split(":")[0]
        span = float(np.subtract(*ax.get_ylim()[::-1]))
        curves = {line.get_label(): line for line in ax.get_lines() if line.get_label().startswith("width ")}
        stars = [line for line in ax.get_lines() if line.get_marker() == "D"]
        edges = [line for line in ax.get_lines() if line.get_marker() in ("<", ">")]
        for width, opt in summary.setups()[setup].line.points.items():
            curve = curves[f"width {width}"]
            part = trials[(trials["setup"] == setup) & (trials["width"] == int(width))]
            if opt.censored:
                edge = [line for line in edges if line.get_color() == curve.get_color()]
                assert edge and edge[0].get_xdata()[0] == part[LR_COLUMN].max(), "▶ at the grid's edge, not past it"
                continue
            mine = [line for line in stars if line.get_color() == curve.get_color()]
            assert mine, f"{setup} width {width} has its LR* marker"
            x, y = mine[0].get_xdata()[0], mine[0].get_ydata()[0]
            assert x == pytest.approx(opt.x_star) and y == pytest.approx(opt.best_loss)
            bowl = [line for line in ax.get_lines() if line.get_gid() == FITTED_BOWL
                    and line.get_color() == curve.get_color()]
            assert len(bowl) == 1, f"{setup} width {width}: its fitted bowl is drawn"
            bx, by = bowl[0].get_xdata(), bowl[0].get_ydata()
            assert np.interp(x, bx, by) == pytest.approx(y, abs=1e-6 * span), "the marker sits on the drawn bowl"
            assert by.min() == pytest.approx(y, abs=1e-6 * span), "at its lowest point"
            ok = part[part["status"] == "ok"]
            means = ok[np.isin(np.round(ok[LR_COLUMN], 9), np.round(opt.window, 9))].groupby(LR_COLUMN)["val_loss"]
            off = np.abs(np.interp(means.mean().index, bx, by) - means.mean().to_numpy())
            assert bx.min() <= min(opt.window) and bx.max() >= max(opt.window)
            assert off.max() < 0.1 * span, "the bowl runs through the fit window's points"
            finite = set(np.round(part[part["status"] == "ok"][LR_COLUMN], 9))
            for line in (line for line in ax.get_lines()
                         if line.get_marker() == "x" and line.get_color() == curve.get_color()):
                assert not finite & set(np.round(line.get_xdata(), 9)), "× only where no seed trained a finite loss"
        info = summary.setups()[setup]
        assert info.verdict in ax.get_title() and ("[" in ax.get_title()) == (info.line.slope is not None)
    diverged = [line for ax in fig.axes for line in ax.get_lines() if line.get_marker() == "x"]
    assert diverged, "the simulated bowl diverges 2.5 octaves above the optimum"
    assert_legends_cover_no_data(fig)
    assert_colours_readable(fig)


def test_colours_keep_a_three_to_one_contrast_on_white() -> None:
    assert contrast_ratio((1.0, 1.0, 0.0)) < MIN_CONTRAST and contrast_ratio((0.0, 0.0, 0.0)) == pytest.approx(21)
    assert all(contrast_ratio(c) >= MIN_CONTRAST for n in (1, 2, 4, 9) for c in ordered_colors(n))


def test_compare_figure_draws_every_legend_entry_in_view(sweep: tuple[pd.DataFrame, Summary]) -> None:
    trials, summary = sweep
    later = simulated_trials({"drifting": {32: -3.0, 64: -3.6, 128: -4.2}, "edge": {32: -4.0, 64: -1.2}}, seed=1)
    later_summary = summary_of(later)
    comparison = compare(summary, later_summary, "A", "B")

    def points(t: pd.DataFrame) -> pd.DataFrame:
        return pd.DataFrame({"key": LR_KEY, "setup": t["setup"], "width": t["width"], "seed": t["seed"],
                             "x": t[LR_COLUMN], "loss": t["val_loss"], "status": t["status"]})

    fig = compare_figure(points(trials), points(later), comparison.widths, comparison.setups, ("A", "B"), 0.25,
                         (summary, later_summary))
    fig.canvas.draw()
    title = fig._suptitle.get_text()
    glyphs = {"v": "▼", "^": "△", "o": "●"}
    for ax in fig.axes:
        legend = ax.get_legend()
        if legend is None:
            continue
        labels = [text.get_text() for text in legend.get_texts()]
        if ax.get_subplotspec().rowspan.start == 0:  # the loss panels
            drawn = {(line.get_marker(), line.get_linestyle(), line.get_markerfacecolor() == (1, 1, 1, 1))
                     for line in ax.get_lines() if line.get_marker() not in ("None", "", None)}
            optimum_entries = set()
            for handle, label in zip(legend.legend_handles, labels):
                if handle.get_marker() in ("None", "", None):
                    continue
                shown = (handle.get_marker(), handle.get_linestyle(), handle.get_markerfacecolor() == (1, 1, 1, 1))
                assert any(m == shown[0] and (shown[1] == "None" or s == shown[1]) and hollow == shown[2]
                           for m, s, hollow in drawn), f"legend entry {label!r} {shown} is not what the panel draws"
                if handle.get_linestyle() == "None":
                    run = label.split(":")[0]
                    glyph = glyphs[handle.get_marker()]
                    assert glyph in label and f"{run} (" in title and glyph in title.split(f"{run} (")[1].split(")")[0]
                    optimum_entries.add(run)
            assert optimum_entries == {"A", "B"}, "the legend shows each run's optimum marker as the title names it"
            continue
        drawn_labels = {artist.get_label() for artist in ax.get_children() if hasattr(artist, "get_label")}
        containers = {c.get_label() for c in ax.containers}
        assert set(labels) <= drawn_labels | containers, set(labels) - drawn_labels - containers
        for line in ax.get_lines():
            if line.get_label().startswith("pooled shift"):
                low, high = ax.get_ylim()
                assert low < line.get_ydata()[0] < high and line.get_zorder() > 2, "the pooled line is in view, on top"
    assert_legends_cover_no_data(fig)
    assert_colours_readable(fig)


def verify_report(measured: bool) -> tuple[pd.DataFrame, dict[str, Any], pd.DataFrame, dict[str, Any]]:
    swept = simulated_trials({"drifting": {32: -4.0, 64: -4.6}})
    rows = simulated_trials({"drifting": {256: -5.8}}, seed=2)
    target: dict[str, Any] = {"setup": "drifting", "width": 256,
                              "prediction": {"log2_lr": -5.5, "interval": [-6.2, -4.8], "depth": None, "steps": None}}
    if measured:
        target.update(measured={"x_star": -5.8, "ci": [-6.0, -5.6], "best_loss": 2.0}, error=-0.3)
    return tidy(swept), summary_of(swept).setups(), rows, {"targets": [target], "step": 1.0}


@pytest.mark.parametrize("measured", [True, False])
def test_verify_figure_draws_its_measured_curve_and_only_the_markers_it_promises(measured: bool) -> None:
    fig = verify_figure(*verify_report(measured))
    ax = fig.axes[0]
    curve = [line for line in ax.get_lines() if line.get_label() == "width 256"][0]
    assert curve.get_linestyle() == "-" and len(curve.get_xdata()) >= 5, "the measured points are joined"
    stars = [line for line in ax.get_lines() if line.get_marker() == "*"]
    assert bool(stars) == measured and ("★" in fig._suptitle.get_text()) == measured
    assert_legends_cover_no_data(fig)
    assert_colours_readable(fig)


def test_several_runs_share_the_lr_axis_down_a_column_and_each_keeps_its_own_loss_axis(
        sweep: tuple[pd.DataFrame, Summary]) -> None:
    trials, summary = sweep
    other = simulated_trials({"drifting": {32: -3.5, 64: -4.0, 128: -4.5}, "edge": {32: -4.0, 64: -1.2}}, seed=3)
    other["val_loss"] += 1.5  # a run a nat and a half higher: one shared loss axis would squash both runs' bowls
    other_summary = summary_of(other)
    fig = transfer_figure([("a", tidy(trials), summary.setups()), ("b", tidy(other), other_summary.setups())])
    visible = [ax for ax in fig.axes if ax.get_visible()]
    assert len(visible) == 4
    columns: dict[str, list[Any]] = {}
    rows: dict[str, list[Any]] = {}
    for ax in visible:
        run, setup = ax.get_title().split("\n")[0].split(": ")[:2]
        columns.setdefault(setup, []).append(ax)
        rows.setdefault(run, []).append(ax)
    for first, second in columns.values():
        assert first.get_shared_x_axes().joined(first, second), "one setup's panels share the LR axis"
        assert not first.get_shared_y_axes().joined(first, second), "each run keeps its own loss axis"
    for run, (first, second) in rows.items():
        assert first.get_shared_y_axes().joined(first, second), "one run's panels share its loss axis"
        alone = transfer_figure([(run, *{"a": (tidy(trials), summary.setups()),
                                         "b": (tidy(other), other_summary.setups())}[run])])
        assert first.get_ylim() == pytest.approx(alone.axes[0].get_ylim()), f"run {run}'s row: its own bowls' range"
        assert first.yaxis.get_label_text() and any(t.get_visible() and t.get_text()
                                                    for t in first.get_yticklabels()), "each row labels its axis"
    curves = pd.DataFrame([{"trial": t, "setup": s, "width": w, "seed": seed, "search_key": LR_KEY, "step": step,
                            "train_loss": 5.0 / math.sqrt(step)}
                           for t, s, w, seed in trials[["trial", "setup", "width", "seed"]].itertuples(index=False)
                           for step in (1, 10, 20)])
    drift = drift_figure([("a", summary.setups()), ("b", summary_of(other).setups())])
    assert_legends_cover_no_data(drift)
    assert_colours_readable(drift)
    fig = curves_figure([("a", trials, curves, summary.setups()), ("b", trials, curves, summary.setups())])
    visible = [ax for ax in fig.axes if ax.get_visible()]
    assert len(visible) == 4 and visible[0].get_shared_y_axes().joined(visible[0], visible[1])
    assert not visible[0].get_shared_y_axes().joined(visible[0], visible[-1]), "each run's row has its loss axis"
