"""A verdict must not flip between two runs of the same commit: the claims of the tiny run,
recomputed on resamples of its replication units (what a second seed set would draw anew, as
each claim declares them in `ClaimSpec.units`), never turn `holds` into `does not hold` or back;
only `undecided` lies between them."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from transformer_stability import verdicts
from transformer_stability.claims import ClaimSpec, claims_tables, findings
from transformer_stability.io import read_table
from transformer_stability.registry import STUDIES, table_model
from transformer_stability.verdicts import FAILS, HOLDS

OPPOSITE = {HOLDS: FAILS, FAILS: HOLDS}
SECOND_SEED_SETS = (1, 2, 3)


def resampled(table: pd.DataFrame, units: tuple[str, ...], seed: int) -> pd.DataFrame:
    """`table` with its units drawn with replacement, each with all its rows; a unit drawn twice
    is kept apart by a fresh label (an offset beyond every original value)."""
    keys = table[list(units)].drop_duplicates().reset_index(drop=True)
    drawn = np.random.default_rng(seed).integers(0, len(keys), size=len(keys))
    parts = []
    for position, index in enumerate(drawn):
        rows = table.merge(keys.iloc[[index]], on=list(units))
        offset = position * (int(table[units[0]].max()) + 1) if position else 0
        parts.append(rows.assign(**{units[0]: rows[units[0]] + offset}))
    return pd.concat(parts, ignore_index=True)


def claims_on(
    results: Path, specs: tuple[ClaimSpec, ...], section: dict, seed: int | None
) -> dict[str, str]:
    """The verdict of each claim of `specs` on the run's tables, or on a resample of their units
    (`seed`)."""
    tables = {}
    for spec in specs:
        for path in spec.tables:
            table = read_table(results / path, table_model(path))
            units = spec.units.get(path)
            tables[path] = table if seed is None or not units else resampled(table, units, seed)
    claims, _ = claims_tables(findings(specs, tables, section))
    return dict(zip(claims["claim"], claims["verdict"], strict=True))


def test_resampled_units_keep_every_row_of_a_drawn_unit():
    table = pd.DataFrame({"seed": [0, 0, 1, 1, 2, 2], "x": [1, 2, 3, 4, 5, 6]})
    copy = resampled(table, ("seed",), seed=0)
    assert len(copy) == len(table) and copy["seed"].nunique() == 3
    for _, rows in copy.groupby("seed"):
        assert len(rows) == 2 and rows["x"].max() - rows["x"].min() == 1


@pytest.mark.slow
@pytest.mark.parametrize("study", sorted(STUDIES))
def test_no_verdict_flips_between_seed_sets_of_the_tiny_run(tiny_run, study, monkeypatch):
    monkeypatch.setattr(verdicts, "RESAMPLES", 500)
    results = tiny_run.workdir / "results"
    section = yaml.safe_load((results / "config.yaml").read_text())[study]
    specs = STUDIES[study].claims
    assert any(spec.units for spec in specs), "every sampled claim names its units"
    first = claims_on(results, specs, section, None)
    for seed in SECOND_SEED_SETS:
        second = claims_on(results, specs, section, seed)
        flips = {c: (v, second[c]) for c, v in first.items() if second[c] == OPPOSITE.get(v)}
        assert not flips, f"verdicts flipped on resample {seed}: {flips}"
