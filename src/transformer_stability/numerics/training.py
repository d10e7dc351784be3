"""A small GPT-2 trained offline on natural English, so that Study N's runs see trained weights.

The text is WordNet's glosses (one definition per ImageNet-21k synset, about 21,800 English
sentences, 1.7 MB) as shipped inside the `timm` wheel the lock pins: the same bytes on every
machine that installs the lock, no network, and a permissive licence (the WordNet 3.0 licence,
Princeton University). Every `heldout_every`-th gloss is held out: the trained model is
evaluated on text it never saw. A byte-level BPE tokenizer (`tokenizers`, GPT-2's scheme) is
trained on the training glosses, then a GPT-2 from the random initialization of
`numerics.gpt2.random_gpt2` is trained on random windows of them by AdamW. Both are written by
`save_pretrained`, so the pretrained loader reads them like any checkpoint.

Deterministic given the seed: every draw comes from explicit generators, dropout is off (the
model trains in eval mode) and the tokenizer's trainer has no randomness.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import pandas as pd
import torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import GPT2LMHeadModel, GPT2TokenizerFast

from transformer_stability.numerics.gpt2 import random_gpt2
from transformer_stability.numerics.items import configured_specs, model_seed
from transformer_stability.numerics.spec import GPT2Spec
from transformer_stability.numerics.tables import Gpt2Training
from transformer_stability.tables import select

log = logging.getLogger(__name__)

GLOSSES = ("timm.data._info", "imagenet_synset_to_definition.txt")
END = "<|endoftext|>"  # GPT-2's special token, id 0 here (the glosses are separated by newlines)


def glosses() -> list[str]:
    """WordNet's glosses from the installed timm package, in synset order."""
    package, name = GLOSSES
    text = resources.files(package).joinpath(name).read_text(encoding="utf-8")
    return [line.split("\t", 1)[1].strip() for line in text.splitlines() if "\t" in line]


def split_glosses(lines: list[str], heldout_every: int) -> tuple[list[str], list[str]]:
    """(training, held-out) glosses: every `heldout_every`-th is held out, so both halves
    cover every part of the (topic-ordered) synset list."""
    train = [line for i, line in enumerate(lines) if i % heldout_every]
    return train, lines[::heldout_every]


def train_tokenizer(lines: list[str], vocab: int) -> GPT2TokenizerFast:
    """Byte-level BPE of `vocab` tokens (the special token, the 256 bytes, then merges), trained
    on the glosses one per line, as the text files hold them."""
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab,
        special_tokens=[END],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator((line + "\n" for line in lines), trainer=trainer)
    return GPT2TokenizerFast(
        tokenizer_object=tokenizer, bos_token=END, eos_token=END, unk_token=END
    )


def write_corpus(
    vocab: int, heldout_every: int, tokenizer_dir: Path, texts: Sequence[Path]
) -> None:
    """The training and held-out glosses as text files, one per line (`texts`), and the
    tokenizer trained on the training glosses, by save_pretrained."""
    parts = split_glosses(glosses(), heldout_every)
    for path, lines in zip(texts, parts, strict=True):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    train_tokenizer(parts[0], vocab).save_pretrained(tokenizer_dir)


def token_stream(tokenizer: GPT2TokenizerFast, path: Path) -> torch.Tensor:
    """A text file as one stream of token ids, tokenized whole as inputs.py tokenizes it."""
    return torch.tensor(tokenizer(path.read_text(encoding="utf-8"))["input_ids"])


@dataclass(frozen=True, kw_only=True)
class OptimizerSettings:
    """AdamW for `steps` steps of `batch` sequences: linear warm-up, then cosine decay to
    `final_rate` x the rate (1: a constant rate)."""

    steps: int
    batch: int
    lr: float
    warmup: int
    weight_decay: float
    final_rate: float = 0.1


@dataclass(frozen=True, kw_only=True)
class TrainingSettings(OptimizerSettings):
    """The text model's optimizer, and its held-out loss on `eval_windows` fixed windows every
    `eval_every` steps."""

    eval_every: int
    eval_windows: int

    @classmethod
    def from_config(cls, training: Mapping[str, Any]) -> TrainingSettings:
        names = set(cls.__dataclass_fields__) & set(training)
        return cls(**{name: training[name] for name in names})


