"""A.2's few-token check: with identical tokens attention is exactly uniform, so the measured
J^{b,0} of deep pre-LN models at few tokens N tests the closures themselves (finite_n.csv)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from transformer_stability.apjn.claims._common import _g
from transformer_stability.apjn.closures import closure_apjn, compared_blocks
from transformer_stability.apjn.tables import CLOSURES
from transformer_stability.resampling import grid_means


def closure_ratios(finite_n: pd.DataFrame) -> pd.DataFrame:
    """Measured/theory J^{b,0} per initialization, token count, closure and compared block, of
    the identical-token rows of finite_n.csv (each initialization against the closure seeded
    by its own a, m, q0, p0, as in finite_n_compare.csv)."""
    frames = []
    identical = finite_n[finite_n["input"] == "identical"]
    for (n, init), curve in identical.groupby(["n_tokens", "init_seed"], sort=True):
        curve = curve.sort_values("block")
        blocks = compared_blocks(int(curve["depth"].iloc[0]))
        measured = curve["apjn"].to_numpy()[blocks]
        for closure in CLOSURES:
            ratio = measured / closure_apjn(curve, closure == "exact")[blocks]
            ids = {"n_tokens": n, "init_seed": init, "closure": closure}
            frames.append(pd.DataFrame({**ids, "block": blocks, "ratio": ratio}))
    return pd.concat(frames, ignore_index=True)


def closure_fold_error(ratios: pd.DataFrame) -> pd.Series:
    """Per token count: the largest fold error exp|ln r| over the compared blocks of the mean
    measured/theory r, in the closure where it is smaller (either closure may fit)."""
    (counts, _, _), means = grid_means(ratios, ["n_tokens", "closure", "block"], ["ratio"])
    worst = np.nanmax(np.abs(np.log(means["ratio"])), axis=2)
    return pd.Series(np.exp(worst.min(axis=1)), counts)


CLOSURE_NAMES = {"exact": "exact", "released": "authors'"}


def _fitting_closures(group: pd.DataFrame) -> list[str]:
    """The closures whose measured/theory interval covers 1 at every compared block."""
    return [
        CLOSURE_NAMES[c]
        for c in CLOSURES
        if ((group[f"ratio_{c}_lo"] <= 1) & (group[f"ratio_{c}_hi"] >= 1)).all()
    ]


def _ratio_text(row: pd.Series, closure: str) -> str:
    lo, hi = row[f"ratio_{closure}_lo"], row[f"ratio_{closure}_hi"]
    return f"{CLOSURE_NAMES[closure]} {_g(row[f'ratio_{closure}'])} [{_g(lo)}, {_g(hi)}]"


def finite_n_text(compare: pd.DataFrame) -> str:
    """Per token count N and input of finite_n_compare.csv: measured/theory at the deepest
    compared block for both closures (mean, bootstrap interval) and the closures whose interval
    covers 1 at every compared block (context)."""
    texts = []
    for (n, kind), group in compare.groupby(["n_tokens", "input"], sort=True):
        deepest = group.loc[group["block"].idxmax()]
        fitting = " and ".join(_fitting_closures(group)) or "neither"
        ratios = ", ".join(_ratio_text(deepest, c) for c in CLOSURES)
        texts.append(
            f"N = {n} {kind}, L = {int(deepest['block'])}: {ratios}; covers 1 at every "
            f"block: {fitting}"
        )
    return "; ".join(texts)
