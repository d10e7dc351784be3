# Config validation and the helpers every study module uses: sweep chunks, rerun-on-code inputs.
import os
import re

from snakemake.exceptions import WorkflowError
from snakemake.io import apply_wildcards

from transformer_stability.config import ConfigError, may_use_gpu
from transformer_stability.plotting import ReportCaption, listed_code
from transformer_stability.registry import (
    FIGURES,
    STUDIES,
    SWEEPS,
    claim_sources,
    TABLE_SETTINGS,
    claim_tables,
    device_errors,
    missing_inputs,
    study_figures,
    sweep_study,
    validate,
)
from transformer_stability.io import read_only, read_only_error
from transformer_stability.report import RECORD, record_config
from transformer_stability.settings import config_slice, read_settings
from transformer_stability.settings_inputs import record_settings, settings_path
from transformer_stability.code_inputs import as_input, module_sources, script_sources
from transformer_stability.sweeps import chunk_items, chunk_priorities, sweep_segments
from transformer_stability.tables import meta, result
from transformer_stability.tables import below_results

try:
    validate(config, f"{workflow.basedir}/workflow/schemas/config.schema.yaml")
except ConfigError as error:
    raise WorkflowError(str(error)) from None


def preflight():
    """Stop before the first job if the outputs of the jobs about to run (or the record of the
    run's configuration) would land in a read-only folder, if an outside input (CIFAR-100,
    pretrained weights) of those jobs is missing, or if they are to run here on a GPU
    (`device: cuda`) that this machine does not have. Called from `onstart`, which runs only
    in the main process of a run with work to do: never for a dry run, a report (`make
    report` builds from a results tree alone) or a cluster job on a node that may have no
    network."""
    jobs = list(workflow.dag.needrun_jobs())
    blocked = read_only([RECORD, *(output for job in jobs for output in job.output)])
    if blocked:
        raise WorkflowError(read_only_error(blocked))
    rules = {job.rule.name for job in jobs}
    missing = missing_inputs(config, rules)
    if missing:
        raise WorkflowError("missing inputs:\n  " + "\n  ".join(missing))
    # a cluster's jobs find their GPU on its nodes, not on the submitting host
    unusable = device_errors(config, rules) if workflow.local_exec else []
    if unusable:
        raise WorkflowError("\n".join(unusable))


def chunk_cost(sweep):
    """An item's arithmetic (FLOP), where the sweep declares a cost model."""
    return (lambda item: sweep.work(item).flop) if sweep.work else None


def chunks(sweep, items):
    """The sweep's items by chunk name, as many chunks as `scattergather` (or the profile's
    `set-scatter`) gives the sweep, at most one per item, of about equal arithmetic."""
    count = len(getattr(scatter, sweep.rule)("{scatteritem}"))
    return chunk_items(items, count, chunk_cost(sweep))


def code(script):
    """The package modules a workflow script imports: a rule's inputs, so that editing one
    reruns exactly the jobs that run it."""
    return script_sources(f"{workflow.basedir}/workflow/scripts/{script}")


def table_settings(rule):
    """The `settings` parameter of the data rule named `rule`, the config slice its job's
    tables depend on (registry.TABLE_SETTINGS), so that changing one of those keys reruns the
    job; its script reads the config only through it, and every table records it
    (settings.py). A function of the wildcards alone: Snakemake records no parameter derived
    from a job's output."""

    def settings(wildcards):
        outputs = [
            apply_wildcards(p, wildcards) for p in workflow.get_rule(rule).output
        ]
        tables = [below_results(path) for path in outputs]
        keys = {
            key
            for table in tables
            if table in TABLE_SETTINGS
            for key in TABLE_SETTINGS[table]
        }
        return config_slice(config, keys)

    return settings


# Every data job's settings record (settings_inputs.py), by rule: the wildcards of each of its
# jobs, its settings and the tables that tell whether they changed. The records are written
# once the rules are read (`write_settings_records`, end of the Snakefile), before Snakemake
# builds the jobs and takes stock of which files exist.
SETTINGS_RECORDS = {}


