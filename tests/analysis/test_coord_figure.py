"""The coordinate-check figure, read from its artists: log-log panels, a reference line at the slope each
verdict expects, the accepted band shaded, every module's verdict and the setup named, readable line colours,
and a legend that covers no data. The input is a synthetic table, so the test takes a second or two."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pytest
from matplotlib.colors import to_rgb

from mutransfer.analysis.colors import contrast_ratio
from mutransfer.analysis.coord_figure import STEP_COLORS, coord_check_figure, expected_slope
from mutransfer.analysis.figure_kit import pyplot
from mutransfer.analysis.stability import fit_slopes, requirement, verdicts

WIDTHS = (32, 64, 128, 256)
STEPS = (0, 1, 5)
SETUP = "mup + muon, η=0.03125 (synthetic run)"
EXPONENTS = {("forward", "embed"): 0.0, ("forward", "block0.attn"): 0.05, ("forward", "logits"): -0.5,
             ("update", "embed"): 0.0, ("update", "block0.attn"): 0.9, ("update", "logits"): -0.15,
             ("dependency", "block0.attn"): 0.0, ("weight_update", "blocks.0.mlp.up.weight"): -0.6,
             ("weight_update", "lm_head.weight"): 0.30, ("weight_update", "embed.weight"): 0.25}
"""Width exponents of the synthetic measurements: stable modules, one that grows (``block0.attn``'s update),
one that shrinks (``blocks.0.mlp.up.weight``), and the LM head's relative update growing as under μP."""


def synthetic_table() -> pd.DataFrame:
    rng = np.random.default_rng(0)
    rows = []
    for (quantity, module), exponent in EXPONENTS.items():
        for step in STEPS:
            if step == 0 and quantity in ("update", "weight_update"):
                continue
            for seed in (0, 1):
                for width in WIDTHS:
                    value = (0.5 + step) * (width / WIDTHS[0]) ** exponent * float(np.exp(rng.normal(0, 0.02)))
                    rows.append({"width": width, "step": step, "module": module, "quantity": quantity,
                                 "value": value, "seed": seed})
    return pd.DataFrame(rows)


@pytest.fixture(scope="module")
def drawn() -> Any:
    table = synthetic_table()
    slopes = fit_slopes(table)
    fig = coord_check_figure(table, slopes, STEPS, "width", title=SETUP)
    fig.canvas.draw()
    yield fig, table, slopes
    pyplot().close(fig)


def panels(fig: Any) -> list[Any]:
    return [ax for ax in fig.axes if ax.get_visible()]


def test_one_log_log_panel_per_quantity_and_module(drawn: Any) -> None:
    fig, _, _ = drawn
    assert sorted(ax.get_gid() for ax in panels(fig)) == sorted(f"{q}|{m}" for q, m in EXPONENTS)
    for ax in panels(fig):
        assert (ax.get_xscale(), ax.get_yscale()) == ("log", "log"), ax.get_gid()
        assert ax.xaxis.get_transform().base == 2 and ax.yaxis.get_transform().base == 2


def test_reference_line_has_the_expected_slope_and_the_band_is_shaded(drawn: Any) -> None:
    fig, _, _ = drawn
    for ax in panels(fig):
        quantity, module = ax.get_gid().split("|")
        band = requirement(quantity, module, STEPS[-1])
        (reference,) = [line for line in ax.get_lines() if line.get_gid() == "reference"]
        x, y = (np.asarray(v, float) for v in reference.get_data())
        slope = np.polyfit(np.log2(x), np.log2(y), 1)[0]
        assert slope == pytest.approx(expected_slope(band), abs=1e-9), ax.get_gid()
        assert [c for c in ax.collections if c.get_gid() == "band"], ax.get_gid()
    lm_head = next(ax for ax in panels(fig) if ax.get_gid() == "weight_update|lm_head.weight")
    x, y = (np.asarray(v, float) for v in next(
        line for line in lm_head.get_lines() if line.get_gid() == "reference").get_data())
    # the LM head's relative update is expected to grow under μP: its reference is tilted, not flat
    assert np.polyfit(np.log2(x), np.log2(y), 1)[0] > 0.2


def test_expected_slope_reads_the_bands() -> None:
    assert expected_slope(requirement("forward", "embed", 5)) == 0.0
    assert expected_slope(requirement("forward", "logits", 5)) == 0.0
    band = requirement("weight_update", "lm_head.weight", 5)
    assert expected_slope(band) == pytest.approx((band.low + band.high) / 2)


def test_every_verdict_and_the_setup_are_on_the_figure(drawn: Any) -> None:
    fig, _, slopes = drawn
    texts = " ".join(ax.get_title() for ax in panels(fig))
    judged = verdicts(slopes)["modules"]
    assert {e["verdict"] for e in judged.values()} == {"stable", "grows", "shrinks"}
    for module, entry in judged.items():
        assert f"{module.removesuffix('.weight')}: {entry['verdict']}" in texts, module
    for row in slopes[slopes["step"] == STEPS[-1]].itertuples():
        assert f"slope {row.slope:+.2f}" in texts
    suptitle = fig.get_suptitle()
    assert SETUP in suptitle and "width" in suptitle


def test_line_colours_contrast_with_white(drawn: Any) -> None:
    fig, _, _ = drawn
    lines = [line for ax in panels(fig) for line in ax.get_lines()] + fig.legends[0].get_lines()
    assert lines
    for line in lines:
        assert contrast_ratio(to_rgb(line.get_color())) >= 3, line.get_color()
    for color in STEP_COLORS:
        assert contrast_ratio(to_rgb(color)) >= 3, color


def test_contrast_ratio() -> None:
    assert contrast_ratio((0, 0, 0)) == pytest.approx(21)
    assert contrast_ratio((1, 1, 1)) == pytest.approx(1)
    assert contrast_ratio((1, 1, 1), background=(0, 0, 0)) == pytest.approx(21)
    assert contrast_ratio(to_rgb("#767676")) == pytest.approx(4.54, abs=0.01)


def test_legend_covers_no_data(drawn: Any) -> None:
    fig, _, _ = drawn
    renderer = fig.canvas.get_renderer()
    legends = list(fig.legends) + [ax.get_legend() for ax in fig.axes if ax.get_legend() is not None]
    assert legends
    for legend in legends:
        box = legend.get_window_extent(renderer)
        for ax in panels(fig):
            assert not box.overlaps(ax.get_window_extent(renderer)), ax.get_gid()
            for line in ax.get_lines():
                points = ax.transData.transform(np.column_stack(line.get_data()).astype(float))
                inside = [box.contains(px, py) for px, py in points]
                assert not any(inside), (ax.get_gid(), line.get_gid())


def test_depth_axis() -> None:
    table = synthetic_table().rename(columns={"width": "depth"})
    fig = coord_check_figure(table, fit_slopes(table, "depth"), STEPS, "depth", title="depth run")
    try:
        assert "across depth" in fig.get_suptitle()
        assert all(ax.get_xlabel() == "depth" for ax in panels(fig))
    finally:
        pyplot().close(fig)
