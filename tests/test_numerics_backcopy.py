"""The Bigram-Backcopy task and the sink model (numerics/backcopy.py): sequences that follow the
task's rules and its chain's law, a Bayes loss equal to a brute-force sum and no larger than
any other predictor's, head statistics on attention rows whose answer is known, and a training
run that learns and repeats itself bit for bit."""

import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import torch

from transformer_stability.numerics.backcopy import (
    BackcopyTask,
    SinkExperiment,
    head_statistics,
    sink_emergence,
)
from transformer_stability.numerics.gpt2 import pretrained_gpt2
from transformer_stability.numerics.inputs import input_ids
from transformer_stability.numerics.items import TokenInputs
from transformer_stability.numerics.spec import SINK_IDS, sink_spec

TASK = BackcopyTask(vocab=12, triggers=2, seq_len=24, concentration=0.5)
SMALL = {
    "task": {"vocab": 12, "triggers": 2, "seq_len": 16, "concentration": 0.5},
    "model": {"layers": 1, "width": 16, "heads": 2},
    "training": {"batch": 8, "lr": 0.01, "warmup": 5, "weight_decay": 0.0, "final_rate": 1.0},
    "checkpoints": [60, 10],
    "sequences": 6,
    "formats": ["m7", "fp16"],
}


@pytest.fixture(scope="module")
def chain() -> torch.Tensor:
    return TASK.transitions(torch.Generator().manual_seed(0))


@pytest.fixture(scope="module")
def ids(chain) -> torch.Tensor:
    return TASK.sample(chain, 400, torch.Generator().manual_seed(1))


def test_the_chain_is_a_stochastic_matrix_fixed_by_the_seed(chain):
    assert chain.shape == (TASK.vocab, TASK.vocab) and chain.dtype == torch.float64
    assert torch.all(chain >= 0)
    torch.testing.assert_close(chain.sum(dim=1), torch.ones(TASK.vocab, dtype=torch.float64))
    again = TASK.transitions(torch.Generator().manual_seed(0))
    assert torch.equal(chain, again)
    assert not torch.equal(chain, TASK.transitions(torch.Generator().manual_seed(1)))


def test_sequences_start_with_bos_then_a_non_trigger_and_copy_after_every_trigger(ids):
    assert ids.shape == (400, TASK.seq_len)
    assert torch.all(ids[:, 0] == TASK.bos) and torch.all(ids[:, 1:] < TASK.bos)
    assert torch.all(ids[:, 1] >= TASK.triggers)
    after = ids[:, 1:-1] < TASK.triggers  # position t (>= 1) holds a trigger
    copies = ids[:, 2:][after] == ids[:, :-2][after]
    assert after.sum() > 100 and torch.all(copies)


def test_non_trigger_steps_follow_the_chain(chain, ids):
    """Empirical next-token frequencies after each non-trigger token against its chain row:
    a total-variation distance within a few standard errors of the counts."""
    current, following = ids[:, 1:-1], ids[:, 2:]
    for token in range(TASK.triggers, TASK.vocab):
        nxt = following[current == token]
        counts = np.bincount(nxt.numpy(), minlength=TASK.vocab)
        assert counts.sum() > 200
        distance = 0.5 * np.abs(counts / counts.sum() - chain[token].numpy()).sum()
        assert distance < 3 * math.sqrt(TASK.vocab / counts.sum())


def _brute_force_bayes(chain: torch.Tensor, sequence: list[int]) -> float:
    terms = [math.log(TASK.vocab - TASK.triggers)]
    for t in range(1, len(sequence) - 1):
        current, following = sequence[t], sequence[t + 1]
        terms.append(0.0 if current < TASK.triggers else -math.log(chain[current, following]))
    return sum(terms) / len(terms)


def test_the_bayes_loss_is_the_conditional_laws_cross_entropy(chain, ids):
    bayes = TASK.bayes_loss(chain, ids[:20])
    expected = [_brute_force_bayes(chain, row) for row in ids[:20].tolist()]
    np.testing.assert_allclose(bayes.numpy(), expected, rtol=1e-12)


def test_no_other_chain_predicts_better_on_average(chain, ids):
    """Gibbs: the cross-entropy under a perturbed chain exceeds the Bayes loss on a large
    sample (a wrong conditional law pays the KL divergence per step)."""
    other = TASK.transitions(torch.Generator().manual_seed(5))
    mixed = 0.7 * chain + 0.3 * other
    assert TASK.bayes_loss(mixed, ids).mean() > TASK.bayes_loss(chain, ids).mean() + 0.01


