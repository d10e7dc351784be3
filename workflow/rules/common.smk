# Config validation and the helpers every study module uses: sweep chunks, rerun-on-code inputs.
import re
from pathlib import Path

from snakemake.exceptions import WorkflowError

from transformer_stability.config import ConfigError, validate_config
from transformer_stability.registry import FIGURES, study_figures
from transformer_stability.vocabulary import STUDY_CATEGORIES
from transformer_stability.sources import module_sources, script_sources
from transformer_stability.sweeps import chunk_items

try:
    validate_config(config, f"{workflow.basedir}/workflow/schemas/config.schema.yaml")
except ConfigError as error:
    raise WorkflowError(str(error)) from None


def chunks(name, items):
    """The sweep's items by chunk name, as many chunks as `scattergather` (or the profile's
    `set-scatter`) gives sweep `name`, at most one per item."""
    count = len(getattr(scatter, name)("{scatteritem}"))
    return chunk_items(items, count)


def code(script):
    """The package modules a workflow script imports: a rule's inputs, so that editing one
    reruns exactly the jobs that run it."""
    return script_sources(f"{workflow.basedir}/workflow/scripts/{script}")


def one_of(names):
    """A wildcard constraint matching exactly these names."""
    return "|".join(re.escape(name) for name in names)


# Jobs that may use the GPU hold a `gpu` token (profiles/default allows one) when a GPU can be
# there; on a machine without one they run side by side on the CPU cores.
GPU_TOKENS = int(
    config["device"] == "cuda"
    or (config["device"] == "auto" and Path("/dev/nvidiactl").exists())
)


# Gathered tables of the sweeps: "<study>/<table>" -> (chunk table pattern, item ids in sweep
# order, chunk names). workflow/rules/gather.smk turns each into one gather job.
GATHERED = {}


def sweep(name, items, tables):
    """Chunk a sweep (see `chunks`) and register the tables its chunks write, {gathered table:
    chunk table pattern}; returns the items by chunk name."""
    chunked = chunks(name, items)
    for table, pattern in tables.items():
        GATHERED[table] = (pattern, [item.id for item in items], list(chunked))
    return chunked
