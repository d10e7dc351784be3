"""The exact finite-N closure of uniform attention against the authors', decided by measurement.

Each initialization of finite_n.csv gets both closures' J^{b,0}, seeded with its input (q0, p0)
and its own (a, m); the ratio measured/theory is averaged over initializations, with a bootstrap
interval over them, at log-spaced blocks. A closure fits where its interval contains 1.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from transformer_stability.apjn.tables import CLOSURES, FiniteNCompare
from transformer_stability.apjn.theory import MeanField, end_to_end_log_apjn
from transformer_stability.resampling import mean_ci
from transformer_stability.tables import select


def closure_apjn(rows: pd.DataFrame, exact: bool) -> np.ndarray:
    """J^{b,0} for b = 0..L of one initialization's curve (rows of finite_n.csv, one input and
    token count) in one closure, from the rows' (a, m, q0, p0)."""
    first = rows.iloc[0]
    mf = MeanField(float(first["a"]), float(first["m"]), int(first["n_tokens"]), exact)
    depth = int(first["depth"])
    return np.exp(end_to_end_log_apjn("ln", None, mf, first["q0"], first["p0"], depth))


def compared_blocks(depth: int) -> np.ndarray:
    """Powers of two from 8 up to the depth, and the depth itself."""
    powers = 2 ** np.arange(3, int(np.log2(depth)) + 1)
    return np.unique(np.append(powers[powers <= depth], depth))


def _verdict(fits: dict[str, bool]) -> str:
    if all(fits.values()):
        return "both"
    return next((closure for closure, fit in fits.items() if fit), "neither")


def finite_n_comparison(table: pd.DataFrame, seed: int = 0) -> pd.DataFrame:
    """Per (width, N, input) and compared block: the mean measured J^{b,0}, both closures'
    (mean over initializations), and measured/theory with its bootstrap interval."""
    rows = []
    for (width, n, kind), part in table.groupby(["width", "n_tokens", "input"], sort=False):
        blocks = compared_blocks(int(part["depth"].iloc[0]))
        measured, theory = [], {closure: [] for closure in CLOSURES}
        for _, curve in part.groupby("init_seed"):
            curve = curve.sort_values("block")
            measured.append(curve["apjn"].to_numpy()[blocks])
            for closure in CLOSURES:
                theory[closure].append(closure_apjn(curve, closure == "exact")[blocks])
        measured = np.array(measured)
        out = {"width": width, "n_tokens": n, "input": kind, "block": blocks}
        out |= {"inits": len(measured), "apjn_mean": measured.mean(0)}
        for closure in CLOSURES:
            mean, lo, hi = mean_ci(measured / np.array(theory[closure]), seed)
            out |= {f"apjn_{closure}": np.mean(theory[closure], 0), f"ratio_{closure}": mean}
            out |= {f"ratio_{closure}_lo": lo, f"ratio_{closure}_hi": hi}
        frame = pd.DataFrame(out)
        fits = {c: (frame[f"ratio_{c}_lo"] <= 1) & (frame[f"ratio_{c}_hi"] >= 1) for c in CLOSURES}
        frame["verdict"] = [
            _verdict({c: bool(fits[c].iloc[i]) for c in CLOSURES}) for i in range(len(frame))
        ]
        rows.append(frame)
    return select(pd.concat(rows, ignore_index=True), FiniteNCompare)
