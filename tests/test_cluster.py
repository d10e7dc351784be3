"""The cluster plan: its arithmetic, the profile and docs it writes, and the paper preset's dry run
on the SLURM profile (threads, job counts, runtimes as planned)."""

import json
import re

import pytest
import yaml
from conftest import ROOT, announced_jobs, load_yaml, run_snakemake

from transformer_stability import cluster_plan
from transformer_stability.cluster_plan import RulePlan, plan, preset_config
from transformer_stability.work import (
    FLOP_PER_SECOND,
    LIMIT_MIN,
    MEMORY_MARGIN,
    STARTUP_SECONDS,
    Work,
    segments,
    transformer_flop,
)

PROFILE = load_yaml(cluster_plan.PROFILE)
PLANS = plan(preset_config(), cluster_plan.measurements())


def _paper_inputs(directory) -> str:
    """Stand-ins for the paper preset's outside inputs: a CIFAR-100 folder (data/cifar100 under
    the run directory, as the preset says) and a local directory for the pretrained GPT-2.
    Returns a config file pointing the pretrained model there."""
    cifar = directory / "data" / "cifar100" / "cifar-100-python"
    cifar.mkdir(parents=True)
    for split in ("train", "test"):
        (cifar / split).write_bytes(b"")
    (directory / "gpt2").mkdir()
    (directory / "gpt2" / "config.json").write_text("{}")
    models = load_yaml(ROOT / "config/paper.yaml")["numerics"]["models"]
    models[0]["source"] = str(directory / "gpt2")
    override = directory / "local_gpt2.yaml"
    override.write_text(yaml.safe_dump({"numerics": {"models": models}}))
    return str(override)


@pytest.fixture(scope="module")
def paper_dry_run(tmp_path_factory) -> str:
    """The paper preset planned through profiles/slurm (as docs/cluster.md shows it), once."""
    workdir = tmp_path_factory.mktemp("paper_slurm")
    configs = ["config/paper.yaml", _paper_inputs(workdir)]
    args = ["-n", "--profile", str(ROOT / "profiles/slurm"), "--configfile", *configs]
    result = run_snakemake(workdir, *args)
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout


def _job_stats(output: str) -> dict[str, int]:
    """The dry run's "Job stats" table: rule -> job count, and "total"."""
    stats = output.split("Job stats:")[1].split("\n\n")[0]
    return {rule: int(count) for rule, count in re.findall(r"^(\w+)\s+(\d+)$", stats, re.M)}


def _job_fields(output: str, field: str) -> list[tuple[str, str]]:
    """(rule, the job's `field:` line) of every announced job that has the line."""
    blocks = re.split(r"^(?=(?:local)?rule \w+:$)", output, flags=re.MULTILINE)[1:]
    found = []
    for block in blocks:
        rule = re.match(r"(?:local)?rule (\w+):", block).group(1)
        line = re.search(rf"^    {field}: (.*)$", block, re.MULTILINE)
        found += [(rule, line.group(1))] if line else []
    return found


def test_transformer_flop_counts_matrices_and_attention():
    # one block, width 1, one token: 2 x (4 + 2 x 4) matrix FLOP + 4 for the attention
    assert transformer_flop(1, 1, 1) == 28
    assert transformer_flop(3, 2, 5, mlp_ratio=2.0) == 3 * 5 * (2 * 8 * 4 + 4 * 5 * 2)
    # ViT-B/16 at 224 px: the usual 17.6 GMAC per image through its 12 blocks
    assert transformer_flop(12, 768, 197) == pytest.approx(35.2e9, rel=0.02)


def test_requests_round_up_the_margined_estimate():
    start = STARTUP_SECONDS
    assert RulePlan("r", 1, "i", Work(0.0)).minutes == 10  # 5 min x 1.5 = 7.5 min
    # 400 s x 1.5 is exactly 10 minutes; a little more work asks for the next 10
    at_granule = Work((400 - start) * FLOP_PER_SECOND)
    assert RulePlan("r", 1, "i", at_granule).minutes == 10
    steps = Work(at_granule.flop, steps=1)
    assert RulePlan("r", 1, "i", steps).minutes == 20
    # apjn_train's ViT-B run: 6.7e16 FLOP is 112 min at 10 TFLOP/s
    run = Work(6.7e16)
    assert RulePlan("r", 1, "i", run).seconds == pytest.approx(start + 6700)
    assert RulePlan("r", 1, "i", run).minutes == 180


def test_a_job_over_the_limit_is_cut_into_the_fewest_segments_that_fit():
    run = Work(6.7e16, steps=5000)
    assert segments(run) == 2  # 3350 s + 300 s start-up + 5 s of steps, x 1.5: 100 min
    assert RulePlan("r", 1, "i", run.part(2)).minutes == 100 <= LIMIT_MIN
    assert run.part(2).flop == run.flop / 2 and run.part(2).steps == 2500
    assert segments(Work(0.0)) == 1 and run.part(1) == run
    # each segment pays the start-up again: 3 x 1.2e16 FLOP needs 4 segments, not 3
    long = Work(3 * (LIMIT_MIN * 60 / 1.5 - STARTUP_SECONDS) * FLOP_PER_SECOND * 1.01)
    assert segments(long) == 4


