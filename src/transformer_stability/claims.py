"""The claims of the three abstracts as a product of the run: each study states its claims once
(`<study>/claims.py`: a `ClaimSpec` per sentence-level claim, with the tables that test it and
the criterion), and the `claims` rule evaluates them on the run's tables into
results/claims.csv. Nothing in that table is typed: the statistic's value and the verdict are
computed from the tables of the run they sit beside. Knows no study."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import pandas as pd
import pandera.pandas as pa
from pandera.typing import Series

from transformer_stability.tables import Table

HOLDS, FAILS, NOT_RUN = "holds", "does not hold", "not run at this preset"
VERDICTS = (HOLDS, FAILS, NOT_RUN)


@dataclass(frozen=True)
class Finding:
    """What a claim's test computed: the statistic(s) in words, their values as text (numbers
    formatted by the study, e.g. "zeta = 0.66 (theory 0.67)") and whether the criterion holds."""

    statistic: str
    value: str
    holds: bool


Tables = Mapping[str, pd.DataFrame]  # by path below results/, read and checked with their model
ClaimTest = Callable[[Tables, Mapping[str, Any]], Finding | None]


@dataclass(frozen=True)
class ClaimSpec:
    """One sentence-level claim of an abstract. `test` gets the `tables` it names (paths below
    results/) and the study's config section, and returns its Finding, or None where the
    preset does not measure what the claim needs (then: not run at this preset). `criterion`
    says in words when the claim holds; `figure` is the code of the figure that shows it."""

    id: str  # "A.1": distinct from the figure codes
    statement: str
    criterion: str
    figure: str
    tables: tuple[str, ...]
    test: ClaimTest


class Claims(Table):
    """results/claims.csv: one row per claim of the abstracts, in the order the studies state
    them."""

    claim: Series[str] = pa.Field(description="the claim's id, e.g. A.1")
    statement: Series[str] = pa.Field(description="the claim, in the project's words")
    statistic: Series[str] = pa.Field(nullable=True, description="what tests it")
    value: Series[str] = pa.Field(nullable=True, description="its value(s) in this run")
    criterion: Series[str] = pa.Field(description="when the claim holds")
    verdict: Series[str] = pa.Field(isin=VERDICTS, description="the verdict of this run")
    figure: Series[str] = pa.Field(description="the figure code that shows it")

    class Config:
        metadata = {"path": "claims.csv", "rule": "claims"}


def _row(spec: ClaimSpec, finding: Finding | None) -> dict[str, Any]:
    verdict = NOT_RUN if finding is None else (HOLDS if finding.holds else FAILS)
    return {
        "claim": spec.id,
        "statement": spec.statement,
        "statistic": None if finding is None else finding.statistic,
        "value": None if finding is None else finding.value,
        "criterion": spec.criterion,
        "verdict": verdict,
        "figure": spec.figure,
    }


def claim_rows(
    specs: Iterable[ClaimSpec], tables: Tables | None, section: Mapping[str, Any] | None
) -> list[dict[str, Any]]:
    """The rows of `specs`: evaluated on `tables` with the study's config `section`, or all
    "not run at this preset" where the study did not run (`tables` None)."""
    if tables is None or section is None:
        return [_row(spec, None) for spec in specs]
    return [_row(spec, spec.test({p: tables[p] for p in spec.tables}, section)) for spec in specs]


def claims_table(rows: list[dict[str, Any]]) -> pd.DataFrame:
    """The claims table's own columns, in the model's order."""
    return pd.DataFrame(rows, columns=list(Claims.to_schema().columns))
