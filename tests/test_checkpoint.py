"""Checkpoints of long loops: a run killed mid-loop resumes with the finished items, and the
resumed table equals an uninterrupted one."""

import pandas as pd
import pytest
from conftest import ROOT, deep_merge, load_yaml

from transformer_stability.apjn import experiment, train
from transformer_stability.checkpoint import Checkpoint


class Killed(Exception):
    """Stands in for a SIGKILL arriving in the middle of a loop."""


def _apjn_tiny(default_config: dict) -> dict:
    """The tiny test config's Study A section, smaller still (seconds per sweep)."""
    tiny = deep_merge(default_config, load_yaml(ROOT / "tests" / "configs" / "tiny.yaml"))
    smaller = {
        "model": {"width": 16, "depth": 3},
        "measure": {"sweep_samples": 1},
        "depth_scaling": {"max_depth": 3},
        "train": {"steps": 2, "data": {"train": 8, "test": 4}},
    }
    return deep_merge(tiny["apjn"], smaller)


def test_items_are_stored_then_loaded_not_recomputed(tmp_path):
    calls = []
    first = Checkpoint(tmp_path / "ckpt", {"seed": 0})
    assert first.cached("a", lambda: calls.append("a") or {"x": 1.5}) == {"x": 1.5}
    again = Checkpoint(tmp_path / "ckpt", {"seed": 0})
    assert again.cached("a", lambda: calls.append("a again") or None) == {"x": 1.5}
    assert calls == ["a"] and again.loaded == 1 and again.computed == 0
    # no temporary files are left behind by the atomic writes
    assert sorted(p.name for p in (tmp_path / "ckpt").iterdir()) == ["a.pkl", "fingerprint.json"]
    again.clear()
    assert not (tmp_path / "ckpt").exists()


def test_a_checkpoint_made_with_other_settings_is_discarded(tmp_path):
    Checkpoint(tmp_path / "ckpt", {"seed": 0}).cached("a", lambda: 1)
    other = Checkpoint(tmp_path / "ckpt", {"seed": 1})
    assert other.cached("a", lambda: 2) == 2
    assert other.loaded == 0


def test_beside_output_fingerprints_source_and_threads(tmp_path):
    checkpoint = Checkpoint.beside(tmp_path / "results" / "table.csv", seed=3)
    assert checkpoint.directory == tmp_path / "results" / ".table.csv.ckpt"
    assert {"seed", "torch_threads", "source"} <= set(checkpoint.fingerprint)
    assert len(checkpoint.fingerprint["source"]) == 64


def test_killed_training_sweep_resumes_and_matches_an_uninterrupted_one(
    tmp_path, monkeypatch, default_config
):
    apjn = _apjn_tiny(default_config)
    uninterrupted = train.trainability(apjn, "cpu", 0)
    assert len(uninterrupted) == 3

    real_train_one, calls = train.train_one, []

    def dies_on_second_run(*args, **kwargs):
        calls.append(1)
        if len(calls) == 2:
            raise Killed
        return real_train_one(*args, **kwargs)

    monkeypatch.setattr(train, "train_one", dies_on_second_run)
    fingerprint = {"apjn": apjn, "seed": 0}
    with pytest.raises(Killed):
        train.trainability(apjn, "cpu", 0, Checkpoint(tmp_path / "ckpt", fingerprint))

    monkeypatch.setattr(train, "train_one", real_train_one)
    resumed_checkpoint = Checkpoint(tmp_path / "ckpt", fingerprint)
    resumed = train.trainability(apjn, "cpu", 0, resumed_checkpoint)
    assert (resumed_checkpoint.loaded, resumed_checkpoint.computed) == (1, 2)
    pd.testing.assert_frame_equal(resumed, uninterrupted)


def test_killed_measurement_resumes_and_matches_an_uninterrupted_one(
    tmp_path, monkeypatch, default_config
):
    apjn = _apjn_tiny(default_config)
    uninterrupted = experiment.depth_points(apjn, "cpu", 0)

    real, calls = experiment._end_to_end_job, []

    def dies_on_third_model(*args, **kwargs):
        calls.append(1)
        if len(calls) == 3:
            raise Killed
        return real(*args, **kwargs)

    monkeypatch.setattr(experiment, "_end_to_end_job", dies_on_third_model)
    with pytest.raises(Killed):
        experiment.depth_points(apjn, "cpu", 0, Checkpoint(tmp_path / "ckpt", {"seed": 0}))

    monkeypatch.setattr(experiment, "_end_to_end_job", real)
    checkpoint = Checkpoint(tmp_path / "ckpt", {"seed": 0})
    resumed = experiment.depth_points(apjn, "cpu", 0, checkpoint)
    assert (checkpoint.loaded, checkpoint.computed) == (2, 1)
    pd.testing.assert_frame_equal(resumed, uninterrupted)
