"""Config validation: defaults, presets, and readable errors naming the key."""

import copy

import pytest
from conftest import ROOT, deep_merge, load_yaml
from snakemake.exceptions import WorkflowError

from transformer_stability import check_config
from transformer_stability.config import ConfigError, check_yaml
from transformer_stability.registry import validate as validate_config


def test_schema_defaults_are_the_embedded_cpu_preset(schema, default_config):
    """config.yaml spells out every default, so the two cannot drift apart."""
    assert validate_config({}, schema) == default_config


@pytest.mark.parametrize("preset", sorted((ROOT / "config").glob("*.yaml")), ids=lambda p: p.name)
def test_presets_are_valid(schema, default_config, preset):
    validate_config(deep_merge(default_config, load_yaml(preset)), schema)


def test_tests_tiny_config_is_valid(schema, default_config):
    validate_config(deep_merge(default_config, load_yaml(ROOT / "tests/configs/tiny.yaml")), schema)


def test_partial_sections_get_their_defaults(schema):
    config = validate_config({"apjn": {"model": {"width": 768, "img_size": 224}}}, schema)
    assert config["apjn"]["model"]["heads"] == 6
    assert config["apjn"]["input"] == {"q0": 1.0, "p0": 0.2}


def test_filled_defaults_are_copies_and_a_section_of_the_wrong_type_is_named(schema):
    first, second = validate_config({}, schema), validate_config({}, schema)
    first["apjn"]["variants"].append({"norm": "ln"})
    assert second["apjn"]["variants"] != first["apjn"]["variants"]
    with pytest.raises(ConfigError, match=r"config key 'apjn': 'wide' is not of type 'object'"):
        validate_config({"apjn": "wide"}, schema)


def _broken(default_config, path, value):
    config = copy.deepcopy(default_config)
    node = config
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return config


