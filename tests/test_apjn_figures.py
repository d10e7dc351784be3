"""Study A's figure helpers: the ratio panels show each curve's measured/theory, not the ratio
of the means, so that single curves' deviations stay visible."""

import pandas as pd
import pytest

from transformer_stability.apjn.figures._common import _ratio_spread


def test_ratio_spread_is_the_mean_and_range_of_the_per_curve_ratios():
    rows = pd.DataFrame({
        "block": [1, 1, 2, 2],
        "apjn": [1.1, 2.0, 3.0, 8.0],
        "apjn_theory": [1.0, 2.5, 2.0, 10.0],
        "apjn_theory_gram": [1.1, 2.0, 3.0, 8.0],
    })  # fmt: skip
    stats = _ratio_spread(rows, "block").set_index("block")
    assert stats.loc[1].tolist() == pytest.approx([0.95, 0.8, 1.1])
    assert stats.loc[2].tolist() == pytest.approx([1.15, 0.8, 1.5])
    gram = _ratio_spread(rows, "block", "apjn_theory_gram")
    assert gram["min"].tolist() == gram["max"].tolist() == [1.0, 1.0]
