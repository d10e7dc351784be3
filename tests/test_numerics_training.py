"""The trained GPT-2 (numerics/training.py) and the attention-sink statistic: the corpus split,
the learning-rate schedule's closed form, training that learns and repeats itself bit for bit
under a seed, the tokenizer and weights through the pretrained loader and the text input, and
the sink statistic on attention rows whose answer is known."""

import dataclasses
import math
from dataclasses import replace
from pathlib import Path

import pytest
import torch
from transformers import GPT2TokenizerFast

from transformer_stability.numerics.gpt2 import build_gpt2
from transformer_stability.numerics.gpt2_runs import attention_table
from transformer_stability.numerics.inputs import input_ids
from transformer_stability.numerics.items import TokenInputs, model_seed
from transformer_stability.numerics.metrics import sink_statistics
from transformer_stability.numerics.spec import GPT2Spec
from transformer_stability.numerics.training import (
    END,
    OptimizerSettings,
    TrainingSettings,
    _rate,
    _windows,
    adamw_steps,
    glosses,
    split_glosses,
    token_stream,
    train_gpt2,
    train_models,
    train_tokenizer,
    write_corpus,
)

VOCAB = 300
SPEC = GPT2Spec(
    size="tiny", weights="trained", layers=2, width=16, heads=2, vocab=VOCAB, positions=16
)
SETTINGS = TrainingSettings(
    steps=40, batch=4, lr=0.01, warmup=4, weight_decay=0.1, eval_every=10, eval_windows=4
)


@pytest.fixture(autouse=True, scope="module")
def one_thread():
    """One thread, as the training rule runs: small models train many times faster so on a
    shared machine (no thread spins waiting for another)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> tuple[Path, Path, Path]:
    """(tokenizer directory, training text, held-out text) written as the rule writes them,
    from the first 2,000 glosses."""
    folder = tmp_path_factory.mktemp("trained")
    lines = glosses()[:2000]
    train, heldout = split_glosses(lines, 10)
    paths = folder / "train.txt", folder / "heldout.txt"
    for path, part in zip(paths, (train, heldout), strict=True):
        path.write_text("".join(line + "\n" for line in part), encoding="utf-8")
    train_tokenizer(train, VOCAB).save_pretrained(folder / "tokenizer")
    return folder / "tokenizer", *paths


@pytest.fixture(scope="module")
def streams(corpus) -> tuple[torch.Tensor, torch.Tensor]:
    from transformers import GPT2TokenizerFast

    tokenizer = GPT2TokenizerFast.from_pretrained(corpus[0])
    return token_stream(tokenizer, corpus[1]), token_stream(tokenizer, corpus[2])


def test_the_glosses_are_english_sentences_split_without_overlap():
    lines = glosses()
    assert len(lines) > 20000 and all(lines)
    words = " ".join(lines[:500]).split()
    assert sum(w in ("the", "of", "a", "or", "and") for w in words) > 0.1 * len(words)
    train, heldout = split_glosses(lines, 10)
    assert len(heldout) == math.ceil(len(lines) / 10)
    assert len(train) + len(heldout) == len(lines)
    assert heldout[1] == lines[10] and lines[10] not in train[9:11]


def test_the_rate_warms_up_linearly_then_decays_by_a_cosine_to_a_tenth():
    settings = replace(SETTINGS, steps=104, warmup=4)
    assert [_rate(s, settings) for s in range(4)] == [0.25, 0.5, 0.75, 1.0]
    assert _rate(4, settings) == pytest.approx(1.0)
    assert _rate(54, settings) == pytest.approx(0.55)  # half way: (1 + 0.1) / 2
    assert _rate(104, settings) == pytest.approx(0.1)


def test_a_final_rate_of_one_holds_the_rate_after_the_warm_up():
    settings = replace(SETTINGS, steps=104, warmup=4, final_rate=1.0)
    assert _rate(1, settings) == 0.5
    assert {_rate(s, settings) for s in range(3, 105)} == {1.0}
    assert _rate(54, replace(settings, final_rate=0.5)) == pytest.approx(0.75)


def test_write_corpus_saves_a_tokenizer_of_the_configured_vocabulary(tmp_path):
    """Into folders it creates; the tokenizer learnt from the training glosses alone."""
    from transformers import AutoTokenizer

    texts = tmp_path / "a" / "train.txt", tmp_path / "b" / "c" / "heldout.txt"
    write_corpus(VOCAB, 10, tmp_path / "tokenizer", texts)
    tokenizer = AutoTokenizer.from_pretrained(tmp_path / "tokenizer", local_files_only=True)
    assert len(tokenizer) == VOCAB
    heldout = texts[1].read_text(encoding="utf-8").splitlines()
    assert heldout == glosses()[::10]
    sample = heldout[0]
    assert tokenizer.decode(tokenizer(sample)["input_ids"]) == sample  # byte level: lossless
    train = split_glosses(glosses(), 10)[0]
    assert tokenizer.get_vocab() == train_tokenizer(train, VOCAB).get_vocab()


def test_the_tokenizer_is_byte_level_bpe_over_words_and_decodes_losslessly():
    """GPT-2's scheme: words pre-split with their leading space marked (Ġ), merges inside
    words only, no space added before the text, bytes mapped back on decoding."""
    tokenizer = train_tokenizer(glosses()[:2000], VOCAB)
    vocab = tokenizer.get_vocab()
    assert "Ġthe" in vocab and not any(" " in token for token in vocab)
    assert not any("Ġ" in token[1:] for token in vocab)
    text = "a small dog, naïve"
    assert tokenizer.tokenize(text)[0] == "a"
    assert tokenizer.decode(tokenizer(text)["input_ids"]) == text


def test_write_corpus_needs_exactly_a_training_and_a_held_out_path(tmp_path):
    with pytest.raises(ValueError, match="zip"):
        write_corpus(VOCAB, 10, tmp_path / "tokenizer", (tmp_path / "train.txt",))


def test_the_tokenizer_marks_text_ends_with_gpt2_s_special_token(corpus):
    tokenizer = GPT2TokenizerFast.from_pretrained(corpus[0])
    assert tokenizer.bos_token == tokenizer.eos_token == tokenizer.unk_token == END
    assert tokenizer.convert_tokens_to_ids(END) == 0


def test_training_settings_take_their_keys_from_the_config_section(default_config):
    """The section also holds the tokenizer's keys (vocab, heldout_every): left out here."""
    training = default_config["numerics"]["training"]
    settings = TrainingSettings.from_config(training)
    assert dataclasses.asdict(settings) == {
        **{key: training[key] for key in dataclasses.asdict(settings) if key in training},
        "final_rate": 0.1,
    }
    assert {"vocab", "heldout_every"} <= set(training)