@pytest.mark.parametrize(
    ("path", "value", "expected"),
    [
        (["apjn", "model", "widht"], 3, ["'apjn.model'", "'widht' was unexpected", "width"]),
        (["apjn", "model", "width"], "big", ["'apjn.model.width'", "not of type 'integer'"]),
        (["apjn", "model", "depth"], 0, ["'apjn.model.depth'", "less than the minimum of 1"]),
        (["apjn", "theory", "fit_from"], 1.5, ["'apjn.theory.fit_from'"]),
        (["studies"], ["apjn", "vision"], ["'studies[1]'", "allowed values: 'apjn'"]),
        (["apjn", "variants"], [{"norm": "bn"}], ["'apjn.variants[0].norm'", "'ln', 'derf'"]),
        (["apjn", "variants"], [{"norm": "derf"}], ["'apjn.variants[0]'", "'alpha' is a required"]),
        (["apjn", "variants"], [{"norm": "ln", "alpha": 1.0}], ["'apjn.variants[0]'", "no alpha"]),
        (["apjn", "input", "p0"], 1.0, ["'apjn.input.p0'", "below apjn.input.q0"]),
        (["apjn", "model", "heads"], 5, ["'apjn.model.heads'", "does not divide"]),
        (["apjn", "width_scan", "heads"], [6, 6], ["'apjn.width_scan.heads'", "non-unique"]),
        (
            ["apjn", "width_scan", "variants"],
            [{"norm": "dyt", "alpha": 1.0}],
            ["'apjn.width_scan.variants[0].norm'", "'ln', 'derf'"],
        ),
        (["apjn", "model", "img_size"], 1024, ["'apjn.model.img_size'", "width >= (img_size"]),
        (["apjn", "model", "patch_size"], 7, ["'apjn.model.patch_size'", "does not divide"]),
        (["apjn", "images", "forward_source_block"], 80, ["below apjn.model.depth"]),
        (["apjn", "images", "source"], "cifar100", ["'apjn.images.cifar_root'"]),
        (["apjn", "train", "model", "init_std"], "vit_l", ["'apjn.train.model.init_std'"]),
        (["device"], "tpu", ["'device'", "allowed values: 'auto', 'cpu', 'cuda'"]),
        (
            ["counting", "theory", "fit_points"],
            40,
            ["'counting.theory.fit_points'", "cannot be fitted from the 10 lengths"],
        ),
        (
            ["counting", "theory", "lengths"],
            [1024, 2048],
            ["'counting.theory.classification_max_length'", "below every length"],
        ),
        (
            ["counting", "training", "regression", "lengths"],
            [],
            ["'counting.training.regression.lengths'", "should be non-empty"],
        ),
        (
            ["counting", "training", "classification", "unconstrained_lengths"],
            [16, 16],
            ["'counting.training.classification.unconstrained_lengths'", "non-unique"],
        ),
        (["numerics", "precisions"], ["fp32", "fp8"], ["'numerics.precisions[1]'", "match"]),
        (["numerics", "alphas"], [1.0, 10.0, 1.0], ["'numerics.alphas'", "non-unique"]),
        (
            ["numerics", "lipschitz", "seq_lens"],
            [4, 4],
            ["'numerics.lipschitz.seq_lens'", "non-unique"],
        ),
        (
            ["numerics", "models"],
            [{"size": "gpt2", "weights": "hub"}],
            ["'numerics.models[0].weights'", "allowed values: 'random', 'pretrained'"],
        ),
        (
            ["numerics", "models"],
            [{"size": "gpt2"}, {"size": "gpt2", "weights": "random"}],
            ["'numerics.models[1]'", "a second model is named 'random-gpt2'"],
        ),
        (
            ["numerics", "models"],
            [{"size": "small", "layers": 2, "width": 8}],
            ["'numerics.models[0].size'", "needs layers, width and heads"],
        ),
        (
            ["numerics", "models"],
            [{"size": "small", "layers": 2, "width": 10, "heads": 4}],
            ["'numerics.models[0].heads'", "does not divide"],
        ),
        (
            ["numerics", "models"],
            [{"size": "gpt2", "source": "/models/gpt2"}],
            ["'numerics.models[0].source'", "only read for pretrained"],
        ),
        (
            ["numerics", "sinks", "model"],
            {"layers": 2, "width": 10, "heads": 4},
            ["'numerics.sinks.model.heads'", "does not divide"],
        ),
        (
            ["numerics", "sinks", "task"],
            {"vocab": 3, "triggers": 3},
            ["'numerics.sinks.task.triggers'", "leaves no ordinary token"],
        ),
    ],
)
def test_bad_values_name_the_key(schema, default_config, path, value, expected):
    with pytest.raises(ConfigError) as info:
        validate_config(_broken(default_config, path, value), schema)
    for fragment in expected:
        assert fragment in str(info.value)


def test_a_yaml_syntax_error_is_named_by_file_and_line(tmp_path):
    good, bad = tmp_path / "good.yaml", tmp_path / "bad.yaml"
    good.write_text("seed: 1\n")
    bad.write_text("seed: 1\napjn:\n  model:\n    width: [1, 2\n  depth: 3\n")
    check_yaml(good)
    with pytest.raises(WorkflowError, match=r"bad\.yaml, line 5, column 8: not valid YAML"):
        check_yaml(bad)


def test_check_config_names_the_file_and_line_of_a_syntax_error_and_the_key_of_a_bad_value(
    tmp_path, capsys
):
    syntax, value = tmp_path / "syntax.yaml", tmp_path / "value.yaml"
    syntax.write_text("apjn:\n  model:\n    width: [1, 2\n")
    value.write_text("numerics:\n  precisions: [fp8]\n")
    assert check_config.main([str(syntax)]) == 1
    assert f"{syntax}, line 4, column 1: not valid YAML" in capsys.readouterr().err
    assert check_config.main([str(value)]) == 1
    assert "config key 'numerics.precisions[0]'" in capsys.readouterr().err
    assert check_config.main([str(tmp_path / "absent.yaml")]) == 1


@pytest.mark.parametrize("preset", ["config/paper.yaml", "tests/configs/tiny.yaml"])
def test_check_config_merges_a_preset_over_the_default_as_snakemake_does(default_config, preset):
    assert check_config.main([str(ROOT / preset)]) == 0
    merged = check_config.merged_config([ROOT / preset])
    assert merged == deep_merge(default_config, load_yaml(ROOT / preset)) != default_config
