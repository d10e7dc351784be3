"""A9's width fit (apjn/width_fit.py): the excess GMFE per width and its power-law slope."""

import numpy as np
import pandas as pd
import pytest
from conftest import ROOT, deep_merge, load_yaml

from transformer_stability.apjn.items import scan_items, width_items
from transformer_stability.apjn.width_fit import (
    excess_slope,
    scan_table,
    slope_interval,
    width_excess,
    width_slopes,
)
from transformer_stability.config import validate_config


@pytest.fixture(scope="module")
def tiny_config(schema) -> dict:
    config = deep_merge(
        load_yaml(ROOT / "config.yaml"), load_yaml(ROOT / "tests/configs/tiny.yaml")
    )
    return validate_config(config, schema)


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


def _rows(item, width=None, input="images", gmfe=1.5) -> pd.DataFrame:
    """Agreement rows of one model (one sample, two regions); with `width`, width-agreement
    rows."""
    spec = item.curve.spec
    alpha = np.nan if spec.alpha is None else spec.alpha
    rows = pd.DataFrame(
        [dict(norm=spec.norm, alpha=alpha, input=input, init_seed=item.curve.settings.seed,
              sample=0, region=region, gmfe=gmfe + k, direction="backward", gmfe_gram=gmfe)
         for k, region in enumerate(("shallow", "deep"))]
    )  # fmt: skip
    return rows if width is None else rows.assign(width=width)


def test_the_scan_table_takes_each_model_from_the_sweep_that_measured_it(tiny_config):
    apjn = tiny_config["apjn"]
    scan, measured_here = scan_items(apjn, 0), width_items(apjn, 0)
    shared = [item for item in scan if item not in measured_here]
    assert shared and measured_here
    gmfe = {item: 1.0 + 0.01 * k for k, item in enumerate(scan)}
    measured = pd.concat(
        [_rows(i, i.curve.spec.width, gmfe=gmfe[i]) for i in reversed(measured_here)]
    )
    # agreement.csv: every image model of the curve sweep, with equiangular rows beside them
    agreement = pd.concat(
        [_rows(i, gmfe=gmfe[i]) for i in shared]
        + [_rows(i, input="equiangular", gmfe=9.0) for i in shared]
    )
    table = scan_table(measured, agreement, scan, measured_here)
    expected = pd.concat([_rows(i, i.curve.spec.width, gmfe=gmfe[i]) for i in scan])
    pd.testing.assert_frame_equal(table, expected.reset_index(drop=True), check_like=False)
    missing = agreement["init_seed"] != shared[0].curve.settings.seed
    with pytest.raises(ValueError, match=shared[0].id):
        scan_table(measured, agreement[missing], scan, measured_here)
    # a model the width sweep measures is never taken from agreement.csv, even where the
    # sweep's rows are missing
    swept = measured_here[0]
    lost = measured["init_seed"] != swept.curve.settings.seed
    with pytest.raises(ValueError, match=swept.id):
        scan_table(measured[lost], pd.concat([agreement, _rows(swept)]), scan, measured_here)
