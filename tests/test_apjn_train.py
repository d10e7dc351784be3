"""The trainability sweep's data, schedule and training loop."""

import dataclasses
import math

import numpy as np
import pytest
import torch
from test_apjn_measure import _fake_cifar

from transformer_stability.apjn.items import Schedule
from transformer_stability.apjn.spec import ViTSpec
from transformer_stability.apjn.train import (
    _lr_at,
    cifar100_dataset,
    texture_dataset,
    train_one,
)

CFG = Schedule(steps=60, batch_size=32, lr=3e-3, weight_decay=0.0, warmup_fraction=0.1)
SMALL = ViTSpec(width=32, heads=2, depth=2, img_size=8, patch_size=4, relu=False)


def test_texture_dataset_is_balanced_and_test_crops_are_unseen():
    data = texture_dataset(classes=3, size=8, train=20, test=10, seed=0)
    assert data.x_train.shape == (60, 3, 8, 8) and data.x_test.shape == (30, 3, 8, 8)
    assert np.bincount(data.y_train.numpy()).tolist() == [20, 20, 20]
    assert np.bincount(data.y_test.numpy()).tolist() == [10, 10, 10]
    train = {tuple(x.flatten().tolist()) for x in data.x_train}
    assert not any(tuple(x.flatten().tolist()) in train for x in data.x_test)
    again = texture_dataset(classes=3, size=8, train=20, test=10, seed=0)
    torch.testing.assert_close(data.x_train, again.x_train)


def test_learning_rate_warms_up_then_decays_to_zero():
    rates = [_lr_at(step, 100, 1.0, 10) for step in range(100)]
    assert rates[0] == pytest.approx(0.1) and rates[9] == pytest.approx(1.0)
    assert all(a >= b for a, b in zip(rates[9:], rates[10:], strict=False))
    assert rates[-1] < 1e-3 and _lr_at(100, 100, 1.0, 10) == pytest.approx(0.0)


@pytest.mark.parametrize(("norm", "alpha"), [("ln", None), ("derf", 1.0)])
def test_training_learns_an_easy_texture_task(norm, alpha):
    data = texture_dataset(classes=2, size=8, train=64, test=32, seed=0)
    result = train_one(SMALL.with_(norm=norm, alpha=alpha), data, CFG, seed=0, device="cpu")
    assert not result["diverged"] and result["steps"] == CFG.steps
    assert result["final_loss"] < math.log(2)  # below chance-level cross-entropy
    assert result["train_accuracy"] > 0.6


def test_cifar_training_resizes_on_the_fly(tmp_path):
    _fake_cifar(tmp_path, n=40)
    data = cifar100_dataset(str(tmp_path), train=0, test=10, seed=0)
    assert data.classes == 100 and data.x_train.shape == (40, 3, 32, 32)
    assert data.x_test.shape == (10, 3, 32, 32)
    short = dataclasses.replace(CFG, steps=2)
    result = train_one(SMALL, data, short, seed=0, device=torch.device("cpu"))
    assert result["steps"] == 2 and 0.0 <= result["test_accuracy"] <= 1.0
