"""A rule's settings as a dated input file (settings_inputs.py): stale tables are known from the
settings they record, and only they date the file after their outputs."""

import os
import time

import pytest

from transformer_stability.io import write_settings
from transformer_stability.settings import settings_text
from transformer_stability.settings_inputs import (
    made_under_other_settings,
    settings_input,
    settings_path,
)

OWN = {"seed": 0, "counting": {"theory": {"widths": [8, 16]}}}


def table_recording(folder, settings, name="geometry.csv"):
    table = folder / name
    table.write_text("a\n1\n")
    write_settings(table, settings, rows=1)
    return table


def test_a_table_made_under_the_jobs_settings_is_not_stale(tmp_path):
    # a derived table records its inputs' keys too: only the job's own keys are compared
    table = table_recording(tmp_path, OWN | {"apjn": {"measure": {"probes": 4}}})
    assert not made_under_other_settings([table], OWN)


@pytest.mark.parametrize(
    "recorded",
    [
        {"seed": 1, "counting": {"theory": {"widths": [8, 16]}}},
        {"seed": 0, "counting": {"theory": {"widths": [8]}}},
        {"seed": 0},  # a key the job has, not recorded
    ],
)
def test_a_table_made_under_other_values_of_the_jobs_keys_is_stale(tmp_path, recorded):
    assert made_under_other_settings([table_recording(tmp_path, recorded)], OWN)


def test_a_table_that_records_no_settings_is_stale_and_a_missing_one_is_not(tmp_path):
    rows_only = table_recording(tmp_path, None)
    assert made_under_other_settings([rows_only], OWN)
    unrecorded = tmp_path / "old.csv"
    unrecorded.write_text("a\n1\n")
    assert made_under_other_settings([unrecorded], OWN)
    assert not made_under_other_settings([tmp_path / "missing.csv"], OWN)


def test_the_input_holds_the_settings_dated_now_only_when_stale(tmp_path):
    path = tmp_path / "results/settings/counting/geometry.csv.json"
    before = time.time()
    assert settings_input(path, OWN, stale=True) == [str(path)]
    assert path.read_text() == settings_text(OWN)
    assert path.stat().st_mtime >= before - 1
    assert settings_input(path, OWN, stale=False) == [str(path)]
    assert path.stat().st_mtime == 0


def test_unchanged_settings_are_not_rewritten_and_changed_ones_are(tmp_path):
    path = tmp_path / "geometry.csv.json"
    settings_input(path, OWN, stale=False)
    inode = path.stat().st_ino
    settings_input(path, OWN, stale=False)
    assert path.stat().st_ino == inode  # written atomically (a new file) only on a change
    other = OWN | {"seed": 3}
    settings_input(path, other, stale=False)
    assert path.read_text() == settings_text(other)


def test_a_read_only_results_folder_gets_no_settings_input(tmp_path, monkeypatch):
    folder = tmp_path / "results"
    folder.mkdir()
    os.chmod(folder, 0o555)
    monkeypatch.setattr(
        "transformer_stability.settings_inputs.atomic_path",
        lambda path: (_ for _ in ()).throw(PermissionError(path)),
    )
    assert settings_input(folder / "settings/x.json", OWN, stale=True) == []


def test_the_input_is_named_after_the_jobs_first_output():
    assert settings_path("results/counting/geometry.csv") == (
        "results/settings/counting/geometry.csv.json"
    )
    assert settings_path("/scratch/run/results/apjn/x.csv") == "results/settings/apjn/x.csv.json"
