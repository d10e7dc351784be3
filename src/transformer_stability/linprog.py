"""Small linear programs solved by HiGHS through its own Python bindings (highspy).

scipy's `linprog(method="highs")` runs the same solver (scipy 1.17 bundles HiGHS 1.12, the
version pinned here) with the same options, but spends about two thirds of a small LP's time
in Python, checking options and converting the problem; Study C's read-out geometry solves
tens of thousands of such LPs per run. The problem is posed as linprog poses it (rows
a_ub x <= b_ub as HiGHS rows with no lower end, the matrix column-wise without its zeros) and
solved with HiGHS's defaults for an LP (presolve, then the dual simplex: what linprog asks
for), so the answers are linprog's to the last bit (tests/test_linprog.py compares them).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import highspy
import numpy as np

if TYPE_CHECKING:  # a sparse matrix comes from scipy.sparse, which this module need not load
    import scipy.sparse

    Matrix = np.ndarray | scipy.sparse.sparray | scipy.sparse.spmatrix

_INF = highspy.kHighsInf


@dataclass(frozen=True)
class Solution:
    """An optimal vertex and its objective value."""

    x: np.ndarray
    value: float


def _columnwise(a_ub: Matrix) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(start, index, value) of a_ub column by column, its zeros left out (as scipy does)."""
    if hasattr(a_ub, "tocsc"):  # a scipy.sparse matrix or array
        matrix = a_ub.tocsc(copy=True)
        matrix.eliminate_zeros()
        matrix.sort_indices()
        return matrix.indptr, matrix.indices, matrix.data
    columns = np.asarray(a_ub).T
    col, row = np.nonzero(columns)  # column-major: each column's rows in ascending order
    start = np.searchsorted(col, np.arange(columns.shape[0] + 1))
    return start, row, columns[col, row]


def minimize(
    cost: np.ndarray,
    a_ub: Matrix,
    b_ub: np.ndarray,
    lower: np.ndarray,
    upper: np.ndarray,
) -> Solution | None:
    """min cost . x subject to a_ub x <= b_ub and lower <= x <= upper (infinite ends for free
    variables); None unless HiGHS finds it optimal (infeasible, unbounded, failed)."""
    rows, cols = a_ub.shape
    sizes = {"cost": (cost, cols), "b_ub": (b_ub, rows), "lower": (lower, cols)}
    for name, (values, size) in (sizes | {"upper": (upper, cols)}).items():
        if len(values) != size:  # HiGHS would read past a short array or ignore a long one's tail
            raise ValueError(f"{name} has {len(values)} entries for a {rows} x {cols} matrix")
    lp = highspy.HighsLp()
    lp.num_col_, lp.num_row_ = cols, rows
    lp.col_cost_, lp.row_upper_ = cost, b_ub
    lp.col_lower_, lp.col_upper_ = lower, upper  # -inf, inf: HiGHS's own infinite bounds
    lp.row_lower_ = np.full(rows, -_INF)
    lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    lp.a_matrix_.start_, lp.a_matrix_.index_, lp.a_matrix_.value_ = _columnwise(a_ub)
    solver = highspy.Highs()
    solver.setOptionValue("output_flag", False)  # HiGHS prints its log otherwise
    solver.passModel(lp)
    solver.run()
    if solver.getModelStatus() != highspy.HighsModelStatus.kOptimal:
        return None
    solution, info = solver.getSolution(), solver.getInfo()
    return Solution(np.array(solution.col_value), info.objective_function_value)
