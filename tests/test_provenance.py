"""Provenance columns: every table records seed, device, dtype and package versions."""

import pandas as pd

from transformer_stability.provenance import with_provenance


def test_provenance_columns_are_appended():
    table = with_provenance(pd.DataFrame({"x": [1, 2]}), seed=7, device="cpu", dtype="float64")
    assert list(table.columns) == ["x", "seed", "device", "dtype", "versions"]
    assert table["seed"].tolist() == [7, 7]
    assert "torch=" in table["versions"][0] and "python=" in table["versions"][0]


def test_per_row_seeds_are_kept():
    runs = pd.DataFrame({"accuracy": [0.5, 0.9], "seed": [0, 1]})
    table = with_provenance(runs, seed=0, device="cpu", dtype="float32")
    assert table["seed"].tolist() == [0, 1]
