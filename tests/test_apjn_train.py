"""The trainability sweep's data, the authors' recipe, and the batched training loop."""

import dataclasses
import logging
import math
from functools import partial

import numpy as np
import pytest
import torch
from test_apjn_measure import _fake_cifar
from torch import nn

from transformer_stability.apjn.batched import (
    BatchedAdamW,
    StackedModels,
    decayed_parameters,
    vit_logits,
    warmup_constant,
)
from transformer_stability.apjn.inputs import normalize, read_cifar100
from transformer_stability.apjn.models import build_vit
from transformer_stability.apjn.spec import ViTSpec, resolve_init_std
from transformer_stability.apjn.train_items import Schedule, TrainData, TrainItem
from transformer_stability.apjn.training import (
    GroupTraining,
    Instability,
    _crops,
    _to_model_size,
    cifar100_dataset,
    dataset,
    segment_end,
    texture_dataset,
    train_group,
    train_segment,
    train_table,
)
from transformer_stability.sweep_jobs import load_checkpoint, save_checkpoint

CPU = torch.device("cpu")
CFG = Schedule(steps=60, batch_size=32, weight_decay=0.05, warmup_fraction=0.1)
SMALL = ViTSpec(width=32, heads=2, depth=2, img_size=8, patch_size=4, num_classes=3)


def test_texture_dataset_is_balanced_and_test_crops_are_unseen():
    data = texture_dataset(classes=3, size=8, train=20, test=10, seed=0)
    assert data.x_train.shape == (60, 3, 8, 8) and data.x_test.shape == (30, 3, 8, 8)
    assert np.bincount(data.y_train.numpy()).tolist() == [20, 20, 20]
    assert np.bincount(data.y_test.numpy()).tolist() == [10, 10, 10]
    train = {tuple(x.flatten().tolist()) for x in data.x_train}
    assert not any(tuple(x.flatten().tolist()) in train for x in data.x_test)
    again = texture_dataset(classes=3, size=8, train=20, test=10, seed=0)
    torch.testing.assert_close(data.x_train, again.x_train)


def test_learning_rate_warms_up_linearly_then_stays_constant():
    rates = [warmup_constant(step, 10) for step in range(40)]
    assert rates[0] == pytest.approx(0.1) and rates[4] == pytest.approx(0.5)
    assert rates[9:] == [1.0] * 31
    assert warmup_constant(0, 1) == warmup_constant(0, 0) == 1.0  # no warm-up: the peak at once


def test_weight_decay_falls_on_weight_matrices_only():
    model = build_vit(SMALL.with_(norm="derf", alpha=1.0), seed=0)
    matrices = {
        f"{name}.weight"
        for name, module in model.named_modules()
        if isinstance(module, nn.Linear | nn.Conv2d)
    }
    assert decayed_parameters(model) == matrices
    assert "blocks.0.norm1.alpha" in dict(model.named_parameters())


class _Scaled(nn.Module):
    """A model without timm's no_weight_decay and with a buffer that its forward reads."""

    def __init__(self, scale: float) -> None:
        super().__init__()
        self.linear = nn.Linear(3, 2)
        self.register_buffer("scale", torch.tensor(scale))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.scale * self.linear(x)


def test_any_model_decays_its_matrices_and_stacks_its_buffers():
    torch.manual_seed(0)
    models = [_Scaled(1.0), _Scaled(3.0)]
    assert decayed_parameters(models[0]) == {"linear.weight"}
    stacked = StackedModels(models)
    x = torch.randn(2, 4, 3)
    out = stacked(x)
    for r, model in enumerate(models):
        torch.testing.assert_close(out[r], model(x[r]))


@pytest.mark.parametrize(
    "norm, alpha, relu", [("ln", None, True), ("derf", 1.5, True), ("dyt", 0.5, False)]
)
def test_the_batched_vit_forward_is_timms_for_every_run(norm, alpha, relu):
    """vit_logits on stacked ViTs (different α₀, multipliers and seeds) equals each model's own
    timm forward on its own images, in float64 to rounding."""
    specs = [SMALL.with_(norm=norm, alpha=alpha and alpha * k, attn_mult=k, mlp_mult=1 / k,
                         relu=relu, num_classes=5) for k in (1.0, 2.0, 0.5)]  # fmt: skip
    models = [build_vit(spec, seed=s).double() for s, spec in enumerate(specs)]
    stacked = StackedModels(models, partial(vit_logits, spec=specs[0]))
    x = torch.randn(3, 4, 3, SMALL.img_size, SMALL.img_size, dtype=torch.float64)
    out = stacked(x)
    assert out.shape == (3, 4, 5)
    for r, model in enumerate(models):
        torch.testing.assert_close(out[r], model(x[r]), rtol=1e-12, atol=1e-12)


