"""A run's figures as a first run meets them (issue 64), read from their artists: runs holding different setups get
a panel each and no empty axes, every panel labelling its ticks, each panel named once; a title lies wholly inside
its figure; curves.png draws validation curves where the trainer reports no training loss, and shows each width at
the trained LR nearest the η* transfer.png marks; lr_drift.png marks the targets of the run's transfer files."""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any, Iterator

import matplotlib
import numpy as np
import pandas as pd
import pytest
import yaml

matplotlib.use("Agg")

from test_figures import simulated_trials, summary_of, tidy, verify_report  # noqa: E402

from mutransfer.analysis import draw as draw_module  # noqa: E402
from mutransfer.analysis.compare import compare  # noqa: E402
from mutransfer.analysis.compare_plot import compare_figure  # noqa: E402
from mutransfer.analysis.curves_plot import chosen_lr  # noqa: E402
from mutransfer.analysis.drift_plot import TARGET_LINE, TARGET_MARK  # noqa: E402
from mutransfer.analysis.figure_kit import pyplot  # noqa: E402
from mutransfer.analysis.layout import panel_rows, wrapped_rows  # noqa: E402
from mutransfer.analysis.plots import curves_figure, transfer_figure  # noqa: E402
from mutransfer.analysis.transfer_targets import read_targets  # noqa: E402
from mutransfer.analysis.verify_plot import verify_figure  # noqa: E402
from mutransfer.schema import LR_COLUMN, LR_KEY  # noqa: E402


@pytest.fixture(autouse=True)
def close_figures() -> Iterator[None]:
    yield
    pyplot().close("all")


def flat_curves(trials: pd.DataFrame, train: bool) -> pd.DataFrame:
    """curves.csv rows for every trial: a validation curve ending at its loss, with a training curve or without
    one (a trainer that reports ``curve`` alone)."""
    return pd.DataFrame([{"setup": s, "width": w, "seed": seed, "search_key": LR_KEY, "x": x, "trial": t, "step": step,
                          "train_loss": loss + 2.0 / step if train else math.nan, "val_loss": loss + 1.0 / step}
                         for s, w, seed, x, t, loss in trials[["setup", "width", "seed", LR_COLUMN, "trial",
                                                               "val_loss"]].itertuples(index=False)
                         for step in (5, 10, 20)])


def labelled_ticks(ax: Any, axis: str) -> list[str]:
    labels = ax.get_xticklabels() if axis == "x" else ax.get_yticklabels()
    return [t.get_text() for t in labels if t.get_visible() and t.get_text()]


def assert_every_panel_labels_its_ticks(fig: Any) -> None:
    fig.canvas.draw()
    for ax in fig.axes:
        assert ax.get_visible(), "no hidden spare panel"
        assert labelled_ticks(ax, "x") and labelled_ticks(ax, "y"), f"{ax.get_title()!r} has no tick labels"


