"""A9's width fit (apjn/width_fit.py): the excess GMFE per width and its power-law slope."""

import numpy as np
import pandas as pd
import pytest

from transformer_stability.apjn.width_fit import (
    excess_slope,
    slope_interval,
    width_excess,
    width_slopes,
)


def _scan(widths, excess_of, inits=(0, 1)) -> pd.DataFrame:
    """Width-agreement rows of one variant and direction: two regions plus early, two inits
    whose GMFEs straddle 1 + excess_of(width) by +-10 %."""
    rows = []
    for width in widths:
        for k, init in enumerate(inits):
            for region in ("early", "shallow", "deep"):
                value = 1 + excess_of(width) * (0.9 if k == 0 else 1.1)
                value += 1.0 if region == "early" else 0.0
                rows.append(dict(norm="ln", alpha=np.nan, input="images", init_seed=init,
                                 sample=0, region=region, gmfe=value, direction="backward",
                                 gmfe_gram=value, width=width))  # fmt: skip
    return pd.DataFrame(rows)


def test_a_power_law_excess_gives_its_exponent():
    widths = np.array([64.0, 128.0, 256.0, 512.0])
    slope, points = excess_slope(widths, 0.3 * widths**-0.75)
    assert slope == pytest.approx(-0.75, abs=1e-12) and points == 4


def test_widths_without_a_positive_excess_are_not_fitted():
    slope, points = excess_slope(np.array([64.0, 128.0, 256.0]), np.array([0.1, 0.0, -0.01]))
    assert np.isnan(slope) and points == 1


def test_excess_mean_and_init_range_per_width_and_the_compared_mean():
    scan = _scan([64, 256], lambda d: 4.0 / d)
    excess = width_excess(scan)
    shallow = excess[(excess.region == "shallow") & (excess.closure == "gram")]
    assert shallow["excess_mean"].to_numpy() == pytest.approx([4 / 64, 4 / 256])
    assert shallow["excess_min"].to_numpy() == pytest.approx([0.9 * 4 / 64, 0.9 * 4 / 256])
    assert shallow["excess_max"].to_numpy() == pytest.approx([1.1 * 4 / 64, 1.1 * 4 / 256])
    compared = excess[(excess.region == "compared") & (excess.closure == "qp")]
    assert compared["excess_mean"].to_numpy() == pytest.approx([4 / 64, 4 / 256])  # not early
    slopes = width_slopes(scan)
    fitted = slopes[(slopes.region == "deep") & (slopes.closure == "gram")]["slope"]
    assert fitted.item() == pytest.approx(-1.0, abs=1e-12)
    early = slopes[(slopes.region == "early") & (slopes.closure == "gram")]["slope"]
    assert early.item() == pytest.approx(np.log((1 + 4 / 256) / (1 + 4 / 64)) / np.log(4))


def test_slope_interval_spans_the_spread_of_the_initializations():
    widths = np.array([64.0, 128.0, 256.0])
    exact = [np.full(3, 0.3 * w**-0.5) for w in widths]
    assert slope_interval(widths, exact) == pytest.approx((-0.5, -0.5), abs=1e-12)
    spread = [0.3 * w**-0.5 * np.array([0.5, 1.0, 1.5]) for w in widths]
    lo, hi = slope_interval(widths, spread)
    assert lo < -0.5 < hi and hi - lo > 0.3


def test_width_slopes_carry_their_interval():
    slopes = width_slopes(_scan([64, 128, 256], lambda d: 4.0 / d, inits=(0, 1, 2)))
    deep = slopes[(slopes.region == "deep") & (slopes.closure == "gram")].iloc[0]
    assert deep["slope"] == pytest.approx(-1.0)
    assert deep["slope_lo"] < -1.0 < deep["slope_hi"]
