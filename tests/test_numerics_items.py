"""Study N items: ids, storage groups, seeds from identity, and chunk tables that gather into the
same tables however the sweep is chunked."""

import sys

import pandas as pd
import pytest
import torch
from conftest import ROOT, deep_merge, load_yaml

from transformer_stability.io import read_table
from transformer_stability.numerics.checks import config_errors
from transformer_stability.numerics.gpt2_tables import gpt2_model, group_tables, weights_rows
from transformer_stability.numerics.items import (
    attention_items,
    group_items,
    model_seed,
    sources_items,
    storage_format,
    storage_groups,
    weights_items,
)
from transformer_stability.numerics.pipeline import SWEEPS
from transformer_stability.numerics.rounding import Precision
from transformer_stability.numerics.spec import (
    HELDOUT_TEXT,
    MODELS_DIR,
    SINK_DIR,
    SINK_IDS,
    SINK_MODEL,
    sink_spec,
)
from transformer_stability.numerics.tables import Gpt2Errors, Gpt2Recursion
from transformer_stability.sweeps import chunk_items, gather_items, run_chunk

TINY_MODEL = {"size": "tiny", "weights": "random", "layers": 2, "width": 16, "heads": 2}
CUSTOM = {"source": None, "vocab": 64, "positions": 32}
MODELS = {"errors": Gpt2Errors, "recursion": Gpt2Recursion}


def _numerics(**changes) -> dict:
    config = deep_merge(
        load_yaml(ROOT / "config.yaml"), load_yaml(ROOT / "tests/configs/tiny.yaml")
    )
    numerics = config["numerics"]
    numerics["models"] = [{**CUSTOM, **TINY_MODEL}]
    return {**numerics, **changes}


def test_items_are_one_per_model_alpha_and_storage_group_in_table_order():
    numerics = _numerics(alphas=[0.001, 1.0, 1000.0], precisions=["fp32", "bf16", "m16", "m10"])
    numerics["models"].append({**CUSTOM, **TINY_MODEL, "size": "other"})
    items = group_items(numerics, seed=0)
    assert [item.id for item in items[:3]] == [
        "random-tiny_a0.001_fp32",
        "random-tiny_a0.001_bf16",
        "random-tiny_a1_fp32",
    ]
    assert items[11].id == "random-other_a1000_bf16"
    assert items[-1].id == f"{SINK_MODEL}_a1000_bf16"  # N.9's sink model runs last
    assert len(items) == 3 * 3 * 2
    assert items[0].precisions == ("fp32", "m16", "m10") and items[1].precisions == ("bf16",)
    assert [item.id for item in weights_items(numerics, seed=0)] == [
        "random-tiny",
        "random-other",
        SINK_MODEL,
    ]
    assert len(chunk_items(items, 100)) == len(items)  # ids are distinct and file-name safe


@pytest.mark.parametrize("name", ["fp64", "fp32", "bf16", "fp16", "m1", "m10", "m16", "m23"])
def test_storage_format_matches_the_precision_dtype(name):
    dtypes = {"fp64": torch.float64, "fp32": torch.float32, "bf16": torch.bfloat16}
    dtypes["fp16"] = torch.float16
    assert dtypes[storage_format(name)] == Precision.parse(name).storage


def test_storage_groups_keep_config_order():
    assert storage_groups(["m10", "bf16", "fp32", "fp16", "m16"]) == [
        ("m10", "fp32", "m16"),
        ("bf16",),
        ("fp16",),
    ]


def test_model_seed_follows_the_name_not_the_list_position():
    assert model_seed(0, "random-gpt2") == 1240934583  # stable across runs and machines
    assert model_seed(0, "random-gpt2") != model_seed(1, "random-gpt2")
    assert model_seed(0, "random-gpt2") != model_seed(0, "random-gpt2-medium")
    other = {**CUSTOM, **TINY_MODEL, "size": "other"}
    first, second = _numerics(), _numerics()
    first["models"] = [first["models"][0], other]
    second["models"] = [other, second["models"][0]]
    by_id = lambda items: {item.id: item for item in items}  # noqa: E731
    a, b = by_id(group_items(first, 3)), by_id(group_items(second, 3))
    assert a == b  # reordering the models changes no item (hence no job's params)
    assert {repr(item) for item in a.values()} == {repr(item) for item in b.values()}
    assert a["random-tiny_a1_fp32"].model_seed == model_seed(3, "random-tiny")


def _random_items(numerics: dict) -> list:
    """The items of the configured random models (the sink model's need its training run)."""
    return [item for item in group_items(numerics, seed=0) if item.spec.name != SINK_MODEL]


def test_every_item_of_a_model_builds_the_identical_model():
    items = _random_items(_numerics())
    weights = weights_items(_numerics(), seed=0)[0]
    assert len({item.model_seed for item in [*items, weights]}) == 1
    gpt2_model.cache_clear()
    first = gpt2_model(items[0].spec, items[0].model_seed).state_dict()
    gpt2_model.cache_clear()
    again = gpt2_model(items[-1].spec, items[-1].model_seed).state_dict()
    for name, tensor in first.items():
        assert torch.equal(tensor, again[name]), name