def test_windows_stay_inside_the_stream():
    windows = _windows(torch.arange(10), 9, 50, torch.Generator().manual_seed(0))
    assert windows.shape == (50, 9)
    assert (windows == torch.arange(9)).all()  # the one start that fits 9 tokens before the end


class _Quadratic(torch.nn.Module):
    """A model whose next-token loss is |w - target|^2 whatever the ids: AdamW's steps on it
    have a closed form."""

    def __init__(self) -> None:
        super().__init__()
        self.w = torch.nn.Parameter(torch.tensor([0.5, -2.0, 3.0], dtype=torch.float64))

    def forward(self, input_ids, labels):
        target = torch.tensor([1.0, 1.0, -1.0], dtype=torch.float64)
        return dataclasses.make_dataclass("Out", ["loss"])((self.w - target).pow(2).sum())


def test_adamw_steps_are_adam_with_decoupled_weight_decay_and_betas_of_gpt2():
    """Three steps against Adam's update written out (betas 0.9 and 0.95, eps 1e-8, the decay
    lr x weight_decay x w applied first), at a constant rate (no warm-up, final rate 1)."""
    settings = OptimizerSettings(
        steps=3, batch=1, lr=0.1, warmup=0, weight_decay=0.3, final_rate=1.0
    )
    model, losses = _Quadratic(), []
    adamw_steps(model, settings, lambda: torch.zeros(1, 1), lambda s, loss: losses.append(loss))
    w = torch.tensor([0.5, -2.0, 3.0], dtype=torch.float64)
    target = torch.tensor([1.0, 1.0, -1.0], dtype=torch.float64)
    m, v, expected_losses = torch.zeros(3), torch.zeros(3), []
    for t in range(1, 4):
        expected_losses.append(float((w - target).pow(2).sum()))
        g = 2 * (w - target)
        m, v = 0.9 * m + 0.1 * g, 0.95 * v + 0.05 * g**2
        w = w * (1 - 0.1 * 0.3)
        w = w - 0.1 * (m / (1 - 0.9**t)) / ((v / (1 - 0.95**t)).sqrt() + 1e-8)
    assert torch.allclose(model.w.detach(), w, rtol=1e-12, atol=0)
    assert losses == pytest.approx(expected_losses, rel=1e-12)