def test_every_gpu_rule_of_the_profile_is_planned_from_its_work():
    gpu = {rule for rule, res in PROFILE["set-resources"].items() if res.get("gpu")}
    assert gpu == {p.rule for p in PLANS}


def test_the_profile_and_the_docs_hold_the_current_plan():
    profile = cluster_plan.PROFILE.read_text()
    assert cluster_plan.with_requests(profile, PLANS) == profile
    docs = cluster_plan.DOCS.read_text()
    assert cluster_plan.with_table(docs, cluster_plan.table(PLANS)) == docs
    for p in PLANS:
        assert PROFILE["set-resources"][p.rule]["runtime"] == p.minutes
        assert PROFILE["set-resources"][p.rule]["mem_mb"] == p.mem_mb
        assert f"| `{p.rule}` | {p.jobs} | `{p.largest}` |" in docs


def test_with_requests_sets_only_the_planned_rules_and_keeps_comments():
    text = (
        "set-resources:\n  a:   # one\n    runtime: 5  # old\n    mem_mb: 1\n"
        "  b:\n    runtime: 7\n    mem_mb: 2\n"
    )
    work = Work(0.0, memory_bytes=3.1e9)
    planned = RulePlan("a", 1, "i", work, host_bytes=5.1e9)
    assert planned.mem_mb == 7000  # 5.1 GB x 1.25 = 6.4 GB, rounded up to whole GB
    assert cluster_plan.with_requests(text, [planned]) == text.replace(
        "runtime: 5  # old", "runtime: 10  # old"
    ).replace("mem_mb: 1", "mem_mb: 7000")
    with pytest.raises(ValueError, match=r"\('c', 'mem_mb'\)"):
        cluster_plan.with_requests(text, [RulePlan("c", 1, "i", work)])


def test_a_measured_peak_above_the_prediction_raises_the_request_and_one_below_does_not():
    work = Work(0.0)

    def measured(ratio: float) -> dict:
        return {"host_mib": 100.0 * ratio, "predicted_host_mib": 100.0}

    predicted = RulePlan("a", 1, "i", work, host_bytes=8e9)
    assert predicted.mem_mb == 10_000 and predicted.memory_ratio is None
    assert RulePlan("a", 1, "i", work, host_bytes=8e9, measured=measured(0.5)).mem_mb == 10_000
    assert RulePlan("a", 1, "i", work, host_bytes=8e9, measured=measured(1.5)).mem_mb == 15_000


def test_measurements_are_the_meters_records_without_the_stopped_items(tmp_path):
    path = tmp_path / "m.json"
    rows = [
        {"rule": "a", "host_mib": 300.0, "predicted_host_mib": 200.0},
        {"rule": "b", "timeout": 10},
    ]
    path.write_text(json.dumps(rows))
    assert cluster_plan.measurements(path) == {"a": rows[0]}
    assert cluster_plan.measurements(tmp_path / "none.json") == {}


def test_a_rule_slower_per_flop_than_the_median_gets_its_time_scaled_and_no_rule_less():
    works = {r: Work(1e12) for r in "abc"} | {"d": Work(0.0, steps=200)}  # d: 1e13 in steps
    largest = {r: "i" for r in works}

    def record(wall_s: float, ratio: float = 1.0) -> dict:
        return {"item": "i", "wall_s": wall_s, "work_ratio": ratio}

    measured = {"a": record(1.0), "b": record(2.0), "c": record(8.0), "d": record(0.5)}
    # rates 1e12, 5e11, 1.25e11, 2e12 per s: median 7.5e11
    slowdowns = cluster_plan._slowdowns(works, largest, measured)
    assert slowdowns == pytest.approx({"a": 1.0, "b": 1.5, "c": 6.0, "d": 1.0})
    stale = {"a": record(1.0) | {"item": "another"}}  # measured for another item: not used
    assert cluster_plan._slowdowns(works, largest, stale) == {}
    assert cluster_plan._current(stale["a"], "i") is None
    assert cluster_plan._current(measured["a"], "i") is measured["a"]
    slow = RulePlan("c", 1, "i", Work(6e15), slowdown=6.0)
    assert slow.seconds == pytest.approx(STARTUP_SECONDS + 6 * 6e15 / FLOP_PER_SECOND)
    assert slow.minutes > RulePlan("c", 1, "i", Work(6e15)).minutes


