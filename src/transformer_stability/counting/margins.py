"""The largest relative logit margin any dense head reaches on a given representation, by LP.

A classification head is affine in the representation h, so with h fixed the best head is a
linear program: maximise delta subject to logit_c(h_p) - logit_k(h_p) >= delta at every point p
(c its count, every k != c) and |logit_k(h_p)| <= 1 everywhere (the margin relative to the
largest logit, as precision.py measures it). Scaling the head changes neither side, so the norm
bound does not enter. Solved on the m = 0 line of the grid: fewer points, so the value is an
upper bound on the best head for the whole grid. Torch-free (numpy and HiGHS, linprog.py).
"""

from __future__ import annotations

import numpy as np
import scipy

from transformer_stability import linprog

RANK_TOLERANCE = 1e-10  # singular values below this x the largest: directions the points lack


def reduced_coordinates(features: np.ndarray) -> np.ndarray:
    """Coordinates of the points in the affine span they occupy, with a constant column: an
    affine head on h is an affine head on these coordinates, with (rank + 1) numbers per row
    instead of d + 1."""
    centred = features - features.mean(0)
    _, sing, vt = np.linalg.svd(centred, full_matrices=False)
    keep = sing > RANK_TOLERANCE * max(float(sing[0]), np.finfo(float).tiny)
    coords = centred @ vt[keep].T
    scale = max(float(np.abs(coords).max()), np.finfo(float).tiny) if coords.size else 1.0
    return np.hstack([coords / scale, np.ones((len(features), 1))])


def best_head_margin(features: np.ndarray, counts: np.ndarray, classes: int) -> float:
    """max delta over affine heads with `classes` rows: see the module docstring. features
    (P, d) hold one point per row, counts (P,) its class."""
    x = reduced_coordinates(np.asarray(features, float))
    points, width = x.shape
    counts = np.asarray(counts)
    delta = classes * width  # the variables: every row's coefficients, then delta

    def rows_for(k: np.ndarray) -> np.ndarray:
        return k[:, None] * width + np.arange(width)[None, :]

    p, k = np.meshgrid(np.arange(points), np.arange(classes), indexing="ij")
    p, k = p.ravel(), k.ravel()
    rival = k != counts[p]
    mp, mk = p[rival], k[rival]
    margin_rows = np.arange(len(mp))
    # logit_k - logit_c + delta <= 0
    cols = np.hstack([rows_for(mk), rows_for(counts[mp]), np.full((len(mp), 1), delta)])
    vals = np.hstack([x[mp], -x[mp], np.ones((len(mp), 1))])
    rows = np.repeat(margin_rows, cols.shape[1])
    # +-logit_k(h_p) <= 1
    bound_rows = len(mp) + np.arange(2 * len(p))
    bcols = np.tile(rows_for(k), (2, 1))
    bvals = np.vstack([x[p], -x[p]])
    matrix = scipy.sparse.csr_matrix(
        (
            np.concatenate([vals.ravel(), bvals.ravel()]),
            (
                np.concatenate([rows, np.repeat(bound_rows, width)]),
                np.concatenate([cols.ravel(), bcols.ravel()]),
            ),
        ),
        shape=(len(mp) + 2 * len(p), delta + 1),
    )
    rhs = np.concatenate([np.zeros(len(mp)), np.ones(2 * len(p))])
    objective = np.zeros(delta + 1)
    objective[delta] = -1.0
    upper = np.append(np.full(delta, np.inf), 2.0)
    found = linprog.minimize(objective, matrix, rhs, np.full(delta + 1, -np.inf), upper)
    if found is None:
        raise RuntimeError("margin LP failed: HiGHS found no optimum")
    return float(found.x[delta])
