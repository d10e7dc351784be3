"""The claims of the three abstracts as a product of the run: each study states its claims once
(`<study>/claims`: a `ClaimSpec` per sentence-level claim, with the tables that test it and
the criterion), and the `claims` rule evaluates them on the run's tables into
results/claims.csv (one row per claim) and results/claim_terms.csv (one row per term of a
claim's criterion, with its interval). Nothing in those tables is typed: the statistics, their
intervals and the verdicts are computed from the tables of the run they sit beside. Knows no
study."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import pandas as pd
import pandera.pandas as pa
from pandera.typing import Series

from transformer_stability.tables import INF, Table
from transformer_stability.verdicts import FAILS, HOLDS, UNDECIDED, Term, combined, margin

NOT_RUN = "not run at this preset"
VERDICTS = (HOLDS, FAILS, UNDECIDED, NOT_RUN)


@dataclass(frozen=True)
class Finding:
    """What a claim's test computed: the statistic(s) in words, the values a reader needs
    beside the verdict as text (`value`: context, formatted by the study), and the `terms`
    whose intervals decide the verdict (verdicts.py)."""

    statistic: str
    value: str
    terms: tuple[Term, ...]

    @property
    def verdict(self) -> str:
        return combined(term.verdict for term in self.terms)


Tables = Mapping[str, pd.DataFrame]  # by path below results/, read and checked with their model
ClaimTest = Callable[[Tables, Mapping[str, Any]], Finding | None]


@dataclass(frozen=True)
class ClaimSpec:
    """One sentence-level claim of an abstract. `test` gets the `tables` it names (paths below
    results/) and the study's config section, and returns its Finding (whose terms decide the
    verdict), or None where the preset does not measure what the claim needs (then: not run
    at this preset). `criterion`
    says in words when the claim holds; `figure` is the code of the figure that shows it."""

    id: str  # "A.1": distinct from the figure codes
    statement: str
    criterion: str
    figure: str
    tables: tuple[str, ...]
    test: ClaimTest
    units: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """The replication units of each sampled table (path: its unit columns, e.g. the seeds of a
    training table): the independent draws a bootstrap resamples, and that a second seed set
    would draw anew (the verdict stability test resamples them). A table absent here has no
    sampling noise (a theory curve)."""


class Claims(Table):
    """results/claims.csv: one row per claim of the abstracts, in the order the studies state
    them."""

    claim: Series[str] = pa.Field(description="the claim's id, e.g. A.1")
    statement: Series[str] = pa.Field(description="the claim, in the project's words")
    statistic: Series[str] = pa.Field(nullable=True, description="what tests it")
    value: Series[str] = pa.Field(nullable=True, description="its value(s) in this run")
    criterion: Series[str] = pa.Field(description="when the claim holds")
    intervals: Series[str] = pa.Field(
        nullable=True,
        description="the terms that decide the verdict, each with its point value, interval and "
        "criterion (the undecided and failing ones, or the tightest where all hold); every term "
        "in claim_terms.csv",
    )
    verdict: Series[str] = pa.Field(isin=VERDICTS, description="the verdict of this run")
    need: Series[str] = pa.Field(
        nullable=True, description="for an undecided claim, what would decide it"
    )
    figure: Series[str] = pa.Field(description="the figure code that shows it")

    class Config:
        metadata = {"path": "claims.csv", "rule": "claims"}


class ClaimTerms(Table):
    """results/claim_terms.csv: one row per term of each claim's criterion: the statistic's
    point value and interval, the range where the claim holds, and the term's verdict."""

    claim: Series[str] = pa.Field(description="the claim's id, e.g. A.1")
    term: Series[str] = pa.Field(description="the statistic and where it is measured")
    point: Series[float] = pa.Field(nullable=True, metadata=INF, description="its value")
    lo: Series[float] = pa.Field(nullable=True, metadata=INF, description="its interval's low end")
    hi: Series[float] = pa.Field(nullable=True, metadata=INF, description="its interval's high end")
    basis: Series[str] = pa.Field(description="where the interval comes from")
    criterion: Series[str] = pa.Field(description="the values for which the term holds")
    verdict: Series[str] = pa.Field(isin=VERDICTS[:3], description="the term's verdict")
    need: Series[str] = pa.Field(nullable=True, description="what would decide an undecided term")

    class Config:
        metadata = {"path": "claim_terms.csv", "rule": "claims"}


def _decisive(terms: tuple[Term, ...]) -> list[Term]:
    """The terms a reader checks first: the undecided and failing ones, or, where every term
    holds, the one whose interval came nearest its criterion's end."""
    open_terms = [t for t in terms if t.verdict != HOLDS]
    return open_terms or [min(terms, key=margin)]


def _row(spec: ClaimSpec, finding: Finding | None) -> dict[str, Any]:
    needs = [] if finding is None else [t.deciding_need() for t in finding.terms]
    return {
        "claim": spec.id,
        "statement": spec.statement,
        "statistic": None if finding is None else finding.statistic,
        "value": None if finding is None else finding.value,
        "criterion": spec.criterion,
        "intervals": None
        if finding is None
        else "; ".join(t.text() for t in _decisive(finding.terms)),
        "verdict": NOT_RUN if finding is None else finding.verdict,
        "need": "; ".join(n for n in needs if n) or None,
        "figure": spec.figure,
    }


def _term_rows(spec: ClaimSpec, finding: Finding | None) -> list[dict[str, Any]]:
    return [
        {
            "claim": spec.id,
            "term": t.name,
            "point": t.estimate.point,
            "lo": t.estimate.lo,
            "hi": t.estimate.hi,
            "basis": t.estimate.basis,
            "criterion": t.criterion.text,
            "verdict": t.verdict,
            "need": t.deciding_need() or None,
        }
        for t in (() if finding is None else finding.terms)
    ]


def findings(
    specs: Iterable[ClaimSpec], tables: Tables | None, section: Mapping[str, Any] | None
) -> list[tuple[ClaimSpec, Finding | None]]:
    """Each spec with its Finding on `tables` and the study's config `section`, or None
    ("not run at this preset") where the study did not run (`tables` None)."""
    if tables is None or section is None:
        return [(spec, None) for spec in specs]
    return [(spec, spec.test({p: tables[p] for p in spec.tables}, section)) for spec in specs]


def claims_tables(
    found: Iterable[tuple[ClaimSpec, Finding | None]],
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(claims.csv, claim_terms.csv) of the evaluated claims, columns in the models' order."""
    found = list(found)
    claims = [_row(spec, finding) for spec, finding in found]
    terms = [row for spec, finding in found for row in _term_rows(spec, finding)]
    return (
        pd.DataFrame(claims, columns=list(Claims.to_schema().columns)),
        pd.DataFrame(terms, columns=list(ClaimTerms.to_schema().columns)),
    )