def test_the_loss_curve_averages_the_training_losses_since_the_last_line(streams, caplog):
    """At a zero rate the model stays at its initialization: the training rows (means of the
    steps since the last line) match the held-out rows' size, near ln(vocabulary), and the
    log line shows both."""
    still = replace(SETTINGS, lr=0.0, steps=8, eval_every=4)
    with caplog.at_level("INFO", logger="transformer_stability.numerics.training"):
        _, curve = train_gpt2(SPEC, *streams, still, seed=0)
    train = curve[curve.split == "train"].loss.to_numpy()
    held = curve[curve.split == "heldout"].loss.to_numpy()
    assert train == pytest.approx(held, rel=0.1)  # other windows of other text
    assert train == pytest.approx(math.log(VOCAB), rel=0.2)  # not far above a uniform guess
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("step")]
    assert lines == [
        f"step {step}: train {a:.3f}, held-out {b:.3f}"
        for step, a, b in zip((4, 8), train, held, strict=True)
    ]


def test_training_lowers_the_held_out_loss(streams):
    _, curve = train_gpt2(SPEC, *streams, SETTINGS, seed=0)
    held = curve[curve.split == "heldout"].loss.to_numpy()
    assert list(curve.step.unique()) == [10, 20, 30, 40]
    assert list(curve.split[:2]) == ["train", "heldout"] and len(curve) == 8
    assert (curve.weights == "trained").all() and (curve.model == "trained-tiny").all()
    assert held[0] < math.log(VOCAB)  # the unigram statistics after 10 steps
    assert held[-1] < held[0] - 0.2


def test_training_repeats_bit_for_bit_under_its_seed(streams):
    short = replace(SETTINGS, steps=3, eval_every=3)
    first, curve = train_gpt2(SPEC, *streams, short, seed=5)
    again, curve_again = train_gpt2(SPEC, *streams, short, seed=5)
    other, _ = train_gpt2(SPEC, *streams, short, seed=6)
    for (name, a), b, c in zip(
        first.state_dict().items(),
        again.state_dict().values(),
        other.state_dict().values(),
        strict=True,
    ):
        assert torch.equal(a, b), name
        assert "attn.bias" in name or not torch.equal(a, c), name
    assert curve.equals(curve_again)


def test_the_trained_model_and_its_tokenizer_load_through_the_pretrained_path(
    corpus, streams, tmp_path
):
    from transformers import GPT2TokenizerFast

    model, _ = train_gpt2(SPEC, *streams, replace(SETTINGS, steps=2, eval_every=2), seed=0)
    tokenizer = GPT2TokenizerFast.from_pretrained(corpus[0])
    model.save_pretrained(tmp_path / "model")
    tokenizer.save_pretrained(tmp_path / "model")
    spec = replace(SPEC, source=str(tmp_path / "model"))
    loaded = build_gpt2(spec, torch.Generator().manual_seed(0))
    for (name, a), b in zip(model.state_dict().items(), loaded.state_dict().values(), strict=True):
        assert torch.equal(a, b), name
    inputs = TokenInputs(seq_len=12, sequences=3, batch=3, text=str(corpus[2]))
    ids = input_ids(spec, VOCAB, inputs, seed=0)
    assert torch.equal(ids.flatten(), streams[1][:36])


def _causal(probs_of_row) -> torch.Tensor:
    """(1 sequence, 1 head, T, T) causal rows from a function of the row index t."""
    length = 8
    rows = [torch.cat([probs_of_row(t), torch.zeros(length - t - 1)]) for t in range(length)]
    return torch.stack(rows)[None, None]


def test_uniform_causal_rows_have_p_max_one_over_their_length():
    probs = _causal(lambda t: torch.full((t + 1,), 1 / (t + 1)))
    found = sink_statistics(probs, first_row=4)
    expected = torch.tensor([[1 / 5, 1 / 6, 1 / 7, 1 / 8]], dtype=torch.float64)
    assert torch.allclose(found["p_max"], expected)
    assert torch.allclose(found["first_token"], expected)