def test_a_rule_is_requested_by_its_longest_item_and_metered_by_its_most_device_work():
    """Host seconds (Study C's polish) lengthen a job but no GPU rate shortens them: the request
    is the longest item's estimate, while the meter's record, which calibrates the device's
    rate, stays that of the item with the most device work."""
    works = {"device": Work(1e16), "host": Work(1e15, host_seconds=3000.0)}
    measured = {"r": {"rule": "r", "item": "device", "wall_s": 1.0, "work_ratio": 1.0}}

    class Sweep:
        rule, segment_rule = "r", "r_segment"

        @staticmethod
        def items(config, seed):
            return [type("Item", (), {"id": key})() for key in works]

        @staticmethod
        def work(item):
            return works[item.id]

    study = type("Study", (), {"name": "s"})
    config = {"studies": ["s"], "s": {}, "seed": 0}
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(cluster_plan, "SWEEPS", {"r": Sweep})
        patch.setattr(cluster_plan, "sweep_study", lambda sweep: study)
        patch.setattr(cluster_plan, "sweep_segments", lambda items: 1)
        (planned,) = plan(config, measured)
    assert planned.largest == "host" and planned.work == works["host"]
    assert planned.measured is measured["r"]
    assert planned.seconds == pytest.approx(STARTUP_SECONDS + 1e15 / FLOP_PER_SECOND + 3000)
    assert Work(1e15, host_seconds=3000.0).part(3).host_seconds == pytest.approx(1000)
    (counting,) = [p for p in PLANS if p.rule == "counting_training"]
    assert counting.work.host_seconds > 0 and counting.measured is not None


@pytest.mark.parametrize("rule", [p.rule for p in PLANS])
def test_no_planned_job_is_over_the_limit(rule):
    (planned,) = [p for p in PLANS if p.rule == rule]
    assert planned.minutes <= LIMIT_MIN, planned


@pytest.mark.slow
def test_cluster_jobs_get_the_threads_the_profile_sets(paper_dry_run):
    threads = PROFILE["set-threads"]
    jobs = _job_fields(paper_dry_run, "threads")
    assert {rule for rule, _ in jobs} == set(threads)
    for rule, value in jobs:
        assert int(value) == threads[rule], rule
    announced = [rule for rule, _ in announced_jobs(paper_dry_run)]
    assert len(jobs) == sum(rule in threads for rule in announced)


@pytest.mark.slow
def test_cluster_jobs_ask_for_the_planned_runtime(paper_dry_run):
    minutes = {p.rule: p.minutes for p in PLANS}
    for rule, resources in _job_fields(paper_dry_run, "resources"):
        if rule in minutes:
            assert f"runtime={minutes[rule]}" in resources.split(", "), rule


@pytest.mark.slow
def test_job_counts_in_the_docs_are_the_dry_runs(paper_dry_run):
    stats = _job_stats(paper_dry_run)
    for p in PLANS:
        assert stats[p.rule] == p.jobs, p.rule
    docs = cluster_plan.DOCS.read_text()
    stated = re.search(r"plans (\d+) jobs\s+in all:(.*?)\(the plots", docs, re.DOTALL)
    assert int(stated.group(1)) == stats["total"]
    counts = re.findall(r"(\d+)\s+`(\w+)`", stated.group(2))
    assert {rule for _, rule in counts} >= {p.rule for p in PLANS} | {"figure", "gather"}
    for count, rule in counts:
        assert int(count) == stats[rule], rule


def test_every_planned_rule_asks_for_its_predicted_host_memory_with_the_margin():
    """The cost model's peak of every paper item, scaled where the meter measured more, is held
    by the profile's request with the margin; the meter measured every planned rule."""
    requests = PROFILE["set-resources"]
    for rule in PLANS:
        assert rule.measured is not None, f"{rule.rule}: not measured, or stale (make bench-paper)"
        needed = MEMORY_MARGIN * max(1.0, rule.memory_ratio) * rule.host_bytes
        assert requests[rule.rule]["mem_mb"] * 1e6 >= needed, (rule.rule, rule.host_bytes)


def test_pieces_bound_the_width_scan_by_its_chunk_size_not_its_depth():
    """The d = 3072 width-scan model is 29 GB in float32 at depth 64; built 8 blocks at a time
    its predicted peak is a few GB, and depth adds only the (S, N, d) state entering each piece."""
    from dataclasses import replace

    from transformer_stability.apjn.items import width_items

    config = preset_config()
    widest = max(width_items(config["apjn"], 0), key=lambda item: item.curve.spec.width)
    work = cluster_plan.SWEEPS["apjn_width"].work
    spec = widest.curve.spec
    deeper = replace(widest, curve=replace(widest.curve, spec=spec.with_(depth=4 * spec.depth)))
    assert spec.width == 3072 and spec.depth == 64
    assert work(widest).memory_bytes < 10e9
    pieces = 3 * spec.depth // widest.curve.settings.chunk_blocks
    states = 4 * pieces * widest.curve.images.count * spec.n_tokens * spec.width
    assert work(deeper).memory_bytes - work(widest).memory_bytes == pytest.approx(states)
