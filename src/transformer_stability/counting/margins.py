"""Dense heads on a fixed representation, by LP: the largest relative logit margin any head
reaches (`best_head_margin`), and a head that separates the counts (`separating_head`).

A classification head is affine in the representation h, so with h fixed the best head is a
linear program: maximise delta subject to logit_c(h_p) - logit_k(h_p) >= delta at every point p
(c its count, every k != c) and a normalisation. `best_head_margin` bounds |logit_k(h_p)| <= 1
everywhere (the margin relative to the largest logit, as precision.py measures it); scaling the
head changes neither side, so the norm bound does not enter. It is solved on the m = 0 line of
the grid: fewer points, so the value is an upper bound on the best head for the whole grid.
`separating_head` takes every point of the grid and bounds the head's coefficients instead, so
that its LP has rows for margins only, and few of them (cutting planes). Torch-free (numpy and
HiGHS, linprog.py).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy

from transformer_stability import linprog

RANK_TOLERANCE = 1e-10  # singular values below this x the largest: directions the points lack
HEAD_ROUNDS = 8  # cutting-plane rounds of separating_head at most
ADDED = 8192  # (point, rival) pairs a round adds at most, the shortest margins first
FEASIBILITY = 1e-7  # HiGHS's primal feasibility tolerance: what an LP row may miss by


@dataclass(frozen=True)
class AffineFrame:
    """The affine span the points occupy: h -> (h - mean) @ basis.T, each coordinate scaled to
    at most 1 in magnitude on the points (an LP on coordinates of one size is well conditioned:
    a trained representation's directions differ in spread by 1e3 and more)."""

    mean: np.ndarray  # (d,)
    basis: np.ndarray  # (rank, d)

    @classmethod
    def of(cls, features: np.ndarray) -> AffineFrame:
        mean = features.mean(0)
        _, sing, vt = np.linalg.svd(features - mean, full_matrices=False)
        keep = sing > RANK_TOLERANCE * max(float(sing[0]), np.finfo(float).tiny)
        spread = np.abs((features - mean) @ vt[keep].T).max(0)
        return cls(mean, vt[keep] / np.maximum(spread, np.finfo(float).tiny)[:, None])

    def coordinates(self, features: np.ndarray) -> np.ndarray:
        """(P, rank + 1): the points' coordinates and a constant column: an affine head on h is
        an affine head on these, with (rank + 1) numbers per row instead of d + 1."""
        coords = (features - self.mean) @ self.basis.T
        return np.hstack([coords, np.ones((len(features), 1))])

    def head(self, coefficients: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(weights (K, d), biases (K,)) of the head whose logits on h are the rows of
        `coefficients` (K, rank + 1) applied to h's coordinates."""
        weights = coefficients[:, :-1] @ self.basis
        return weights, coefficients[:, -1] - weights @ self.mean


def reduced_coordinates(features: np.ndarray) -> np.ndarray:
    """The points' coordinates in their affine frame, with a constant column."""
    return AffineFrame.of(features).coordinates(features)


def best_head_margin(features: np.ndarray, counts: np.ndarray, classes: int) -> float:
    """max delta over affine heads with `classes` rows: see the module docstring. features
    (P, d) hold one point per row, counts (P,) its class."""
    x = reduced_coordinates(np.asarray(features, float))
    points, width = x.shape
    counts = np.asarray(counts)
    delta = classes * width  # the variables: every row's coefficients, then delta
    p, k = np.meshgrid(np.arange(points), np.arange(classes), indexing="ij")
    p, k = p.ravel(), k.ravel()
    rival = k != counts[p]
    margins = _margin_rows(x, counts, p[rival], k[rival], classes)
    # +-logit_k(h_p) <= 1
    bound_rows = np.repeat(np.arange(2 * len(p)), width)
    bcols = np.tile(_coefficients(k, width), (2, 1))
    bvals = np.vstack([x[p], -x[p]])
    bounds = scipy.sparse.csr_matrix(
        (bvals.ravel(), (bound_rows, bcols.ravel())), shape=(2 * len(p), delta + 1)
    )
    rhs = np.concatenate([np.zeros(margins.shape[0]), np.ones(2 * len(p))])
    upper = np.append(np.full(delta, np.inf), 2.0)
    found = _maximise_delta(scipy.sparse.vstack([margins, bounds]), rhs, -np.inf, upper)
    return float(found[delta])


def separating_head(
    features: np.ndarray, counts: np.ndarray, classes: int
) -> tuple[np.ndarray, np.ndarray, float]:
    """(weights (K, d), biases (K,), delta): the affine head of largest smallest margin
    logit_c - logit_k over every point and rival, among heads whose coefficients in the points'
    affine frame lie in [-1, 1]; delta > 0 iff some head counts every point exactly.

    By cutting planes: the LP first holds the margins to the neighbouring counts c +- 1 only
    (where a count's rival lies on a representation ordered by count), then every (point, rival)
    whose margin falls below the LP's delta joins it, until none does; the last LP's head is
    then optimal for all of them. A bounded number of rounds (each adds the worst ADDED pairs)."""
    features = np.asarray(features, float)
    frame = AffineFrame.of(features)
    x = frame.coordinates(features)
    counts = np.asarray(counts)
    points = np.arange(len(x))
    rivals = np.r_[counts - 1, counts + 1]
    pairs = np.unique(
        np.c_[np.r_[points, points], rivals][(rivals >= 0) & (rivals < classes)], axis=0
    )
    width = x.shape[1]
    upper = np.append(np.ones(classes * width), np.inf)
    for _ in range(HEAD_ROUNDS):
        rows = _margin_rows(x, counts, pairs[:, 0], pairs[:, 1], classes)
        found = _maximise_delta(rows, np.zeros(len(pairs)), -1.0, upper)
        coefficients, delta = found[:-1].reshape(classes, width), found[-1]
        short = _short_pairs(x @ coefficients.T, counts, delta, pairs)
        if not len(short):
            break
        pairs = np.concatenate([pairs, short[:ADDED]])
    return *frame.head(coefficients), float(delta)


def _short_pairs(logits: np.ndarray, counts: np.ndarray, delta: float, known: np.ndarray):
    """The (point, rival) pairs not in `known` whose margin lies below delta (less HiGHS's
    feasibility tolerance), shortest first."""
    points = np.arange(len(logits))
    margins = logits[points, counts][:, None] - logits
    margins[points, counts] = np.inf
    p, k = np.nonzero(margins < delta - FEASIBILITY)
    fresh = ~np.isin(p * logits.shape[1] + k, known[:, 0] * logits.shape[1] + known[:, 1])
    p, k = p[fresh], k[fresh]
    order = np.argsort(margins[p, k], kind="stable")
    return np.c_[p[order], k[order]]


def _coefficients(k: np.ndarray, width: int) -> np.ndarray:
    """The variable indices of the coefficient rows of classes k, (len(k), width)."""
    return k[:, None] * width + np.arange(width)[None, :]


def _margin_rows(
    x: np.ndarray, counts: np.ndarray, p: np.ndarray, k: np.ndarray, classes: int
) -> scipy.sparse.csr_matrix:
    """logit_k(x_p) - logit_{c_p}(x_p) + delta <= 0 for each pair (p, k), as rows over the
    variables (every class's coefficients, then delta)."""
    width = x.shape[1]
    delta = classes * width
    cols = np.hstack(
        [_coefficients(k, width), _coefficients(counts[p], width), np.full((len(p), 1), delta)]
    )
    vals = np.hstack([x[p], -x[p], np.ones((len(p), 1))])
    return scipy.sparse.csr_matrix(
        (vals.ravel(), (np.repeat(np.arange(len(p)), cols.shape[1]), cols.ravel())),
        shape=(len(p), delta + 1),
    )


def _maximise_delta(matrix, rhs: np.ndarray, lower: float, upper: np.ndarray) -> np.ndarray:
    """The LP's optimal vertex, maximising the last variable (delta); coefficients bounded
    below by `lower` (-inf: free), every variable above by `upper`."""
    objective = np.zeros(matrix.shape[1])
    objective[-1] = -1.0
    below = np.append(np.full(matrix.shape[1] - 1, lower), -np.inf)
    found = linprog.minimize(objective, matrix, rhs, below, upper)
    if found is None:
        raise RuntimeError("margin LP failed: HiGHS found no optimum")
    return found.x