def settings_record(rule, settings=None, tables=None, jobs=({},)):
    """Input function: the job's settings record, a file whose date reruns the job when its
    tables were made under other settings, with or without Snakemake's metadata. `settings`
    (wildcards -> slice) defaults to the rule's table settings, `tables` (wildcards -> paths) to
    the job's outputs that are tables; `jobs` lists the wildcards of the rule's jobs."""
    SETTINGS_RECORDS[rule] = (settings or table_settings(rule), tables, jobs)

    def record(wildcards):
        # none where results/ is read-only: the preflight says so before any job
        path = _record_path(rule, wildcards)
        return [path] if os.path.exists(path) else []

    return record


def _outputs(rule, wildcards):
    return [apply_wildcards(p, wildcards) for p in workflow.get_rule(rule).output]


def _record_path(rule, wildcards):
    return settings_path(_outputs(rule, wildcards)[0])


def write_settings_records():
    """Write (or re-date) every data job's settings record (settings_inputs.record_settings)."""
    for rule, (settings, tables, jobs) in SETTINGS_RECORDS.items():
        for wildcards in jobs:
            outputs = _outputs(rule, wildcards)
            checked = (
                tables(wildcards)
                if tables
                else [path for path in outputs if below_results(path) in TABLE_SETTINGS]
            )
            record_settings(settings_path(outputs[0]), settings(wildcards), checked)


def one_of(names):
    """A wildcard constraint matching exactly these names."""
    return "|".join(re.escape(name) for name in names)


# Jobs that may use the GPU hold a `gpu` token (profiles/default allows one) when a GPU can be
# there; on a machine without one they run side by side on the CPU cores.
GPU_TOKENS = int(may_use_gpu(config["device"]))


# The token counts GPUs per machine: a local run's jobs share one device, while on a cluster each
# submitted job has its own and the submitting process must not queue GPU jobs one at a time.
resource_scopes:
    gpu="local",


# Gathered tables of the sweeps: "<study>/<table>" -> (chunk table pattern, item ids in sweep
# order, chunk names), filled by workflow/rules/sweeps.smk; gather.smk makes one job of each.
GATHERED = {}
# outside input of a sweep (a file another rule makes) -> the highest priority of the chunks that
# read it (sweeps.smk): its rule gets that priority too, so that a costly chunk does not wait
# for a file whose rule is started last
FEEDING = {}


def feeding_priority(path):
    """The priority of the rule that makes `path` (0 where no sweep reads it)."""
    return FEEDING.get(path, 0)


# What the plot job of a figure reads (figures.smk), and its report category, labels, caption.
def figure_inputs(wildcards):
    figure = FIGURES[wildcards.figure]
    return {**figure.inputs, "sources": module_sources(figure.plot.__module__)}


def figure_category(wildcards):
    return STUDIES[FIGURES[wildcards.figure].study].category


# The report's format toggle opens on the value that sorts first: the PNG, which every browser
# shows inline (a PDF is a blank pane where no PDF viewer is present).
IMAGE_FORMATS = {"png": "image (PNG)", "pdf": "vector (PDF)"}
assert sorted(IMAGE_FORMATS.values())[0] == IMAGE_FORMATS["png"]


def figure_labels(file_format):
    """Report labels of a figure's PDF or PNG, for the settings recorded beside it, its code
    written to be listed in natural order (plotting.listed_code)."""

    def labels(wildcards, output):
        figure = FIGURES[wildcards.figure]
        own = figure.labels(read_settings(output.pdf))
        return {**own, "figure": listed_code(figure.code), "format": file_format}

    return labels


def figure_caption(wildcards):
    """The figure's caption, rendered by the report from its tables' settings
    (workflow/report/figure.rst)."""
    return ReportCaption(FIGURES[wildcards.figure].template)
