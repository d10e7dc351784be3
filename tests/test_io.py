"""Atomic writes: a failure while writing leaves neither a partial file nor a temp file; outputs
bound for a read-only folder are named before anything is written; a figure's settings are
recorded only beside a figure that was drawn."""

from types import SimpleNamespace

import pandas as pd
import pytest
from conftest import deny_writes_in

from transformer_stability.io import (
    atomic_path,
    read_only,
    read_only_error,
    read_table,
    write_table,
)
from transformer_stability.plotting import draw_figure, new_figure
from transformer_stability.settings import read_settings


def test_failed_write_leaves_nothing_behind(tmp_path):
    target = tmp_path / "out" / "table.csv"
    with pytest.raises(RuntimeError), atomic_path(target) as tmp:
        tmp.write_text("half a table")
        raise RuntimeError("killed mid-write")
    assert list((tmp_path / "out").iterdir()) == []


def test_failed_write_keeps_the_previous_version(tmp_path):
    target = tmp_path / "table.csv"
    write_table(pd.DataFrame({"x": [1]}), target)
    with pytest.raises(RuntimeError), atomic_path(target) as tmp:
        tmp.write_text("x\n2\n")
        raise RuntimeError
    assert read_table(target)["x"].tolist() == [1]


def test_table_round_trip_and_unknown_format(tmp_path):
    table = pd.DataFrame({"norm": ["ln", "derf"], "apjn": [1.5, 2.5]})
    write_table(table, tmp_path / "t.csv")
    pd.testing.assert_frame_equal(read_table(tmp_path / "t.csv"), table)
    with pytest.raises(ValueError, match="unsupported table format"):
        write_table(table, tmp_path / "t.xlsx")


def test_read_only_names_the_nearest_existing_folder_of_each_output(tmp_path, monkeypatch):
    results = tmp_path / "results"
    (results / "apjn").mkdir(parents=True)
    deny_writes_in(monkeypatch, results / "apjn")
    outputs = [
        results / "apjn" / "agreement.csv",  # in the read-only folder
        results / "apjn" / "items" / "curves" / "1-of-2.csv",  # below it, not made yet
        results / "counting" / "training.csv",  # a new folder under a writable one
        results / "config.yaml",
    ]
    assert read_only(outputs) == [str(results / "apjn")]
    message = read_only_error(read_only(outputs))
    assert str(results / "apjn") in message and "is read-only" in message
    assert "chmod -R u+w" in message and "--directory" in message
    deny_writes_in(monkeypatch, results)
    assert read_only([results / "counting" / "training.csv"]) == [str(results)]


def _stub_figure(plot):
    """A figure of no tables (its settings: none) drawn by `plot`."""
    return SimpleNamespace(tables={}, render_caption=str, labels=dict, plot=plot)


def _line():
    fig = new_figure(figsize=(2, 2))
    fig.add_subplot().plot([0, 1], [1, 0])
    return fig


def test_a_figure_is_recorded_only_once_drawn(tmp_path):
    """The settings record beside a figure appears with the figure; a drawing that fails
    leaves none, and removes the record of the figure Snakemake removed before the job."""
    pdf, png = tmp_path / "f.pdf", tmp_path / "f.png"
    draw_figure(_stub_figure(_line), {}, pdf, png)
    assert pdf.stat().st_size > 0 and png.stat().st_size > 0
    assert read_settings(pdf) == {}
    pdf.unlink(), png.unlink()  # as Snakemake does before it reruns the job

    def broken():
        raise RuntimeError("a plotting bug")

    with pytest.raises(RuntimeError, match="a plotting bug"):
        draw_figure(_stub_figure(broken), {}, pdf, png)
    assert list(tmp_path.iterdir()) == []
