"""The one place that assembles the studies: each study declares what the pipeline needs of it
in its `pipeline.py` (a `Study`), and the workflow, the report, the tests and the README follow
this registry (figures by name, sweeps by rule, tables by their path below results/). The
shared modules (config, io, sweeps, sweep_jobs, table_jobs, report, plotting) know no study."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pandas as pd

from transformer_stability.apjn.pipeline import STUDY as _APJN
from transformer_stability.claims import Claims, ClaimTerms, claims_tables, findings
from transformer_stability.code_inputs import module_sources
from transformer_stability.config import validate_config
from transformer_stability.counting.pipeline import STUDY as _COUNTING
from transformer_stability.numerics.pipeline import STUDY as _NUMERICS
from transformer_stability.plotting import FigureSpec
from transformer_stability.study import Study
from transformer_stability.sweeps import Sweep
from transformer_stability.tables import Table, below_results, meta

STUDIES: dict[str, Study] = {study.name: study for study in (_APJN, _NUMERICS, _COUNTING)}
FIGURES: dict[str, FigureSpec] = {f.name: f for s in STUDIES.values() for f in s.figures}
SWEEPS: dict[str, Sweep] = {w.rule: w for s in STUDIES.values() for w in s.sweeps}
# The config keys every table depends on (settings.py), by its path below results/: a sweep's
# gathered tables those of its items, the other tables their study's declaration.
TABLE_SETTINGS: dict[str, tuple[str, ...]] = {
    **{
        meta(t)["path"]: w.settings
        for s in STUDIES.values()
        for w in s.sweeps
        for t in w.tables.values()
    },
    **{meta(m)["path"]: keys for s in STUDIES.values() for m, keys in s.settings.items()},
}
# The config keys no table depends on (settings.py): what a run builds and shows, not what it
# computes. Changing one replans no data rule; every other key is in some table's settings.
PRESENTATION_KEYS: tuple[str, ...] = ("studies",)
TABLES: dict[str, type[Table]] = {
    **{meta(m)["path"]: m for s in STUDIES.values() for m in s.tables},
    meta(Claims)["path"]: Claims,
    meta(ClaimTerms)["path"]: ClaimTerms,
}


def table_model(path: str | Path) -> type[Table] | None:
    """The model of the table at `path`, found by its path below the last `results/` folder
    (.csv or .parquet); None for a path without one (a sweep's chunk table among them)."""
    below = below_results(Path(path).with_suffix(".csv"))
    return None if below is None else TABLES.get(below)


def figure_files() -> dict[str, str]:
    """The PNG of every figure by its code, as the report names it."""
    return {f.code: f"results/figures/{f.name}.png" for f in FIGURES.values()}


def study_figures(study: str) -> list[FigureSpec]:
    """The figures of one study, in the natural order of their codes (A1, A1-theory, A2)."""
    return list(STUDIES[study].figures)


def sweep_study(sweep: Sweep) -> Study:
    """The study that declares `sweep`."""
    return next(s for s in STUDIES.values() if sweep in s.sweeps)


def validate(config: dict[str, Any], schema_path: str | Path) -> dict[str, Any]:
    """Fill the schema's defaults into `config` and check it, every study's constraints
    between keys included (config.ConfigError lists every problem)."""
    checks = [lambda c, s=s: s.config_errors(c[s.name]) for s in STUDIES.values()]
    return validate_config(config, schema_path, checks)


def missing_inputs(config: dict[str, Any], rules: Iterable[str] | None = None) -> list[str]:
    """Every missing outside input (local data, pretrained weights) of the studies the config
    runs, as messages naming the config key; with `rules` (the rules of the jobs about to run),
    only of the studies whose sweeps are among them: only sweep jobs read outside inputs."""
    names = config["studies"]
    if rules is not None:
        running = {sweep_study(SWEEPS[rule]).name for rule in rules if rule in SWEEPS}
        names = [name for name in names if name in running]
    return [error for name in names for error in STUDIES[name].input_errors(config[name])]


def device_errors(config: dict[str, Any], rules: Iterable[str]) -> list[str]:
    """`device: cuda` on a machine without a visible GPU, when a GPU sweep is among `rules` (the
    rules of the jobs about to run here): the only jobs that use the device. torch is imported
    only then, so that starting any other run stays fast."""
    if config["device"] != "cuda" or not any(r in SWEEPS and SWEEPS[r].gpu for r in rules):
        return []
    import torch

    from transformer_stability.device import NO_CUDA

    return [] if torch.cuda.is_available() else [NO_CUDA]


def claim_tables(config: dict[str, Any]) -> list[str]:
    """The tables (paths below results/) the claims of the studies the config runs are tested
    on, in a stable order."""
    paths = {p for name in config["studies"] for c in STUDIES[name].claims for p in c.tables}
    return sorted(paths)


def claim_sources(config: dict[str, Any]) -> list[str]:
    """The package sources of the claims' tests (each claim's module and what it imports), so
    that editing a claim's test reruns the claims rule."""
    modules = {c.test.__module__ for name in config["studies"] for c in STUDIES[name].claims}
    return module_sources(*sorted(modules))


def evaluate_claims(
    tables: dict[str, pd.DataFrame], sections: dict[str, dict[str, Any]]
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(claims.csv, claim_terms.csv): every study's claims in registry order, tested on
    `tables` (by path below results/) with the config section of each study run (`sections`,
    by study name), "not run at this preset" for a study without one."""
    found = []
    for name, study in STUDIES.items():
        section = sections.get(name)
        found += findings(study.claims, None if section is None else tables, section)
    return claims_tables(found)