def assert_inside(fig: Any) -> None:
    """The title and every panel title lie wholly inside the figure."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    frame = fig.bbox
    texts = [fig._suptitle] + [ax.title for ax in fig.axes]
    for text in (t for t in texts if t is not None and t.get_text()):
        box = text.get_window_extent(renderer)
        assert frame.x0 <= box.x0 and box.x1 <= frame.x1 and frame.y0 <= box.y0 and box.y1 <= frame.y1, \
            f"{text.get_text()!r} reaches past the figure: {box} in {frame}"


@pytest.fixture(scope="module")
def two_runs() -> list[tuple[str, pd.DataFrame, Any]]:
    """A user's run ``mine`` of one setup named ``mine``, beside the smoke run's two setups."""
    mine = simulated_trials({"mine": {32: -4.0, 64: -4.8, 128: -5.6}}, seed=4)
    smoke = simulated_trials({"drifting": {32: -4.0, 64: -4.6}, "edge": {32: -4.0, 64: -1.2}})
    return [("mine", mine, summary_of(mine)), ("smoke", smoke, summary_of(smoke))]


def test_two_runs_of_different_setups_get_a_panel_each_and_name_each_once(
        two_runs: list[tuple[str, pd.DataFrame, Any]]) -> None:
    fig = transfer_figure([(name, tidy(trials), summary.setups()) for name, trials, summary in two_runs])
    assert len(fig.axes) == 3, "three panels, no empty ones"
    assert len({round(ax.get_position().y0, 6) for ax in fig.axes}) == 1, "three panels fit one row"
    assert_every_panel_labels_its_ticks(fig)
    titles = [ax.get_title().split("\n")[0] for ax in fig.axes]
    verdict = two_runs[0][2].setups()["mine"].verdict
    assert titles[0] == f"mine: {verdict}" and not any("mine: mine" in t for t in titles), titles
    assert [t.rsplit(": ", 1)[0] for t in titles[1:]] == ["smoke: drifting", "smoke: edge"]
    mine, drifting, edge = fig.axes
    assert drifting.get_shared_y_axes().joined(drifting, edge), "one run's panels share its loss axis"
    assert not mine.get_shared_y_axes().joined(mine, drifting), "each run keeps its own loss axis"
    curves = curves_figure([(name, trials, flat_curves(trials, True), summary.setups())
                            for name, trials, summary in two_runs])
    assert len(curves.axes) == 3
    assert_every_panel_labels_its_ticks(curves)


def test_runs_sharing_some_setups_share_a_setup_s_lr_axis(two_runs: list[tuple[str, pd.DataFrame, Any]]) -> None:
    (_, mine, _), (_, smoke, smoke_summary) = two_runs
    later = simulated_trials({"drifting": {32: -3.5, 64: -4.0}}, seed=5)
    fig = transfer_figure([("smoke", tidy(smoke), smoke_summary.setups()),
                           ("later", tidy(later), summary_of(later).setups())])
    assert len(fig.axes) == 3
    assert_every_panel_labels_its_ticks(fig)
    by_title = {ax.get_title().rsplit(": ", 1)[0].split("\n")[0]: ax for ax in fig.axes}
    first, second = by_title["smoke: drifting"], by_title["later: drifting"]
    assert first.get_shared_x_axes().joined(first, second), "one setup's panels share its LR axis"


def test_a_short_last_row_is_centred_and_no_spare_panel_is_made() -> None:
    assert wrapped_rows(1) == [1] and wrapped_rows(4) == [2, 2] and wrapped_rows(5) == [3, 2]
    assert wrapped_rows(7) == [3, 3, 1]
    fig, rows = panel_rows(wrapped_rows(5), (3.0, 2.0))
    assert len(fig.axes) == 5 and [len(row) for row in rows] == [3, 2]
    fig.canvas.draw()

    def centre(axes: list[Any]) -> float:
        return float(np.mean([(ax.get_position().x0 + ax.get_position().x1) / 2 for ax in axes]))

    assert centre(rows[1]) == pytest.approx(centre(rows[0]), abs=0.01)


@pytest.mark.parametrize("symbol, quantity", [("LR", "base learning rate η"), ("τ", "weight-decay timescale τ")])
def test_transfer_png_s_title_lies_inside_the_figure(symbol: str, quantity: str,
                                                       two_runs: list[tuple[str, pd.DataFrame, Any]]) -> None:
    name, trials, summary = two_runs[0]
    fig = transfer_figure([(name, tidy(trials), summary.setups())], "width", symbol, quantity)
    assert len(fig.axes) == 1, "one setup: the narrowest figure"
    assert_inside(fig)
    title = fig._suptitle.get_text().replace("\n", " ")
    assert "optimum at the grid's edge" in title and "× diverged" in title, "the title is whole"


def test_verify_and_compare_titles_lie_inside_their_figures(two_runs: list[tuple[str, pd.DataFrame, Any]]) -> None:
    assert_inside(verify_figure(*verify_report(True)))
    one = simulated_trials({"drifting": {32: -4.0, 64: -4.6}}, seed=6)
    other = simulated_trials({"drifting": {32: -3.0, 64: -3.6}}, seed=7)
    first, second = summary_of(one), summary_of(other)
    comparison = compare(first, second, "A", "B")

    def points(t: pd.DataFrame) -> pd.DataFrame:
        return pd.DataFrame({"key": LR_KEY, "setup": t["setup"], "width": t["width"], "seed": t["seed"],
                             "x": t[LR_COLUMN], "loss": t["val_loss"], "status": t["status"]})

    assert_inside(compare_figure(points(one), points(other), comparison.widths, comparison.setups, ("A", "B"), 0.25,
                                 (first, second)))


def outlier_trials() -> pd.DataFrame:
    """Two widths, three seeds on a bowl centred at log2 η = -6 (width 32) and -6.5 (width 64); one lucky seed at
    width 64 reaches the lowest single loss at -8, two octaves off the bowl's optimum."""
    rows = []
    for width, centre in ((32, -6.0), (64, -6.5)):
        for seed in (0, 1, 2):
            for x in np.arange(-9.0, -2.0):
                loss = 3.0 + 0.08 * (x - centre) ** 2 + 0.004 * ((seed * 7 + int(x)) % 3)
                if width == 64 and seed == 2 and x == -8.0:
                    loss = 2.9
                rows.append({"search_key": LR_KEY, "setup": "sp_adamw", "width": width, "seed": seed, LR_COLUMN: x,
                             "val_loss": loss, "status": "ok", "trial": len(rows)})
    return pd.DataFrame(rows)


