"""Edge-case tables: every registered figure and every aggregation function,
fed the real tables of the tiny run shrunk to one value of a swept column (one variant, one
alpha, one sample, one L, one B, one d, one seed, one precision, one model, ...), either draws
(a Figure that an Agg canvas draws, a DataFrame) or refuses with a ValueError raised by this
package's own code, whose message says what is missing.

Two sets of shrinkings: enumerated ones (for each swept column, the first value present in
every table of the call, then all columns at once at their first and at their last value), and
`hypothesis` ones, which
keep an arbitrary value of several columns in turn (derandomized, so CI sees the same examples
on every run; a failure is shrunk to the fewest columns that break)."""

from __future__ import annotations

import functools
import traceback
import warnings
from collections.abc import Callable, Mapping
from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

import transformer_stability
from transformer_stability.apjn.agreement import agreement
from transformer_stability.counting.derived_tables import (
    empirical_bmin,
    exponent_table,
    rates_table,
    reference_slopes,
    success_table,
)
from transformer_stability.io import read_table
from transformer_stability.registry import FIGURES, table_model
from transformer_stability.sweeps import ITEM_COLUMN, gather_items

PACKAGE = Path(transformer_stability.__file__).parent
NAN = "<NaN>"  # stands for a missing value (pre-LN's alpha) among a column's values
# columns a config sweeps ("variant" is one norm and one alpha together)
SWEPT = (
    "variant",
    "norm",
    "alpha",
    "sample",
    "input",
    "depth",
    "width",
    "attn_mult",
    "mlp_mult",
    "placement",
    "readout",
    "d",
    "L",
    "B",
    "seed",
    "train_seed",
    "precision",
    "model",
    "checkpoint",
    "seq_len",
    "mantissa_bits",
    "outlier",
    "p_max",
    "offset",
)
Tables = dict[str, pd.DataFrame]


def _values(table: pd.DataFrame, column: str) -> set:
    return set(table[column].dropna().unique()) | ({NAN} if table[column].isna().any() else set())


def _keep(table: pd.DataFrame, column: str, value: object) -> pd.DataFrame:
    rows = table[column].isna() if value == NAN else table[column] == value
    return table[rows].reset_index(drop=True)


def _order(value: object) -> tuple:
    return (value == NAN, isinstance(value, str), value if value != NAN else 0)


def shrink(tables: Mapping[str, pd.DataFrame], column: str, pick: int) -> Tables | None:
    """The tables with only one value of `column` common to every table that has it (the
    pick-th in sorted order, modulo their number: 0 the first, -1 the last); None when no table
    has it, none is common, or a table would be empty (read_table refuses an empty table, so no
    figure sees one)."""
    if column == "variant":
        one_norm = shrink(tables, "norm", pick)
        return None if one_norm is None else (shrink(one_norm, "alpha", pick) or one_norm)
    having = [t for t in tables.values() if column in t.columns]
    if not having:
        return None
    common = set.intersection(*(_values(t, column) for t in having))
    if not common:
        return None
    values = sorted(common, key=_order)
    value = values[pick % len(values)]
    out = {k: _keep(t, column, value) if column in t.columns else t for k, t in tables.items()}
    return None if any(t.empty for t in out.values()) else out


def _fingerprint(tables: Mapping[str, pd.DataFrame]) -> tuple:
    """Equal for equal tables (content and row order), as plotted."""
    return tuple(
        (key, tuple(table.columns), tuple(pd.util.hash_pandas_object(table, index=False)))
        for key, table in sorted(tables.items())
    )


def shrinkings(tables: Mapping[str, pd.DataFrame]) -> list[tuple[str, Tables]]:
    """(description, tables) for the first value of each swept column, and for all columns at
    once at their first and at their last value (other single values are the `hypothesis`
    test's); a cut that leaves the same tables as an earlier one (a column with one value) is
    listed once, since a plot of the same tables has the same outcome."""
    cases, seen = [], set()
    for pick, name in ((0, "first"), (-1, "last")):
        everything = dict(tables)
        candidates = []
        for column in SWEPT:
            shrunk = shrink(tables, column, pick) if pick == 0 else None
            if shrunk is not None:
                candidates.append((f"{column}={name}", shrunk))
            shrunk_all = shrink(everything, column, pick)
            everything = shrunk_all if shrunk_all is not None else everything
        candidates.append((f"all={name}", everything))
        for case, shrunk in candidates:
            if (key := _fingerprint(shrunk)) not in seen:
                seen.add(key)
                cases.append((case, shrunk))
    return cases