@pytest.mark.slow
def test_chunk_tables_gather_into_the_same_tables_however_the_sweep_is_chunked(tmp_path):
    items = _random_items(_numerics(alphas=[0.1, 10.0], precisions=["fp32", "bf16"]))
    cpu = torch.device("cpu")
    gathered = {}
    for count in (1, 3, len(items)):
        paths = {}
        for chunk, members in chunk_items(items, count).items():
            paths[chunk] = {
                n: tmp_path / f"{count}" / f"{chunk}_{n}.csv" for n in ("errors", "recursion")
            }
            run_chunk(members, lambda item: group_tables(item, cpu), paths[chunk], "cpu", MODELS)
        gathered[count] = {
            name: gather_items(
                [read_table(p[name], MODELS[name], chunk=True) for p in paths.values()],
                [item.id for item in items],
            )
            for name in ("errors", "recursion")
        }
    for count in (3, len(items)):
        for name in ("errors", "recursion"):
            pd.testing.assert_frame_equal(gathered[count][name], gathered[1][name])
    errors = gathered[1]["errors"]
    assert list(dict.fromkeys(zip(errors.alpha, errors.precision, strict=True))) == [
        (0.1, "fp32"),
        (0.1, "bf16"),
        (10.0, "fp32"),
        (10.0, "bf16"),
    ]
    assert list(errors.columns[-4:]) == ["seed", "device", "dtype", "versions"]
    weights = weights_rows(weights_items(_numerics(), seed=0)[0], cpu)
    assert set(weights.model) == {"random-tiny"}


def test_a_chunk_with_a_missing_table_is_refused(tmp_path):
    item = group_items(_numerics(), seed=0)[0]
    paths = {name: tmp_path / f"{name}.csv" for name in ("errors", "recursion")}
    with pytest.raises(ValueError, match="gave tables"):
        run_chunk([item], lambda _: {"errors": pd.DataFrame({"x": [1]})}, paths, "cpu", MODELS)
    assert not list(tmp_path.iterdir())


def test_items_import_without_torch():
    """The workflow enumerates the items at parse time: items.py must not pull in torch."""
    import subprocess

    code = (
        "import sys; import transformer_stability.numerics.items; "
        "assert 'torch' not in sys.modules, 'torch imported'"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_a_trained_model_reads_its_own_directory_and_the_held_out_text():
    """Every item of a `weights: trained` model loads the pipeline's save_pretrained directory
    and reads the held-out glosses; a random model beside it keeps the configured input, and
    the sweeps depend on the trained models only where the config has one."""
    numerics = _numerics(alphas=[1.0], precisions=["fp32"])
    trained = {**TINY_MODEL, **CUSTOM, "weights": "trained", "vocab": 300}
    numerics["models"].append(trained)
    random, model, _sink = group_items(numerics, seed=0)
    assert model.spec.source == MODELS_DIR + "/trained-tiny"
    assert model.inputs.text == HELDOUT_TEXT and random.inputs.text is None
    assert [i.inputs.text for i in sources_items(numerics, 0)] == [None, HELDOUT_TEXT, None]
    assert [i.inputs.text for i in attention_items(numerics, 0)] == [None, HELDOUT_TEXT, None]
    sweeps = {sweep.rule: sweep for sweep in SWEEPS}
    assert sweeps["numerics_gpt2"].inputs(numerics) == [MODELS_DIR, SINK_DIR, HELDOUT_TEXT]
    assert sweeps["numerics_weights"].inputs(numerics) == [MODELS_DIR, SINK_DIR]
    assert sweeps["numerics_gpt2"].inputs(_numerics()) == [SINK_DIR]


@pytest.mark.parametrize(
    ("inputs", "expected"),
    [
        # (seq_len, sequences, batch) asked -> read of the sink model's 64-token sequences
        ((128, 2, 2), (64, 4, 4)),  # the same tokens per add, in whole sequences
        ((64, 3, 1), (64, 3, 1)),
        ((16, 2, 2), (16, 2, 2)),  # cut to the asked length
        ((1024, 20, 4), (64, 32, 32)),  # no more than it has (32)
    ],
)
def test_the_sink_model_reads_its_own_held_out_sequences(inputs, expected):
    """N.9's sink model joins every sweep with its own saved sequences (BOS first), never the
    configured synthetic tokens or text, as many tokens as the others read where it has them."""
    seq_len, sequences, batch = inputs
    numerics = _numerics(alphas=[1.0], precisions=["fp32"])
    numerics["inputs"] = {"seq_len": seq_len, "sequences": sequences, "batch": batch, "text": "x"}
    numerics["sinks"] = {**numerics["sinks"], "sequences": 32}
    numerics["sinks"]["task"] = {**numerics["sinks"]["task"], "seq_len": 64}
    sink = group_items(numerics, seed=0)[-1]
    assert sink.spec == sink_spec(numerics["sinks"]) and sink.spec.name == SINK_MODEL
    assert sink.spec.source == SINK_DIR and sink.spec.weights == "trained"
    assert sink.spec.vocab == numerics["sinks"]["task"]["vocab"] + 1  # BOS
    read = sink.inputs
    assert (read.seq_len, read.sequences, read.batch) == expected
    assert read.ids == SINK_IDS and read.text is None
    assert attention_items(numerics, 0)[-1].inputs == read


def test_no_configured_model_may_take_the_sink_models_name():
    numerics = _numerics()
    numerics["models"].append({**TINY_MODEL, **CUSTOM, "size": "backcopy", "weights": "trained"})
    assert any(SINK_MODEL in error for error in config_errors(numerics))


@pytest.mark.parametrize(
    ("change", "key"),
    [({"vocab": 512}, "numerics.models[1].vocab"), ({"positions": 8}, "models[1].positions")],
)
def test_a_trained_model_must_fit_the_tokenizer_and_the_input_length(change, key):
    numerics = _numerics()
    trained = {**TINY_MODEL, **CUSTOM, "weights": "trained", "vocab": 300, "positions": 16}
    numerics["models"].append(trained)
    assert config_errors(numerics) == []
    numerics["models"][1] = {**trained, **change}
    (error,) = config_errors(numerics)
    assert key in error