@pytest.fixture()
def run_dir(tmp_path: Path) -> Path:
    """A run directory of CSVs alone (as ``plot`` reads one): the outlier trials and validation-only curves."""
    trials = outlier_trials()
    trials.to_csv(tmp_path / "trials.csv", index=False)
    flat_curves(trials, train=False).to_csv(tmp_path / "curves.csv", index=False)
    return tmp_path


def drawn(run: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """What ``mutransfer plot RUN`` draws, by file name, as figures (``draw``'s save intercepted)."""
    figures: dict[str, Any] = {}
    monkeypatch.setattr(draw_module, "save", lambda fig, path, dpi=120: figures.__setitem__(path.name, fig))
    draw_module.draw([run])
    return figures


def test_curves_and_transfer_show_the_same_best_lr(run_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    trials = outlier_trials()
    lowest = trials.loc[trials[trials["width"] == 64]["val_loss"].idxmin(), LR_COLUMN]
    figures = drawn(run_dir, monkeypatch)
    transfer, curves = figures["transfer.png"].axes[0], figures["curves.png"].axes[0]
    colours = {line.get_label(): line.get_color() for line in transfer.get_lines()
               if line.get_label().startswith("width ")}
    for width in (32, 64):
        diamond = next(line for line in transfer.get_lines()
                       if line.get_marker() == "D" and line.get_color() == colours[f"width {width}"])
        x_star = float(diamond.get_xdata()[0])
        (curve,) = [line for line in curves.get_lines() if line.get_label().startswith(f"width {width}:")]
        found = re.search(r"log2 η (\S+) \(nearest η\* (\S+)\)", curve.get_label())
        assert found, curve.get_label()
        shown, named = float(found.group(1)), float(found.group(2))
        assert named == pytest.approx(x_star, abs=0.006), "the curve names the η* transfer.png marks"
        trained = np.unique(trials[LR_COLUMN])
        assert abs(shown - x_star) == pytest.approx(np.abs(trained - x_star).min()), "the trained LR nearest η*"
        if width == 64:
            assert lowest == -8.0 and shown != lowest, "not the lowest single trial"


def test_a_trainer_without_training_curves_gets_its_validation_curves(run_dir: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    ax = drawn(run_dir, monkeypatch)["curves.png"].axes[0]
    assert "validation loss" in ax.get_title() and "no training loss" in ax.get_title()
    assert ax.get_ylabel().startswith("validation loss")
    trials, summary = outlier_trials(), summary_of(outlier_trials())
    curves = flat_curves(trials, train=False)
    for width in (32, 64):
        pick = chosen_lr(trials[trials["width"] == width], summary.setups()["sp_adamw"].line.points[width])
        assert pick is not None
        mine = curves[curves["trial"].isin([t for t, _ in pick.trials])]
        expected = mine.groupby("step")["val_loss"].mean()
        (line,) = [line for line in ax.get_lines() if line.get_label().startswith(f"width {width}:")]
        assert list(line.get_xdata()) == list(expected.index)
        assert np.allclose(line.get_ydata(), expected.to_numpy()), "the seeds' mean validation curve"
    with_training = curves_figure([("run", trials, flat_curves(trials, train=True), summary.setups())]).axes[0]
    assert "training loss" in with_training.get_title() and "no training loss" not in with_training.get_title()


def write_transfer(run: Path, name: str, document: dict[str, Any]) -> None:
    (run / name).write_text(yaml.safe_dump(document, sort_keys=False))


def test_lr_drift_marks_the_transfer_s_target(run_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_transfer(run_dir, "transfer_w1024.yaml", {
        "mutransfer_transfer": 1, "prediction": {"width": 1024, "log2_lr": -8.5, "interval": [-9.25, -7.75]},
        "source": {"setup": "sp_adamw"}})
    fig = drawn(run_dir, monkeypatch)["lr_drift.png"]
    ax = fig.axes[0]
    (mark,) = [line for line in ax.get_lines() if line.get_gid() == TARGET_MARK]
    assert mark.get_xdata()[0] == pytest.approx(10.0) and mark.get_ydata()[0] == pytest.approx(-8.5)
    bars = [seg for c in ax.collections for seg in c.get_segments() if np.allclose(np.asarray(seg)[:, 0], 10.0)]
    assert any(sorted(np.asarray(seg)[:, 1]) == pytest.approx([-9.25, -7.75]) for seg in bars), "its 95 % range"
    (vertical,) = [line for line in ax.get_lines() if line.get_gid() == TARGET_LINE]
    assert vertical.get_xdata()[0] == pytest.approx(10.0)
    assert "1024" in labelled_ticks(ax, "x")
    legend = " ".join(t.get_text() for t in ax.get_legend().get_texts())
    assert "sp_adamw: transfer to width 1024\nlog2 η* -8.50 [-9.25, -7.75]" in legend
    assert "◇ transfer's target" in fig._suptitle.get_text()
    fit = summary_of(outlier_trials()).setups()["sp_adamw"].line
    assert fit is not None and fit.slope is not None and fit.intercept is not None
    (carried,) = [line for line in ax.get_lines() if line.get_linestyle() == ":" and line.get_gid() != TARGET_LINE]
    x, y = (np.asarray(v, float) for v in carried.get_data())
    assert x[-1] == pytest.approx(10.0) and y == pytest.approx(fit.intercept + fit.slope * x), "the line carried out"
    assert_inside(fig)
    figures: dict[str, Any] = {}
    monkeypatch.setattr(draw_module, "save", lambda fig, path, dpi=120: figures.__setitem__(path, fig))
    assert draw_module.redraw_drift(run_dir) == run_dir / "lr_drift.png", "what transfer calls once it has written"
    again = figures[run_dir / "lr_drift.png"].axes[0]
    assert [line.get_xydata().tolist() for line in again.get_lines() if line.get_gid() == TARGET_MARK] == [[[10.0, -8.5]]]


def test_targets_are_read_from_sweep_and_import_transfers_and_a_broken_file_is_skipped(tmp_path: Path) -> None:
    write_transfer(tmp_path, "transfer_w4096.yaml", {
        "mutransfer_transfer": 1, "prediction": {"width": 4096, "depth": None, "log2_lr": -9.0, "interval": None},
        "source": {"setup": "mup"}})
    write_transfer(tmp_path, "transfer_w4096.partial.yaml", {
        "mutransfer_transfer": 1, "prediction": {"width": 4096, "log2_lr": -8.0, "interval": None},
        "source": {"setup": "mup"}})
    write_transfer(tmp_path, "transfer_params7e+09_tokens2e+12.yaml", {
        "mutransfer_transfer": "import", "source": {"setup": "law"}, "target": {"params": 7e9, "tokens": 2e12},
        "log2_lr": -10.0, "interval_log2": [-10.5, -9.5]})
    (tmp_path / "transfer_w8192.yaml").write_text("prediction: [unclosed")
    (tmp_path / "transfer_notes.yaml").write_text("just: a note\n")
    targets = {t.file: t for t in read_targets(tmp_path)}
    assert set(targets) == {"transfer_w4096.yaml", "transfer_params7e+09_tokens2e+12.yaml"}, \
        "a partial transfer gives way to the finished one; unreadable and foreign files are skipped"
    sweep, imported = targets["transfer_w4096.yaml"], targets["transfer_params7e+09_tokens2e+12.yaml"]
    assert sweep.at == {"width": 4096.0} and sweep.interval is None and sweep.setup == "mup"
    assert imported.at == {"params": 7e9, "tokens": 2e12} and imported.interval == (-10.5, -9.5)