def test_a_group_of_two_norms_is_refused():
    data = texture_dataset(classes=2, size=8, train=4, test=2, seed=0)
    short = Schedule(steps=1, batch_size=2, weight_decay=0.0, warmup_fraction=0.5)
    specs = [SMALL.with_(norm="derf", alpha=1.0), SMALL.with_(norm="dyt", alpha=1.0)]
    with pytest.raises(ValueError, match="one norm"):
        train_group(specs, [1e-3, 1e-3], [0, 0], data, short, CPU)


def _loss(logits: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return nn.functional.cross_entropy(logits, y)


def test_batched_steps_equal_separate_torch_adamw_runs():
    """Three models (different α₀, init multiplier and rate), each on its own batches, trained
    together for a few warm-up steps end where torch.optim.AdamW, run on each alone with weight
    decay on its matrices only, ends."""
    specs = [SMALL.with_(norm="derf", alpha=a, attn_mult=k, mlp_mult=k)
             for a, k in ((0.5, 1.0), (2.0, 4.0), (1.0, 2.0))]  # fmt: skip
    lrs = [1e-3, 3e-3, 1e-3]
    torch.manual_seed(0)
    batches = [(torch.randn(3, 8, 3, 8, 8).double(), torch.randint(3, (3, 8))) for _ in range(3)]
    stacked = StackedModels([build_vit(s, seed=0).double() for s in specs])
    opt = BatchedAdamW(stacked.flat, stacked.decayed, lrs, weight_decay=0.05)
    for step, (x, y) in enumerate(batches):
        logits = stacked(x)
        sum(_loss(logits[r], y[r]) for r in range(len(specs))).backward()
        opt.step(warmup_constant(step, 5))
    for r, (spec, lr) in enumerate(zip(specs, lrs, strict=True)):
        model = build_vit(spec, seed=0).double()
        named = dict(model.named_parameters())
        decay = decayed_parameters(model)
        groups = [
            {"params": [p for n, p in named.items() if n in decay], "weight_decay": 0.05},
            {"params": [p for n, p in named.items() if n not in decay], "weight_decay": 0.0},
        ]
        ref = torch.optim.AdamW(groups, lr=lr, betas=(0.9, 0.999))
        for step, (x, y) in enumerate(batches):
            for group in ref.param_groups:
                group["lr"] = lr * warmup_constant(step, 5)
            ref.zero_grad()
            _loss(model(x[r]), y[r]).backward()
            ref.step()
        # float64; Adam's division by sqrt(v) amplifies rounding where gradients nearly cancel,
        # so atol 1e-7: a slip in the decay (lr * 0.05 * w ~ 1e-5) or rate is far above it
        for name, p in named.items():
            torch.testing.assert_close(stacked.params()[name][r], p, rtol=1e-6, atol=1e-7)


def test_the_flat_buffer_puts_the_decayed_parameters_first():
    model = build_vit(SMALL.with_(norm="derf", alpha=1.0), seed=0)
    stacked = StackedModels([model, model])
    decay = decayed_parameters(model)
    assert stacked.decayed == sum(p.numel() for n, p in model.named_parameters() if n in decay)
    flags = [name in decay for name in stacked.names]
    assert flags == sorted(flags, reverse=True)
    assert sorted(stacked.names) == sorted(name for name, _ in model.named_parameters())
    for name, p in model.named_parameters():
        torch.testing.assert_close(stacked.params()[name][1], p, rtol=0, atol=0)


def test_batched_training_equals_independent_single_run_trainings():
    """Two seeds x two configurations x two rates as one tensor program, each seed with its own
    batch order, end where each run trained alone ends (float32: up to the order of sums in
    the batched matrix products)."""
    data = texture_dataset(classes=3, size=8, train=16, test=8, seed=0)
    short = Schedule(steps=6, batch_size=4, weight_decay=0.05, warmup_fraction=0.5)
    configs = [SMALL.with_(norm="derf", alpha=a, attn_mult=k, mlp_mult=k)
               for a, k in ((0.5, 1.0), (2.0, 4.0))]  # fmt: skip
    runs = [(spec, lr, seed) for seed in (0, 1) for spec in configs for lr in (1e-3, 1e-2)]
    together = train_group(*map(list, zip(*runs, strict=True)), data, short, CPU)
    for (spec, lr, seed), row in zip(runs, together, strict=True):
        (alone,) = train_group([spec], [lr], [seed], data, short, CPU)
        assert row == pytest.approx(alone, rel=1e-5)
    # the seeds drew different batches and inits: their losses differ
    assert together[0]["final_loss"] != pytest.approx(together[4]["final_loss"], rel=1e-3)


def test_a_diverging_run_is_marked_and_leaves_the_others_untouched():
    data = texture_dataset(classes=3, size=8, train=16, test=8, seed=0)
    short = Schedule(steps=8, batch_size=8, weight_decay=0.05, warmup_fraction=0.25)
    specs = [SMALL.with_(norm="derf", alpha=1.0), SMALL.with_(norm="derf", alpha=1.0)]
    both = train_group(specs, [1e-3, 1e30], [0, 0], data, short, CPU)
    alone = train_group(specs[:1], [1e-3], [0], data, short, CPU)
    assert both[1]["diverged"] and math.isnan(both[1]["final_loss"])
    assert both[1]["steps"] < short.steps
    assert not both[0]["diverged"]
    for key in ("final_loss", "train_accuracy", "test_accuracy", "theory_log_apjn",
                "measured_log_apjn"):  # fmt: skip
        assert both[0][key] == pytest.approx(alone[0][key], rel=1e-5)


@pytest.mark.parametrize(("norm", "alpha"), [("ln", None), ("derf", 1.0)])
def test_training_learns_an_easy_texture_task(norm, alpha):
    data = texture_dataset(classes=2, size=8, train=64, test=32, seed=0)
    spec = SMALL.with_(norm=norm, alpha=alpha)
    (result,) = train_group([spec], [3e-3], [0], data, CFG, CPU)
    assert not result["diverged"] and result["steps"] == CFG.steps
    assert result["final_loss"] < math.log(2)  # below chance-level cross-entropy
    assert result["train_accuracy"] > 0.6 and result["test_accuracy"] > 0.6


def test_apjn_at_init_grows_with_alpha_and_init_multiplier_as_theory_says():
    data = texture_dataset(classes=3, size=8, train=16, test=8, seed=0)
    short = Schedule(steps=1, batch_size=8, weight_decay=0.05, warmup_fraction=0.1)
    specs = [SMALL.with_(norm="derf", alpha=a, attn_mult=k, mlp_mult=k, depth=6)
             for a, k in ((0.5, 1.0), (2.0, 1.0), (2.0, 4.0))]  # fmt: skip
    rows = train_group(specs, [1e-3] * 3, [0] * 3, data, short, CPU)
    log_j = [row["theory_log_apjn"] for row in rows]
    assert 0 < log_j[0] < log_j[1] < log_j[2]
    measured = [row["measured_log_apjn"] for row in rows]
    assert measured == pytest.approx(log_j, abs=0.35)  # width 32: finite-width scatter


def test_cifar_training_resizes_on_the_fly(tmp_path):
    _fake_cifar(tmp_path, n=40)
    data = cifar100_dataset(str(tmp_path), train=0, test=10, seed=0)
    assert data.classes == 100 and data.x_train.shape == (40, 3, 32, 32)
    assert data.x_test.shape == (10, 3, 32, 32)
    short = Schedule(steps=2, batch_size=8, weight_decay=0.05, warmup_fraction=0.1)
    (result,) = train_group([SMALL], [1e-3], [0], data, short, CPU)
    assert result["steps"] == 2 and 0.0 <= result["test_accuracy"] <= 1.0


def test_instability_counts_spikes_blowups_and_the_first_non_finite_step():
    events = Instability(3)
    losses = [(2.0, 2.0, 2.0), (1.0, 1.0, 1.0), (9.0, 1.0, 1.0), (9.0, 1.0, math.nan)]
    grads = [(1.0, 1.0, 1.0), (1.0, 1.0, 1.0), (1.0, 50.0, 1.0), (1.0, 1.0, 1.0)]
    for step, (loss, grad) in enumerate(zip(losses, grads, strict=True)):
        events.update(step, torch.tensor(loss), torch.tensor(grad))
    # run 0: the smoothed loss 1.9 -> 2.61 -> 3.25 crosses 1.5 x its lowest (1.9) once
    assert events.columns(0) == {"diverged": False, "loss_spikes": 1, "grad_blowups": 0}
    assert events.columns(1) == {"diverged": False, "loss_spikes": 0, "grad_blowups": 1}
    assert events.columns(2) == {"diverged": True, "loss_spikes": 0, "grad_blowups": 0}
    assert events.failed.tolist() == [-1, -1, 3]


def test_two_segments_through_a_checkpoint_equal_one_uninterrupted_training(tmp_path):
    """A training stopped after a step, saved, and resumed in a fresh process state (new models,
    optimizer and batch order, the checkpoint read back from disk) ends bit for bit where the
    uninterrupted one ends: weights, AdamW's moments and step counts, events and outcomes."""
    data = texture_dataset(classes=3, size=8, train=16, test=8, seed=0)
    short = Schedule(steps=8, batch_size=4, weight_decay=0.05, warmup_fraction=0.5)
    specs = [SMALL.with_(norm="derf", alpha=1.0), SMALL.with_(norm="derf", alpha=4.0)]
    args = (specs, [1e-3, 3e-2], [0, 1], data, short, CPU)
    whole = GroupTraining(*args)
    whole.run(short.steps)
    first = GroupTraining(*args)
    first.run(3)  # mid warm-up: the resumed rate must pick up the schedule
    save_checkpoint({"item": first.state()}, tmp_path / "segment1.pt")
    second = GroupTraining(*args)
    second.load(load_checkpoint([str(tmp_path / "segment1.pt")])["item"])
    assert second.step == 3
    second.run(short.steps)
    assert torch.equal(second.models.flat, whole.models.flat)
    for name, tensor in whole.opt.state().items():
        assert torch.equal(second.opt.state()[name], tensor), name
    assert second.rows() == whole.rows()
    assert not list(tmp_path.glob(".*"))  # written atomically: no part file left


TASK = TrainData("textures", classes=3, train=8, test=4, cifar_root=None, img_size=8, seed=5)
ITEM = TrainItem(
    SMALL.with_(norm="derf", width=16), "vit_b", alphas=(1.0, 2.0), mults=(1.0, 2.0),
    lrs=(1e-3, 1e-2), seeds=(3, 4), data=TASK,
    schedule=Schedule(steps=4, batch_size=4, weight_decay=0.05, warmup_fraction=0.5),
    segments=2,
)  # fmt: skip


def test_an_items_table_has_a_row_per_run_in_its_order_with_its_settings():
    table = train_table(ITEM, CPU)
    runs = ITEM.runs
    assert len(table) == len(runs) == 16
    assert table["alpha"].tolist() == [run.alpha for run in runs]
    assert table["attn_mult"].tolist() == table["mlp_mult"].tolist() == [r.mult for r in runs]
    assert table["lr"].tolist() == [run.lr for run in runs]
    assert table["train_seed"].tolist() == [run.seed for run in runs]
    assert set(table["norm"]) == {"derf"} and set(table["dataset"]) == {"textures"}
    assert set(table["width"]) == {16} and set(table["depth"]) == {2}
    assert set(table["init_std"]) == {resolve_init_std("vit_b", 16)}
    assert set(table["steps"]) == {4} and not table["diverged"].any()
    assert table["final_loss"].gt(0).all() and table["test_accuracy"].between(0, 1).all()
    # runs that differ only in rate share their model at init, hence its J^{L,0}
    at_init = table.groupby(["alpha", "attn_mult", "train_seed"])["theory_log_apjn"].nunique()
    assert (at_init == 1).all() and table["theory_log_apjn"].nunique() == 8


@pytest.mark.slow
def test_an_item_trained_in_segments_equals_one_training(caplog):
    assert [segment_end(ITEM, k) for k in (1, 2)] == [2, 4]
    with caplog.at_level(logging.INFO, logger="transformer_stability.apjn.training"):
        state = train_segment(ITEM, CPU, 1, None)
    assert state["step"] == 2
    assert "derf_depth2: segment 1 of 2 ends at step 2" in caplog.messages
    with caplog.at_level(logging.INFO, logger="transformer_stability.apjn.training"):
        resumed = train_table(ITEM, CPU, state)
    assert caplog.messages[-1].startswith("derf_depth2 alpha=2.0 mult=2 lr=0.01: {'steps': 4")
    whole = train_table(ITEM, CPU)
    assert resumed.equals(whole)
    # the state is read, not retrained from scratch: other weights give another ending
    moved = state | {"flat": state["flat"] + 0.05}
    assert not train_table(ITEM, CPU, moved).equals(whole)
    last = train_segment(ITEM, CPU, 2, moved)
    assert last["step"] == 4
    assert not torch.equal(last["flat"], train_segment(ITEM, CPU, 2, state)["flat"])


def test_a_training_takes_exactly_its_steps_from_step_zero():
    data = texture_dataset(classes=3, size=8, train=8, test=4, seed=0)
    short = Schedule(steps=5, batch_size=4, weight_decay=0.05, warmup_fraction=0.5)
    training = GroupTraining([SMALL, SMALL], [1e-3, 1e-2], [0, 1], data, short, CPU)
    assert training.step == 0 and training.events.updates == 0
    training.run(short.steps)
    assert training.step == 5 and training.events.updates == 5
    assert (training.opt.state()["steps"] == 5).all()


def test_the_items_data_is_its_tasks():
    data = dataset(TASK)
    same = texture_dataset(classes=3, size=8, train=8, test=4, seed=5)
    for name in ("x_train", "y_train", "x_test", "y_test"):
        assert torch.equal(getattr(data, name), getattr(same, name)), name
    assert data.classes == 3


def test_crops_start_anywhere_in_their_rows_and_columns_and_nowhere_else():
    """A ramp image tells each crop's corner: over many draws the corners fill exactly
    [rows) x [0, W - size]."""
    image = np.add.outer(1000 * np.arange(20), np.arange(12)).astype(float)
    crops = _crops(image, 4, 2000, (5, 15), np.random.default_rng(0))
    tops, lefts = crops[:, 0, 0] // 1000, crops[:, 0, 0] % 1000
    assert crops.shape == (2000, 4, 4)
    assert set(tops) == set(range(5, 12)) and set(lefts) == set(range(9))
    np.testing.assert_array_equal(crops[:, 3, 3], crops[:, 0, 0] + 3003)


def test_images_are_resized_bilinearly_without_aligned_corners():
    x = torch.tensor([[[[0.0, 1.0], [0.0, 1.0]]]])
    assert _to_model_size(x, 2) is x
    wide = _to_model_size(x, 4)
    torch.testing.assert_close(wide[0, 0, 0], torch.tensor([0.0, 0.25, 0.75, 1.0]))
    torch.testing.assert_close(wide[0, 0, :, 1], torch.full((4,), 0.25))


def test_cifar_sets_are_distinct_normalized_images_of_each_split(tmp_path):
    _fake_cifar(tmp_path, n=20)
    data = cifar100_dataset(str(tmp_path), train=6, test=0, seed=1)
    images, labels = read_cifar100(tmp_path, "train")
    assert data.x_train.shape == (6, 3, 32, 32) and data.x_test.shape == (20, 3, 32, 32)
    every = normalize(images / 255.0).float()
    picked = [int(torch.nonzero((every == x).flatten(1).all(1))[0, 0]) for x in data.x_train]
    assert len(set(picked)) == 6
    assert data.y_train.tolist() == [int(labels[i]) for i in picked]
    test_images, _ = read_cifar100(tmp_path, "test")
    test_every = normalize(test_images / 255.0).float()
    assert sorted(int(torch.nonzero((test_every == x).flatten(1).all(1))[0, 0])
                  for x in data.x_test) == list(range(20))  # fmt: skip


def test_runs_that_fail_at_step_zero_are_diverged_and_training_stops_early():
    """Non-finite inputs fail every run at its first step (step 0): each is diverged with 0
    steps, and the group stops at the first all-diverged check instead of running on."""
    finite = texture_dataset(classes=3, size=8, train=8, test=4, seed=0)
    data = dataclasses.replace(finite, x_train=torch.full_like(finite.x_train, math.nan))
    short = Schedule(steps=60, batch_size=4, weight_decay=0.05, warmup_fraction=0.1)
    training = GroupTraining([SMALL, SMALL], [1e-3, 1e-2], [0, 1], data, short, CPU)
    training.run(short.steps)
    assert training.step == 60 and training.events.updates == 50  # checked after step 50
    assert training.events.failed.tolist() == [0, 0]
    for run in (0, 1):
        assert training.events.columns(run)["diverged"]
    training.data = finite  # the init's J^{L,0} is read off finite images
    row = training.rows()[1]
    assert row["diverged"] and row["steps"] == 0
    assert all(math.isnan(row[k]) for k in ("final_loss", "train_accuracy", "test_accuracy"))