def test_a_sink_on_the_first_token_gives_p_max_one_there():
    def sink(t: int) -> torch.Tensor:
        row = torch.full((t + 1,), 0.01 / max(t, 1))
        row[0] = 1 - 0.01 if t else 1.0
        return row

    found = sink_statistics(_causal(sink), first_row=2)
    assert torch.allclose(found["p_max"], torch.full((1, 6), 0.99, dtype=torch.float64))
    assert torch.equal(found["p_max"], found["first_token"])


def test_sink_statistics_keep_heads_apart_and_pool_sequences():
    # 3 sequences; head 0 looks at the first token, head 1 at itself
    heads = torch.cat(
        [_causal(lambda t: torch.eye(t + 1)[0]), _causal(lambda t: torch.eye(t + 1)[t])], dim=1
    ).expand(3, -1, -1, -1)
    found = sink_statistics(heads, first_row=4)
    assert found["p_max"].shape == (2, 3 * 4)
    assert (found["p_max"] == 1).all()
    assert (found["first_token"][0] == 1).all() and (found["first_token"][1] == 0).all()


def test_attention_table_reads_every_head_of_the_model(tmp_path):
    """Zero queries and keys: every score is 0, so every causal row is uniform and the late
    rows' p_max lies in [1/T, 2/(T + 2)] (rows t >= T/2 have at least T/2 + 1 entries)."""
    spec = GPT2Spec(size="tiny", layers=2, width=16, heads=2, vocab=64, positions=32)
    model = build_gpt2(spec, torch.Generator().manual_seed(0))
    for block in model.transformer.h:
        block.attn.c_attn.weight.data[:, :32] = 0
        block.attn.c_attn.bias.data[:32] = 0
    inputs = TokenInputs(seq_len=12, sequences=3, batch=2)
    table = attention_table(model, spec, inputs, seed=0, device=torch.device("cpu"))
    assert len(table) == 2 * 2 * 2  # blocks x heads x statistics
    quantiles = table[["p01", "p25", "p50", "p75", "p99", "mean"]]
    assert (quantiles >= 1 / 12 - 1e-7).all().all()
    assert (quantiles <= 2 / 14 + 1e-7).all().all()
    assert (table.p01 <= table.p50).all() and (table.p50 <= table.p99).all()


def test_train_models_trains_and_saves_each_trained_entry_under_its_name(corpus, tmp_path):
    """Only `weights: trained` entries are trained, each from its name's seed, and saved with
    the tokenizer beside it, as the sweeps then load it."""
    entry = {"size": "tiny", "layers": 2, "width": 16, "heads": 2, "vocab": VOCAB}
    numerics = {
        "models": [
            {**entry, "weights": "random", "source": None, "positions": 16},
            {**entry, "weights": "trained", "source": None, "positions": 16},
            {**entry, "size": "other", "weights": "trained", "source": None, "positions": 16},
        ],
        "training": {**dataclasses.asdict(SETTINGS), "steps": 2, "eval_every": 1},
    }
    table = train_models(numerics, 3, corpus[0], corpus[1:], tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["trained-other", "trained-tiny"]
    assert list(table.columns[:5]) == ["weights", "model", "step", "split", "loss"]
    assert table.groupby("model").size().to_dict() == {"trained-other": 4, "trained-tiny": 4}
    spec = replace(SPEC, source=str(tmp_path / "trained-tiny"))
    loaded = build_gpt2(spec, torch.Generator())
    tokenizer = GPT2TokenizerFast.from_pretrained(corpus[0])
    streams = [token_stream(tokenizer, path) for path in corpus[1:]]
    settings = replace(SETTINGS, steps=2, eval_every=1)
    expected, curve = train_gpt2(SPEC, *streams, settings, model_seed(3, "trained-tiny"))
    for a, b in zip(expected.state_dict().values(), loaded.state_dict().values(), strict=True):
        assert torch.equal(a, b)
    mine = table[table.model == "trained-tiny"].reset_index(drop=True)
    assert mine.loss.tolist() == curve.loss.tolist()
    assert input_ids(spec, VOCAB, TokenInputs(8, 1, 1, str(corpus[2])), 0).shape == (1, 8)
