"""Outside inputs (CIFAR-100, pretrained GPT-2) and the GPU that `device: cuda` asks for are
checked before the first job of a run, for the jobs that will run only; each missing one is
reported under the key the user set."""

import copy

import pytest
import torch
from conftest import ROOT, TINY, run_snakemake

from transformer_stability.device import NO_CUDA
from transformer_stability.numerics import checks as numerics_checks
from transformer_stability.registry import device_errors
from transformer_stability.registry import missing_inputs as input_errors
from transformer_stability.registry import validate as validate_config


@pytest.fixture
def config(schema) -> dict:
    return validate_config({}, schema)


def _with(config: dict, **changes) -> dict:
    out = copy.deepcopy(config)
    for path, value in changes.items():
        node = out
        *parents, leaf = path.split("__")
        for key in parents:
            node = node[key]
        node[leaf] = value
    return out


def _cifar(root):
    folder = root / "cifar-100-python"
    folder.mkdir(parents=True)
    for split in ("train", "test"):
        (folder / split).write_bytes(b"")
    return str(root)


def test_the_offline_default_needs_nothing(config):
    assert input_errors(config) == []


def test_cifar_is_checked_under_the_key_that_points_at_it(config, tmp_path):
    missing = str(tmp_path / "nowhere")
    train = _with(config, apjn__train__data__source="cifar100")
    train["apjn"]["train"]["data"]["cifar_root"] = missing
    (error,) = input_errors(train)
    assert error.startswith("config key 'apjn.train.data.cifar_root'") and missing in error
    images = copy.deepcopy(config)
    images["apjn"]["images"].update(source="cifar100", cifar_root=missing)
    (error,) = input_errors(images)
    assert error.startswith("config key 'apjn.images.cifar_root'")
    images["apjn"]["images"]["cifar_root"] = _cifar(tmp_path / "data")
    assert input_errors(images) == []


def test_pretrained_sources_must_be_loadable(config, tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(numerics_checks, "_cached", lambda repo_id: False)  # any machine
    entry = {**config["numerics"]["models"][0], "weights": "pretrained", "source": None}
    hub = copy.deepcopy(config)
    hub["numerics"]["models"] = [entry]
    (error,) = input_errors(hub)
    assert "'numerics.models[0].source': the hub id 'gpt2'" in error
    assert "weights: random" in error
    local = tmp_path / "gpt2"
    local.mkdir()
    hub["numerics"]["models"] = [{**entry, "source": str(local)}]
    (error,) = input_errors(hub)
    assert "no config.json" in error
    (local / "config.json").write_text("{}")
    assert input_errors(hub) == []


def test_studies_not_run_are_not_checked(config, tmp_path):
    skipped = _with(config, studies=["counting"], apjn__train__data__source="cifar100")
    skipped["apjn"]["train"]["data"]["cifar_root"] = str(tmp_path / "nowhere")
    assert input_errors(skipped) == []


def test_only_the_studies_of_the_rules_that_run_are_checked(config, tmp_path):
    cifar = _with(config, apjn__train__data__source="cifar100")
    cifar["apjn"]["train"]["data"]["cifar_root"] = str(tmp_path / "nowhere")
    assert len(input_errors(cifar, ["apjn_train", "counting_training"])) == 1
    assert input_errors(cifar, ["apjn_theory_curves", "counting_training", "figure"]) == []


@pytest.mark.slow
def test_a_paper_theory_target_runs_without_cifar_or_the_hub_and_the_paper_run_does_not(tmp_path):
    """The paper preset's pure-theory table needs no outside input; its whole run stops before
    any job, naming the keys. `--touch` runs the start hook (the preflight) without computing."""
    paper = ["--configfile", str(ROOT / "config" / "paper.yaml"), "--cores", "1", "--touch"]
    theory = run_snakemake(tmp_path, *paper, "results/apjn/theory_curves.csv", offline=True)
    assert theory.returncode == 0, theory.stderr[-3000:]
    everything = run_snakemake(tmp_path, *paper, offline=True)
    assert everything.returncode != 0
    assert "missing inputs" in everything.stderr
    assert "'apjn.train.data.cifar_root'" in everything.stderr
    assert "'numerics.models[0].source'" in everything.stderr


def test_cuda_is_checked_only_for_the_gpu_sweeps_that_run(config, monkeypatch):
    cuda = _with(config, device="cuda")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert device_errors(cuda, ["counting_training", "figure"]) == [NO_CUDA]
    assert device_errors(cuda, ["counting_theory", "numerics_bounds", "figure", "gather"]) == []
    assert device_errors(config, ["counting_training"]) == []  # auto: the CPU where no GPU
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert device_errors(cuda, ["counting_training"]) == []


@pytest.mark.slow
@pytest.mark.skipif(torch.cuda.is_available(), reason="a GPU is visible: cuda is usable here")
def test_device_cuda_without_a_gpu_stops_the_run_before_any_job(tmp_path):
    """A local run of a GPU sweep with `device: cuda` on a machine without a GPU stops at the
    start, naming the key and what to set instead; a dry run still plans."""
    cuda = tmp_path / "cuda.yaml"
    cuda.write_text("device: cuda\n")
    args = ["--configfile", TINY, str(cuda), "--cores", "1", "--", "results/counting/training.csv"]
    assert run_snakemake(tmp_path, "-n", *args).returncode == 0
    run = run_snakemake(tmp_path, *args)
    assert run.returncode != 0
    assert NO_CUDA in run.stderr
    assert "Error in rule" not in run.stderr  # no job ran, so none failed
    assert not (tmp_path / "results" / "logs").exists()