def outcome(call: Callable[[], object]) -> str | None:
    """None when `call` draws (or aggregates) or refuses cleanly; otherwise what went wrong."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = call()
            if isinstance(result, Figure):
                # every artist drawn (ticks, text, legends) on an Agg canvas, at a resolution
                # too low to cost much; without the layout engine, which only moves axes (a
                # third of this file's CPU time): the tiny run's figure jobs lay out the real
                # tables
                result.set_layout_engine("none")
                result.set_dpi(20)
                FigureCanvasAgg(result).draw()
                plt.close(result)
    except ValueError as error:
        plt.close("all")
        frame = traceback.extract_tb(error.__traceback__)[-1]
        if not Path(frame.filename).is_relative_to(PACKAGE):
            return f"ValueError from {Path(frame.filename).name}:{frame.lineno}: {error}"
        if not str(error).strip():
            return "ValueError without a message"
    except Exception as error:  # noqa: BLE001 -- any other exception is the failure reported
        plt.close("all")
        frame = traceback.extract_tb(error.__traceback__)[-1]
        where = f"{Path(frame.filename).name}:{frame.lineno}"
        return f"{type(error).__name__} at {where}: {error}"
    else:
        if not isinstance(result, (Figure, pd.DataFrame)):
            return f"returned {type(result).__name__}"
    return None


@pytest.fixture(scope="module")
def results(tiny_run) -> Path:
    assert tiny_run.result.returncode == 0, tiny_run.result.stderr[-3000:]
    return tiny_run.workdir / "results"


@functools.cache
def _read_one(path: Path) -> pd.DataFrame:
    return read_table(path, table_model(path))


def _read(results: Path, paths: Mapping[str, str]) -> Tables:
    """The tables, each read and checked once per session (copies: a plot may modify them)."""
    return {k: _read_one(results / Path(p).relative_to("results")).copy() for k, p in paths.items()}


def _check(cases: list[tuple[str, Tables]], call: Callable[[Tables], object]) -> None:
    failures = [
        f"{case}: {problem}"
        for case, tables in cases
        if (problem := outcome(lambda tables=tables: call(tables))) is not None
    ]
    assert not failures, "\n".join(failures)


# (figure, tables) that drew or refused cleanly in this session: a plot of the same tables has
# the same outcome, so the arbitrary shrinkings skip the ones the edge tables already covered
_FIGURE_PASSED: set[tuple[str, tuple]] = set()


def _check_figure(name: str, cases: list[tuple[str, Tables]]) -> None:
    figure = FIGURES[name]
    keyed = [((name, _fingerprint(tables)), (case, tables)) for case, tables in cases]
    fresh = {key: case for key, case in keyed if key not in _FIGURE_PASSED}
    _check(list(fresh.values()), lambda tables: figure.plot(**tables))
    _FIGURE_PASSED.update(fresh)


@pytest.mark.slow
@pytest.mark.parametrize("name", list(FIGURES))
def test_figure_draws_or_refuses_edge_tables(results, name):
    cases = shrinkings(_read(results, FIGURES[name].inputs))
    assert cases
    _check_figure(name, cases)


# several swept columns, each cut to one arbitrary value, in turn
SHRINKINGS = st.lists(st.tuples(st.sampled_from(SWEPT), st.integers(0, 63)), min_size=1, max_size=5)


def shrink_all(tables: Tables, steps: list[tuple[str, int]]) -> Tables:
    """`tables` cut by each (column, pick) of steps in turn; a cut that would leave no value or
    an empty table is skipped."""
    for column, pick in steps:
        tables = shrink(tables, column, pick) or tables
    return tables


@pytest.mark.slow
@pytest.mark.parametrize("name", list(FIGURES))
@settings(
    max_examples=4,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(steps=SHRINKINGS)
def test_figure_draws_or_refuses_arbitrary_shrinkings(results, name, steps):
    tables = shrink_all(_read(results, FIGURES[name].inputs), steps)
    _check_figure(name, [(repr(steps), tables)])


@pytest.mark.slow
def test_agreement_edge_tables(results):
    cases = shrinkings(_read(results, {"curves": "results/apjn/measured_curves.csv"}))
    _check(cases, lambda t: agreement(t["curves"]))


@pytest.mark.slow
def test_counting_rates_edge_tables(results):
    paths = {
        "training": "results/counting/training.csv",
        "theory": "results/counting/bmin_theory.csv",
        "rates": "results/counting/rates.csv",
        "walls": "results/counting/walls.csv",
        "precision": "results/counting/precision.csv",
    }
    cases = shrinkings(_read(results, paths))
    _check(cases, lambda t: empirical_bmin(t["training"], success_table(t["training"])))
    _check(cases, lambda t: reference_slopes(t["theory"]))
    _check(cases, lambda t: exponent_table(t["rates"], t["walls"]))
    for fit_points in (2, 3):
        _check(
            cases,
            lambda t, k=fit_points: rates_table(
                t["theory"],
                empirical_bmin(t["training"], success_table(t["training"])),
                success_table(t["training"]),
                t["precision"],
                k,
            ),
        )


@pytest.mark.slow
def test_gather_items_edge_chunks(results):
    chunks = sorted((results / "apjn" / "items" / "measured_curves").glob("*.csv"))
    assert chunks
    one = read_table(chunks[0])
    order = list(dict.fromkeys(one[ITEM_COLUMN]))
    assert outcome(lambda: gather_items([one], order)) is None
    assert outcome(lambda: gather_items([one.iloc[:1]], order[:1])) is None
    with pytest.raises(ValueError, match="missing"):
        gather_items([one.iloc[:1]], order)