def _windows(
    stream: torch.Tensor, length: int, count: int, generator: torch.Generator
) -> torch.Tensor:
    """`count` windows of `length` tokens at uniform random starts."""
    starts = torch.randint(len(stream) - length, (count,), generator=generator)
    return torch.stack([stream[s : s + length] for s in starts.tolist()])


def _rate(step: int, settings: OptimizerSettings) -> float:
    """The learning rate's multiplier at `step` (0-based)."""
    if step < settings.warmup:
        return (step + 1) / settings.warmup
    progress = (step - settings.warmup) / max(1, settings.steps - settings.warmup)
    final = settings.final_rate
    return final + (1 - final) / 2 * (1 + math.cos(math.pi * progress))


def _loss(model: GPT2LMHeadModel, ids: torch.Tensor) -> torch.Tensor:
    return model(input_ids=ids, labels=ids).loss


def adamw_steps(
    model: GPT2LMHeadModel,
    settings: OptimizerSettings,
    batch: Callable[[], torch.Tensor],
    after_step: Callable[[int, float], None],
) -> None:
    """Train `model` in place on the batches `batch()` draws (token ids; next-token loss),
    calling `after_step(step, loss)` after each step (1-based)."""
    optimizer = torch.optim.AdamW(
        model.parameters(), lr=settings.lr, betas=(0.9, 0.95), weight_decay=settings.weight_decay
    )
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: _rate(s, settings))
    for step in range(1, settings.steps + 1):
        loss = _loss(model, batch())
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        schedule.step()
        after_step(step, float(loss.detach()))


def train_gpt2(
    spec: GPT2Spec,
    train: torch.Tensor,
    heldout: torch.Tensor,
    settings: TrainingSettings,
    seed: int,
) -> tuple[GPT2LMHeadModel, pd.DataFrame]:
    """The model of `spec` trained on the token stream `train`, and its loss curve (training
    loss averaged since the last log line, held-out loss on fixed windows) as a long table."""
    generator = torch.Generator().manual_seed(seed)
    model = random_gpt2(spec, generator).eval()  # eval: no dropout, no global random state
    probe = _windows(heldout, spec.positions, settings.eval_windows, generator)
    rows, recent = [], []

    def record(step: int, loss: float) -> None:
        recent.append(loss)
        if step % settings.eval_every == 0 or step == settings.steps:
            with torch.no_grad():
                held = float(_loss(model, probe))
            rows.extend([(step, "train", sum(recent) / len(recent)), (step, "heldout", held)])
            log.info("step %d: train %.3f, held-out %.3f", step, rows[-2][2], held)
            recent.clear()

    adamw_steps(
        model, settings, lambda: _windows(train, spec.positions, settings.batch, generator), record
    )
    table = pd.DataFrame(rows, columns=["step", "split", "loss"])
    return model, table.assign(weights=spec.weights, model=spec.name)


def train_models(
    numerics: Mapping[str, Any], seed: int, tokenizer_dir: Path, texts: Sequence[Path], out: Path
) -> pd.DataFrame:
    """Train every `weights: trained` model of the config on the training text (`texts`:
    training, held-out), save it with the tokenizer beside it under `out`/<name>, and return
    their loss curves. Each model's seed comes from its name (items.model_seed)."""
    tokenizer = GPT2TokenizerFast.from_pretrained(tokenizer_dir)
    train, heldout = (token_stream(tokenizer, path) for path in texts)
    settings = TrainingSettings.from_config(numerics["training"])
    curves = []
    for spec in configured_specs(numerics):
        if spec.weights != "trained":
            continue
        model, curve = train_gpt2(spec, train, heldout, settings, model_seed(seed, spec.name))
        model.save_pretrained(out / spec.name)
        tokenizer.save_pretrained(out / spec.name)
        curves.append(curve)
    return select(pd.concat(curves, ignore_index=True), Gpt2Training)
