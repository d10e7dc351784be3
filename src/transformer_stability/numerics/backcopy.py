"""The Bigram-Backcopy task (Guo et al. 2024, arXiv 2410.13835): a GPT-2 that grows attention
sinks in CPU minutes, and what its heads do along training (claim N.9).

A sequence starts with BOS. Its ordinary tokens follow a bigram Markov chain, except after a
trigger token, where the next token copies the token before the trigger. Predicting a copy needs
attention to the previous token; predicting a bigram step needs none (the current token's own
embedding suffices). A head whose attention is useless at most positions learns to park it on
the one token that is always there and carries nothing, BOS: an attention sink. Random weights
spread a late row over all t + 1 tokens.

Deterministic given the seed: the chain, the training batches and the held-out sequences come
from explicit generators; the model trains in eval mode (no dropout).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch
from transformers import GPT2LMHeadModel

from transformer_stability.numerics.attention_rows import attention_logits, row_evaluation
from transformer_stability.numerics.gpt2 import random_gpt2
from transformer_stability.numerics.inputs import write_ids
from transformer_stability.numerics.lowp import Format
from transformer_stability.numerics.spec import SINK_IDS, SINK_MODEL, GPT2Spec, sink_spec
from transformer_stability.numerics.tables import SinkEmergence, SinkSoftmax, SinkTraining
from transformer_stability.numerics.training import OptimizerSettings, adamw_steps
from transformer_stability.tables import select

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class BackcopyTask:
    """`vocab` ordinary tokens 0 .. vocab - 1, of which the first `triggers` are triggers, then
    BOS = vocab; sequences of `seq_len` tokens, BOS included. Each row of the bigram chain is a
    Dirichlet(`concentration`) draw: small values give peaked, predictable rows."""

    vocab: int
    triggers: int
    seq_len: int
    concentration: float

    @property
    def bos(self) -> int:
        return self.vocab

    @property
    def first_late_row(self) -> int:
        """The first query of a sequence's late rows, T/2: from there a spread row stays below
        2/T, so a large weight on one token is a sink, not a short row."""
        return self.seq_len // 2

    def transitions(self, generator: torch.Generator) -> torch.Tensor:
        """The chain's (vocab, vocab) transition matrix, rows summing to 1 (float64), drawn by
        numpy's Dirichlet from a seed taken off `generator`."""
        seed = int(torch.randint(2**62, (1,), generator=generator))
        rows = np.random.default_rng(seed).dirichlet([self.concentration] * self.vocab, self.vocab)
        return torch.from_numpy(rows)

    def sample(self, chain: torch.Tensor, count: int, generator: torch.Generator) -> torch.Tensor:
        """(count, seq_len) token ids: BOS, a uniform non-trigger token, then the chain, each
        token after a trigger a copy of the token before that trigger."""
        ids = torch.empty(count, self.seq_len, dtype=torch.long)
        ids[:, 0] = self.bos
        ids[:, 1] = self.triggers + torch.randint(
            self.vocab - self.triggers, (count,), generator=generator
        )
        for t in range(2, self.seq_len):
            step = torch.multinomial(chain[ids[:, t - 1]], 1, generator=generator).squeeze(1)
            copy = ids[:, t - 1] < self.triggers
            ids[:, t] = torch.where(copy, ids[:, t - 2], step)
        return ids

    def bayes_loss(self, chain: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
        """Per sequence, the cross-entropy (nats per predicted token) of the task's own
        conditional law: log(vocab - triggers) after BOS, 0 after a trigger, else the chain's
        -log P(next | current). No model can do better on average."""
        current, following = ids[:, 1:-1], ids[:, 2:]
        step = -torch.log(chain[current, following])
        after = torch.where(current < self.triggers, torch.zeros_like(step), step)
        first = torch.full(
            (ids.shape[0], 1), math.log(self.vocab - self.triggers), dtype=after.dtype
        )
        return torch.cat([first, after], dim=1).mean(dim=1)


def head_statistics(probs: torch.Tensor, first_row: int) -> dict[str, torch.Tensor]:
    """Per (sequence, head), over the causal attention rows of queries t >= `first_row` of
    `probs` (sequences, heads, T, T): the mean weight on the first token, and the median tail
    mass 1 - p_max, summed from the other entries (no cancellation near p_max = 1)."""
    late = probs[..., first_row:, :].to(torch.float64)
    top = late.argmax(dim=-1, keepdim=True)
    tail = late.scatter(-1, top, 0.0).sum(dim=-1)
    return {"first_token": late[..., 0].mean(dim=-1), "tail_mass": tail.median(dim=-1).values}


@dataclass(frozen=True)
class SinkExperiment:
    """The task, the model's shape, its optimizer, the steps at which its heads are measured
    (step 0: the random initialization), the held-out sequences they are measured on and the
    formats its attention rows are evaluated in at the first and the last step (claim N.3)."""

    task: BackcopyTask
    spec: GPT2Spec
    optimizer: OptimizerSettings
    checkpoints: tuple[int, ...]
    sequences: int
    formats: tuple[Format, ...]

    @classmethod
    def from_config(cls, sinks: Mapping[str, Any]) -> SinkExperiment:
        """The experiment of the config's `numerics.sinks`: trained to its last checkpoint."""
        task, spec = BackcopyTask(**sinks["task"]), sink_spec(sinks)
        checkpoints = (0, *sorted(sinks["checkpoints"]))
        optimizer = OptimizerSettings(steps=checkpoints[-1], **sinks["training"])
        formats = tuple(Format.parse(name) for name in sinks["formats"])
        return cls(task, spec, optimizer, checkpoints, sinks["sequences"], formats)


def measure(
    model: GPT2LMHeadModel, task: BackcopyTask, chain: torch.Tensor, ids: torch.Tensor
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The heads' statistics (a row per block, sequence and head) and each sequence's loss
    beside the task's Bayes loss on it."""
    with torch.no_grad():
        out = model(input_ids=ids, output_attentions=True)
        logits = out.logits[:, :-1].to(torch.float64).transpose(1, 2)
        loss = torch.nn.functional.cross_entropy(logits, ids[:, 1:], reduction="none")
    frames = []
    for block, probs in enumerate(out.attentions):
        stats = head_statistics(probs, task.first_late_row)
        sequences, heads = stats["first_token"].shape
        cells = {
            "block": block,
            "sequence": np.repeat(np.arange(sequences), heads),
            "head": np.tile(np.arange(heads), sequences),
        }
        frames.append(pd.DataFrame(cells | {k: v.reshape(-1).numpy() for k, v in stats.items()}))
    losses = pd.DataFrame(
        {
            "sequence": np.arange(len(ids)),
            "loss": loss.mean(dim=1).numpy(),
            "bayes_loss": task.bayes_loss(chain, ids).numpy(),
        }
    )
    return pd.concat(frames, ignore_index=True), losses


def sink_emergence(
    sinks: Mapping[str, Any], seed: int, out: Path | None = None
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Train the sink model of `sinks` (the config's numerics.sinks) from `seed`; measure its
    heads and its held-out loss at every checkpoint, and the softmax evaluation of its late
    attention rows at the first and the last. (SinkEmergence, SinkTraining, SinkSoftmax). With
    `out`, save the trained model there with the held-out sequences, for the GPT-2 sweeps."""
    experiment = SinkExperiment.from_config(sinks)
    task, generator = experiment.task, torch.Generator().manual_seed(seed)
    chain = task.transitions(generator)
    heldout = task.sample(chain, experiment.sequences, generator)
    model = random_gpt2(experiment.spec, generator)
    heads, losses, rows = [], [], []

    def checkpoint(step: int) -> None:
        if step in experiment.checkpoints:
            found = measure(model, task, chain, heldout)
            heads.append(found[0].assign(step=step))
            losses.append(found[1].assign(step=step))
            log.info("step %d: held-out loss %.3f", step, losses[-1].loss.mean())
        if step in (experiment.checkpoints[0], experiment.checkpoints[-1]):
            logits = attention_logits(model, heldout)
            found = row_evaluation(logits, experiment.formats, task.first_late_row)
            rows.append(found.assign(step=step))
            worst = (found.measured / found.bound).max()
            log.info(
                "step %d: %d late rows evaluated, error/bound at most %.3g", step, len(found), worst
            )

    checkpoint(0)
    adamw_steps(
        model,
        experiment.optimizer,
        lambda: task.sample(chain, experiment.optimizer.batch, generator),
        lambda step, _loss: checkpoint(step),
    )
    if out is not None:
        model.save_pretrained(out)
        write_ids(heldout, out / Path(SINK_IDS).name)
    return tuple(
        select(pd.concat(frames, ignore_index=True).assign(model=SINK_MODEL), table)
        for frames, table in (
            (heads, SinkEmergence),
            (losses, SinkTraining),
            (rows, SinkSoftmax),
        )
    )