def test_head_statistics_of_a_sink_a_spread_head_and_a_near_sink():
    t_len = 8
    sink = torch.zeros(t_len, t_len)
    sink[:, 0] = 1.0
    spread = torch.tril(torch.ones(t_len, t_len))
    spread = spread / spread.sum(dim=1, keepdim=True)
    near = sink.clone().double()
    near[:, 0] = 1 - 1e-12
    near[1:, 1] = 1e-12
    near[0, 0] = 1.0
    probs = torch.stack([sink.double(), spread.double(), near])[None]  # (1, 3 heads, T, T)
    stats = head_statistics(probs, t_len // 2)
    late = torch.arange(t_len // 2, t_len, dtype=torch.float64)
    expected_first = torch.tensor([1.0, float((1 / (late + 1)).mean()), 1 - 1e-12])
    torch.testing.assert_close(stats["first_token"][0], expected_first.double())
    tails = stats["tail_mass"][0]
    assert tails[0] == 0.0
    assert tails[1] == pytest.approx(float(torch.median(1 - 1 / (late + 1))))
    assert tails[2] == pytest.approx(1e-12, rel=1e-6)  # not lost to 1 - p_max's cancellation


def test_the_experiment_reads_its_config():
    experiment = SinkExperiment.from_config(SMALL)
    assert experiment.optimizer.steps == 60 and experiment.checkpoints == (0, 10, 60)
    assert experiment.spec.vocab == 13 and experiment.spec.positions == 16
    assert experiment.spec.shape() == (1, 16, 2)
    assert [f.name for f in experiment.formats] == ["m7", "fp16"]
    assert experiment.formats[1].dtype == torch.float16


@pytest.fixture(scope="module")
def emergence():
    torch.set_num_threads(1)
    return sink_emergence(SMALL, seed=3)


def test_training_lowers_the_held_out_loss_toward_the_bayes_loss(emergence):
    heads, losses, _ = emergence
    mean = losses.groupby("step")[["loss", "bayes_loss"]].mean()
    assert list(mean.index) == [0, 10, 60]
    assert mean.loss[60] < mean.loss[0] - 0.3
    assert mean.bayes_loss.nunique() == 1  # the same held-out sequences at every checkpoint
    assert len(heads) == 3 * 1 * 2 * 6 and set(heads["head"]) == {0, 1}


def test_the_sink_experiment_repeats_itself_bit_for_bit(emergence, tmp_path):
    again = sink_emergence(SMALL, seed=3, out=tmp_path)
    for first, second in zip(emergence, again, strict=True):
        assert first.equals(second)
    other = sink_emergence(SMALL, seed=4)
    assert not emergence[1].equals(other[1])


def test_the_saved_sink_model_is_the_trained_one_with_its_held_out_sequences(tmp_path):
    """What the GPT-2 sweeps load back (the model through the pretrained loader, the sequences
    through the saved-ids input) scores the held-out loss the experiment measured last."""
    _, losses, _ = sink_emergence(SMALL, seed=3, out=tmp_path)
    spec = replace(sink_spec(SMALL), source=str(tmp_path))
    inputs = TokenInputs(16, 6, 6, ids=str(tmp_path / Path(SINK_IDS).name))
    ids = input_ids(spec, spec.vocab, inputs, seed=0)
    assert ids.shape == (6, 16) and (ids[:, 0] == SMALL["task"]["vocab"]).all()  # BOS first
    model = pretrained_gpt2(spec)
    with torch.no_grad():
        logits = model(input_ids=ids).logits[:, :-1].to(torch.float64).transpose(1, 2)
    loss = torch.nn.functional.cross_entropy(logits, ids[:, 1:], reduction="none").mean(dim=1)
    last = losses[losses.step == 60].loss.to_numpy()
    np.testing.assert_allclose(loss.numpy(), last, rtol=1e-6)
    assert losses[losses.step == 0].loss.mean() > last.mean() + 0.3  # not the initial model


def test_the_rows_are_evaluated_at_the_initialization_and_after_training(emergence):
    """Both ends, every format, head, sequence and late query (8 of 16); no error above its
    bound; the same row's tail mass in every format."""
    rows = emergence[2]
    assert sorted(rows.step.unique()) == [0, 60] and set(rows.format) == {"m7", "fp16"}
    assert len(rows) == 2 * 2 * 1 * 2 * 6 * 8 and set(rows["query"]) == set(range(8, 16))
    assert (rows.measured <= rows.bound).all()
    tails = rows.pivot_table("tail_mass", ["step", "block", "head", "sequence", "query"], "format")
    assert (tails.m7 == tails.fp16).all()
