"""lr_drift.png of an imported table of a real design (parameter counts and token budgets in the billions, a setup
the law judges), read from its artists: it fits a page, its tick labels are short and apart, its legends sit inside
their panels off the data, each panel draws every point the law saw with the law's slope and verdict, and a
transfer's target is marked on each axis it names."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Iterator

import matplotlib
import numpy as np
import pytest

matplotlib.use("Agg")

from mutransfer.analysis.figure_kit import MOST_TICKS, pyplot, short_number, spread_values  # noqa: E402
from mutransfer.analysis.drift_plot import TARGET_LINE, TARGET_MARK  # noqa: E402
from mutransfer.analysis.plots import drift_figure  # noqa: E402
from mutransfer.analysis.result import SetupResult, Summary  # noqa: E402
from mutransfer.importing.mapping import AxisColumn, ImportMapping  # noqa: E402
from mutransfer.importing.run import import_runs  # noqa: E402
from mutransfer.analysis.transfer_targets import TransferTarget  # noqa: E402
from mutransfer.simulation.calibration import real_truth  # noqa: E402
from mutransfer.simulation.tables import RealDesign, simulate_real_table  # noqa: E402

AXES = ("params", "tokens", "batch")
DPI = 120
"""The dpi ``analysis.figure_kit.save`` writes the figures at."""


@pytest.fixture(scope="module")
def summary(tmp_path_factory: pytest.TempPathFactory) -> Summary:
    """A simulated table of a real design (sizes, budgets and batches as published sweeps spread them), imported."""
    table = simulate_real_table(real_truth("muon", diverge_after=2.5), RealDesign(), np.random.default_rng(1)).table
    path = tmp_path_factory.mktemp("real") / "runs.csv"
    table.to_csv(path, index=False)
    mapping = ImportMapping(lr="lr", loss="val/loss", diverged_above=4.0,
                            axes=(AxisColumn("params", "n_params"), AxisColumn("tokens", "tokens"),
                                  AxisColumn("batch", "bs")))
    result = import_runs(path, None, None, mapping, path.parent / "imported", draw=False)
    assert result.summary is not None
    return result.summary


@pytest.fixture(scope="module")
def figure(summary: Summary) -> Iterator[Any]:
    fig = drift_figure([("imported", summary.setups())], list(AXES))
    fig.canvas.draw()
    yield fig
    pyplot().close(fig)


def law_setups(summary: Summary) -> dict[str, SetupResult]:
    return {name: s for name, s in summary.setups().items() if s.primary == "law" and s.law is not None}


def panel(fig: Any, axis: str) -> Any:
    return next(ax for ax in fig.axes if ax.get_visible() and ax.get_xlabel().startswith(f"{axis} "))


def test_the_figure_fits_a_page(figure: Any) -> None:
    width, height = figure.get_size_inches() * DPI
    assert width <= 1600 and height <= 1600
    assert len([ax for ax in figure.axes if ax.get_visible()]) == len(AXES)


def test_tick_labels_are_short_few_and_apart(figure: Any) -> None:
    renderer = figure.canvas.get_renderer()
    for ax in (a for a in figure.axes if a.get_visible()):
        labels = [t for t in ax.get_xticklabels() if t.get_visible() and t.get_text()]
        assert 2 <= len(labels) <= MOST_TICKS, ax.get_xlabel()
        for label in labels:
            text = label.get_text()
            assert len(text) <= 5 and not re.fullmatch(r"\d{6,}", text), text
        boxes = sorted((label.get_window_extent(renderer) for label in labels), key=lambda box: box.x0)
        assert all(left.x1 < right.x0 for left, right in zip(boxes, boxes[1:])), "tick labels overlap"


def test_legends_sit_inside_their_panels_off_the_data(figure: Any) -> None:
    renderer = figure.canvas.get_renderer()
    legends = 0
    for ax in (a for a in figure.axes if a.get_visible()):
        legend = ax.get_legend()
        if legend is None:
            continue
        legends += 1
        box, frame = legend.get_window_extent(renderer), ax.get_window_extent(renderer)
        assert frame.x0 <= box.x0 and box.x1 <= frame.x1 and frame.y0 <= box.y0 and box.y1 <= frame.y1
        points = np.vstack([line.get_transform().transform(np.column_stack(line.get_data()))
                            for line in ax.get_lines() if len(line.get_xdata())])
        inside = ((points[:, 0] > box.x0) & (points[:, 0] < box.x1) & (points[:, 1] > box.y0) &
                  (points[:, 1] < box.y1))
        assert not inside.any(), f"the legend of {ax.get_xlabel()!r} covers {int(inside.sum())} points"
    assert legends == len(AXES)


def test_a_law_setup_s_panels_draw_every_point_the_law_saw(summary: Summary, figure: Any) -> None:
    setups = law_setups(summary)
    assert setups, "the real design's setup is judged by its law"
    for axis in AXES:
        ax = panel(figure, axis)
        markers = sum(len(container.lines[0].get_xdata()) for container in ax.containers)
        assert markers == sum(sum(p.result.estimated for p in s.law.points) for s in setups.values()), axis
        legend = " ".join(t.get_text() for t in ax.get_legend().get_texts())
        for name, setup in setups.items():
            assert f"{name} (law, {setup.judged(axis).verdict})" in legend
        censored = sum(p.result.censored is not None for s in setups.values() for p in s.law.points)
        hollow = sum(len(c.lines[0].get_xdata()) for c in ax.containers if c.lines[0].get_markerfacecolor() == "none")
        assert hollow == censored, "a bound at the grid's edge is an open marker"


def test_an_import_s_target_is_marked_on_each_axis_it_names(summary: Summary) -> None:
    (setup,) = law_setups(summary)
    at = {"params": 7e9, "tokens": 2e12}
    target = TransferTarget(at, setup, -10.0, (-10.6, -9.4), "transfer_params7e+09_tokens2e+12.yaml")
    shown = ("params", "batch")
    fig = drift_figure([("imported", summary.setups())], list(shown), targets=[("imported", target)])
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    for axis in shown:
        ax = panel(fig, axis)
        marks = [line for line in ax.get_lines() if line.get_gid() == TARGET_MARK]
        verticals = [line for line in ax.get_lines() if line.get_gid() == TARGET_LINE]
        if axis not in at:
            assert not marks and not verticals, f"{axis}: the target names no value on it"
            continue
        (mark,) = marks
        assert mark.get_xdata()[0] == pytest.approx(np.log2(at[axis])) and mark.get_ydata()[0] == pytest.approx(-10.0)
        assert verticals and verticals[0].get_xdata()[0] == pytest.approx(np.log2(at[axis]))
        assert not [line for line in ax.get_lines() if line.get_linestyle() == ":" and line not in verticals], \
            "a law's setup has no line of its own to carry out to the target"
        assert short_number(at[axis]) in [t.get_text() for t in ax.get_xticklabels() if t.get_visible()]
        legend = ax.get_legend()
        assert any(t.get_text() == f"{setup}: transfer to params 7e+09, tokens 2e+12\nlog2 η* -10.00 [-10.60, -9.40]"
                   for t in legend.get_texts())
        box, frame = legend.get_window_extent(renderer), ax.get_window_extent(renderer)
        assert frame.x0 <= box.x0 and box.x1 <= frame.x1 and frame.y0 <= box.y0 and box.y1 <= frame.y1
    pyplot().close(fig)


def test_the_law_s_line_runs_through_the_other_axes_weighted_centre(summary: Summary, figure: Any) -> None:
    for setup in law_setups(summary).values():
        law = setup.law
        assert law is not None
        at_centre = law.coefficients["intercept"] + sum(law.coefficients[a] * law.centre[a] for a in law.axes)
        for axis in AXES:
            dashed = [line for line in panel(figure, axis).get_lines() if line.get_linestyle() == "--"]
            assert len(dashed) == 1
            x, y = (np.asarray(v, float) for v in dashed[0].get_data())
            assert np.interp(law.centre[axis], x, y) == pytest.approx(at_centre, abs=1e-9)
            assert (y[1] - y[0]) / (x[1] - x[0]) == pytest.approx(law.coefficients[axis])


@pytest.mark.parametrize("value, text", [(128, "128"), (4096, "4096"), (65536, "65.5k"), (64_000, "64k"),
                                         (2e9, "2B"), (2.0e10, "20B"), (1.5e12, "1.5T"), (187_973_632, "188M"),
                                         (999_950, "1M"), (0.25, "0.25"), (187973632232579072, "1.9e17")])
def test_short_number(value: float, text: str) -> None:
    assert short_number(value) == text


def test_spread_values_keeps_both_ends_and_at_most_six() -> None:
    values = [2.0 ** k for k in range(5, 14)]
    chosen = spread_values(values)
    assert chosen[0] == values[0] and chosen[-1] == values[-1] and len(chosen) <= MOST_TICKS
    assert spread_values(values[:4]) == values[:4]


def test_the_drawn_file_is_no_wider_than_a_page(summary: Summary, tmp_path: Path) -> None:
    from PIL import Image

    from mutransfer.analysis.figure_kit import save

    save(drift_figure([("imported", summary.setups())], list(AXES)), tmp_path / "lr_drift.png")
    with Image.open(tmp_path / "lr_drift.png") as image:
        assert image.size[0] <= 1600
